import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import SharedURLCache
import Testing

@Suite("Capacities", .timeLimit(.minutes(5)))
struct CapacityTests {
    @Test func zeroMemoryCapacityKeepsNothingInMemory() throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache(memory: 0)
        cache.put("https://api.example.com/a", "disk only")
        cache.put("https://api.example.com/m", "memory only", policy: .allowedInMemoryOnly)

        #expect(cache.currentMemoryUsage == 0)
        #expect(cache.get("https://api.example.com/a") == "disk only")
        #expect(cache.get("https://api.example.com/a") == "disk only")
        #expect(cache.get("https://api.example.com/m") == nil)
        #expect(cache.statistics.memoryHits == 0)
        #expect(cache.statistics.hits == 2)
    }

    @Test func zeroDiskCapacityStoresNothingOnDisk() throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache(disk: 0)
        cache.put("https://api.example.com/a", "memory")

        #expect(cache.statistics.diskEntries == 0)
        #expect(cache.currentDiskUsage == 0)
        let hit = try #require(cache.cachedResponse(for: request("https://api.example.com/a")))
        #expect(hit.storagePolicy == .allowedInMemoryOnly)
        #expect(try directory.makeCache().get("https://api.example.com/a") == nil)
        #expect(cache.statistics.refusals == 0)  // a configuration, not a refusal
    }

    @Test func bothCapacitiesZeroStoreNothing() throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache(memory: 0, disk: 0)
        cache.put("https://api.example.com/a", "nowhere")
        #expect(cache.get("https://api.example.com/a") == nil)
        #expect(cache.statistics.stores == 0)
        #expect(cache.statistics.diskEntries == 0)
    }

    @Test func loweringMemoryCapacityEvictsLeastRecentlyUsedFirst() throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache(memory: 1 << 20)
        let body = String(repeating: "x", count: 10_000)
        for n in 0..<10 { cache.put("https://api.example.com/\(n)", body) }
        _ = cache.get("https://api.example.com/0")  // 0 becomes the most recent
        #expect(cache.statistics.memoryEntries == 10)

        cache.memoryCapacity = 25_000

        #expect(cache.memoryCapacity == 25_000)
        #expect(cache.currentMemoryUsage <= 25_000)
        #expect(cache.statistics.memoryEntries == 2)
        #expect(cache.statistics.evictions == 8)
        let before = cache.statistics.memoryHits
        #expect(cache.get("https://api.example.com/0") == body)  // kept: most recent
        #expect(cache.get("https://api.example.com/9") == body)  // kept: second most recent
        #expect(cache.statistics.memoryHits == before + 2)
        #expect(cache.get("https://api.example.com/1") == body)  // evicted from memory, still on disk
        #expect(cache.statistics.memoryHits == before + 2)

        cache.memoryCapacity = 0
        #expect(cache.currentMemoryUsage == 0)
        #expect(cache.statistics.memoryEntries == 0)
        cache.put("https://api.example.com/new", body)
        #expect(cache.currentMemoryUsage == 0)

        cache.memoryCapacity = 1 << 20
        cache.put("https://api.example.com/new", body)
        #expect(cache.currentMemoryUsage > 10_000)
    }

    @Test func entryLargerThanMemoryCapacityGoesToDiskOnly() throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache(memory: 4096)
        cache.put("https://api.example.com/big", String(repeating: "b", count: 10_000))
        #expect(cache.currentMemoryUsage == 0)
        #expect(cache.get("https://api.example.com/big") != nil)
        #expect(cache.statistics.stores == 1)
    }

    @Test func diskCapacityRefusesStoresBeyondIt() throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache()
        cache.put("https://api.example.com/first", "first")
        let usage = cache.currentDiskUsage

        cache.diskCapacity = usage + 10
        #expect(cache.diskCapacity == usage + 10)
        cache.put("https://api.example.com/second", String(repeating: "s", count: 1000))

        #expect(cache.statistics.refusals == 1)
        #expect(try directory.makeCache().get("https://api.example.com/second") == nil)
        // Still served from this process's memory.
        #expect(cache.get("https://api.example.com/second") != nil)

        cache.diskCapacity = 64 << 20
        cache.put("https://api.example.com/third", "third")
        #expect(try directory.makeCache().get("https://api.example.com/third") == "third")

        cache.diskCapacity = 0
        cache.put("https://api.example.com/fourth", "fourth")
        #expect(try directory.makeCache().get("https://api.example.com/fourth") == nil)
        #expect(cache.statistics.refusals == 1)
    }
}
