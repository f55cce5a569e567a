import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import SharedURLCache
import SharedURLCacheStore
import Testing
import TestProcess

/// docs/Reliability.md §3.8 through the URLCache-shaped API: a SharedCache whose disk capacity is
/// far larger than the small file system it lives on (a 16 MiB tmpfs that other data mostly fills)
/// keeps storing: each store that meets a full file system evicts the least recently used
/// entries and tries again, so the newest response is always there.
@Suite(.blockingWaits, .serialized, .timeLimit(.minutes(2)))
struct FullFileSystemTests {
    @Test(
        "a SharedCache on a full 16 MiB tmpfs keeps storing: every new response is a hit right after, under either eviction policy (S3-FIFO's ghost file included)",
        arguments: EvictionPolicy.allCases)
    func storesGoOnWhenTheFileSystemIsFull(policy: EvictionPolicy) throws {
        // Other data takes most of the file system, as it does on a shared disk.
        guard let fileSystem = try SmallFileSystem.mount(megabytes: 16, filledMegabytes: 11) else { return }
        defer { withExtendedLifetime(fileSystem) {} } // mounted until the test ends
        let mount = fileSystem.path
        // The policy chosen by a handle of its own, closed before the cache opens the directory.
        try CacheStore(directory: mount + "/cache").setEvictionPolicy(policy)
        let cache = try SharedCache(
            configuration: SharedCacheConfiguration(
                memoryCapacity: 0, diskCapacity: 1 << 30, directory: URL(fileURLWithPath: mount + "/cache")))
        var misses: [Int] = []
        for i in 0..<100 {
            let url = "https://api.example.com/large/\(i)"
            let body = randomData(size: 256 << 10, seed: UInt64(i))
            let http = HTTPURLResponse(
                url: URL(string: url)!, statusCode: 200, httpVersion: "HTTP/1.1",
                headerFields: ["Cache-Control": "max-age=600"])!
            cache.storeCachedResponse(CachedURLResponse(response: http, data: body), for: request(url))
            let same = cache.cachedResponse(for: request(url))?.data == body
            if !same { misses.append(i) }
        }
        #expect(misses.isEmpty, "responses not stored on the full file system: \(misses)")
        #expect(cache.statistics.directoryEvictions > 0, "25 MiB of responses never filled the 5 MiB left?")
        print(
            "full tmpfs (\(policy)): 100 stores of 256 KiB, evictions=\(cache.statistics.directoryEvictions) notStored=\(misses.count)"
        )
    }
}
