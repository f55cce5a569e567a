import Foundation
import SharedURLCacheStore
import Testing
import TestProcess

/// `urlcache` with no directory works on the library's default directory
/// (`CacheStore.defaultDirectory`), so `urlcache compact` trims what `SharedCache.shared` fills.
@Suite(.blockingWaits, .timeLimit(.minutes(3)))
struct DefaultDirectoryTests {
    @Test("urlcache with no directory argument opens CacheStore.defaultDirectory")
    func commandLineUsesTheLibrarysDefault() throws {
        let dir = TestDirectory()
        let environment = ["XDG_CACHE_HOME": dir.root, "HOME": dir.root + "/home"]
        let expected = CacheStore.defaultDirectory(environment: environment)
        do {
            let store = try CacheStore(directory: expected)
            for i in 0..<3 { try store.store(RecordDescriptor(key: bytes("k\(i)")), body: bytes("v\(i)")) }
        }
        let urlcache = builtExecutable("urlcache")
        try #require(
            FileManager.default.isExecutableFile(atPath: urlcache.path),
            "build urlcache first (swift build --build-tests builds it)")

        let result = try ChildProcess(
            program: "/usr/bin/env", environment.map { "\($0.key)=\($0.value)" } + [urlcache.path, "stats", "--json"]
        )
        .finish()

        #expect(result.status == 0, "\(result.err)")
        let json = try JSONSerialization.jsonObject(with: Data(result.out.utf8)) as? [String: Any]
        #expect(json?["entries"] as? Int == 3, "\(result.out)")
    }
}
