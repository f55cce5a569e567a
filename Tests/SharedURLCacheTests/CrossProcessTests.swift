import CacheEntryFormat
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import SharedURLCache
import SharedURLCacheStore
import Testing
import TestProcess

/// A second real process (the `CacheWorker` executable, `api-*` commands) on the same
/// directory. It works on the raw store with the keys, variants and heads this process's API
/// computes, so what it sees and does is exactly what another process's `SharedCache` would.
@Suite("Across processes", .blockingWaits, .serialized, .timeLimit(.minutes(5)))
struct CrossProcessTests {
    @Test(arguments: [
        (URLCache.StoragePolicy.allowed, true),
        (.allowedInMemoryOnly, false),
        (.notAllowed, false),
    ])
    func storagePolicySeenFromAnotherProcess(policy: URLCache.StoragePolicy, visible: Bool) throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache()
        let url = "https://api.example.com/policy?p=1"
        cache.put(url, "stored by A", policy: policy)

        let seen = try Worker.run(["api-get", directory.cache.path, Worker.hex(cache.storeKey(url)), "-"])

        if visible {
            #expect(seen.status == 0, "\(seen.error)")
            #expect(seen.output.hasSuffix(" \(RecordKind.response.rawValue) stored by A"), "\(seen.output)")
        } else {
            #expect(seen.status == 4, "\(seen.output) \(seen.error)")
        }
    }

    @Test func removalByAnotherProcessIsSeenThroughTheMemoryTier() throws {
        // Given: A holds the entry in memory
        let directory = TestDirectory()
        let cache = try directory.makeCache()
        let url = "https://api.example.com/coherent"
        cache.put(url, "v1")
        #expect(cache.get(url) == "v1")
        #expect(cache.statistics.memoryHits == 1)

        // When: B removes it
        let removed = try Worker.run(["api-remove", directory.cache.path, Worker.hex(cache.storeKey(url))])
        #expect(removed.status == 0, "\(removed.error)")
        #expect(removed.output == "REMOVED 1")

        // Then: A's next lookup misses and its memory copy is gone
        #expect(cache.get(url) == nil)
        #expect(cache.statistics.memoryHits == 1)
        #expect(cache.statistics.memoryEntries == 0)
    }

    @Test func replacementByAnotherProcessIsSeenThroughTheMemoryTier() throws {
        // Given: A holds v1 in memory
        let directory = TestDirectory()
        let cache = try directory.makeCache()
        let url = "https://api.example.com/replaced"
        cache.put(url, "v1")
        #expect(cache.get(url) == "v1")
        let store = try #require(cache.engine.store)
        let head = try #require(try store.record(for: cache.storeKey(url))).head

        // When: B stores v2 under the same key
        let stored = try Worker.run([
            "api-put", directory.cache.path, Worker.hex(cache.storeKey(url)), "-", Worker.hex(head),
            "\(RecordKind.response.rawValue)", "v2 from B",
        ])
        #expect(stored.status == 0, "\(stored.error)")

        // Then: A serves v2, then from memory again
        #expect(cache.get(url) == "v2 from B")
        let memoryHits = cache.statistics.memoryHits
        #expect(cache.get(url) == "v2 from B")
        #expect(cache.statistics.memoryHits == memoryHits + 1)
    }

    @Test func removalOfAVariantByAnotherProcessIsSeen() throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache()
        let url = "https://api.example.com/variants"
        let vary = ["Vary": "Accept-Language"]
        cache.put(url, "en", responseHeaders: vary, requestHeaders: ["Accept-Language": "en"])
        cache.put(url, "fr", responseHeaders: vary, requestHeaders: ["Accept-Language": "fr"])
        #expect(cache.get(url, headers: ["Accept-Language": "fr"]) == "fr")

        let removed = try Worker.run(["api-remove", directory.cache.path, Worker.hex(cache.storeKey(url))])
        #expect(removed.output == "REMOVED 3")

        #expect(cache.get(url, headers: ["Accept-Language": "fr"]) == nil)
        #expect(cache.get(url, headers: ["Accept-Language": "en"]) == nil)
    }

    @Test func inMemoryOnlyEntryIsNotValidatedAgainstTheDirectory() throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache()
        let url = "https://api.example.com/local"
        cache.put(url, "local", policy: .allowedInMemoryOnly)

        let removed = try Worker.run(["api-remove", directory.cache.path, Worker.hex(cache.storeKey(url))])
        #expect(removed.output == "REMOVED 0")
        #expect(cache.get(url) == "local")
    }

    // MARK: A store the disk refused (memoryCapacity 8 MiB, diskCapacity 1 MiB)

    /// A stores v1 of its URL, then a 1.5 MiB v2 that the disk refuses as larger than its
    /// capacity. Returns A, the URL and v1's stored head (for B to store a newer response with).
    func refusedStore(_ directory: TestDirectory) throws -> (cache: SharedCache, url: String, head: [UInt8]) {
        let cache = try directory.makeCache(memory: 8 << 20, disk: 1 << 20)
        let url = "https://api.example.com/refused"
        cache.put(url, "v1")
        #expect(cache.get(url) == "v1")
        let head = try #require(try cache.engine.store?.record(for: cache.storeKey(url))).head
        cache.put(url, data: randomData(size: 3 << 19, seed: 2))
        #expect(cache.statistics.refusals == 1)
        return (cache, url, head)
    }

    @Test func afterARefusedStoreARemovalByAnotherProcessIsSeen() throws {
        let directory = TestDirectory()
        let (cache, url, _) = try refusedStore(directory)

        let removed = try Worker.run(["api-remove", directory.cache.path, Worker.hex(cache.storeKey(url))])
        #expect(removed.status == 0, "\(removed.error)")

        #expect(cache.getData(url) == nil)
    }

    @Test func afterARefusedStoreANewerStoreByAnotherProcessIsServed() throws {
        let directory = TestDirectory()
        let (cache, url, head) = try refusedStore(directory)

        let stored = try Worker.run([
            "api-put", directory.cache.path, Worker.hex(cache.storeKey(url)), "-", Worker.hex(head),
            "\(RecordKind.response.rawValue)", "v3 from B",
        ])
        #expect(stored.status == 0, "\(stored.error)")

        #expect(cache.getData(url) == Data("v3 from B".utf8))
    }

    @Test func afterARefusedStoreRemoveAllByAnotherProcessIsSeen() throws {
        let directory = TestDirectory()
        let (cache, url, _) = try refusedStore(directory)
        cache.put("https://api.example.com/other", "other")

        let removed = try Worker.run(["api-remove-all", directory.cache.path])
        #expect(removed.status == 0, "\(removed.error)")
        #expect(removed.output == "REMOVED 1")

        #expect(cache.getData(url) == nil)
        #expect(cache.get("https://api.example.com/other") == nil)
    }

    @Test func aRefusedResponseIsNotKeptAndTheOlderOneDoesNotComeBack() throws {
        let directory = TestDirectory()
        let (cache, url, _) = try refusedStore(directory)
        let key = Worker.hex(cache.storeKey(url))

        // Not kept in A's memory, and B sees no older response either.
        #expect(cache.getData(url) == nil)
        #expect(try Worker.run(["api-get", directory.cache.path, key, "-"]).status == 4)

        // Once A's memory has been emptied, nothing older comes back from disk.
        cache.memoryCapacity = 0
        cache.memoryCapacity = 8 << 20
        #expect(cache.getData(url) == nil)
        #expect(try Worker.run(["api-get", directory.cache.path, key, "-"]).status == 4)
    }

    @Test func aStoreRefusedForAnotherReasonAlsoLeavesNoOlderResponse() throws {
        // Given: a directory whose bodies are limited to 64 KiB (the core refuses with .tooLarge,
        // before any commit), and v1 stored by A
        let directory = TestDirectory()
        var configuration = SharedCacheConfiguration(
            memoryCapacity: 8 << 20, diskCapacity: 1 << 20, directory: directory.cache)
        configuration.store.maximumBodyBytes = 64 << 10
        let cache = try SharedCache(configuration: configuration)
        let url = "https://api.example.com/too-large"
        cache.put(url, "v1")
        let key = Worker.hex(cache.storeKey(url))
        #expect(try Worker.run(["api-get", directory.cache.path, key, "-"]).status == 0)

        // When: A's v2 is refused by the store
        cache.put(url, data: randomData(size: 100_000, seed: 3))
        #expect(cache.statistics.refusals == 1)

        // Then: neither A nor B gets v1 or v2
        #expect(cache.getData(url) == nil)
        #expect(try Worker.run(["api-get", directory.cache.path, key, "-"]).status == 4)
    }
}
