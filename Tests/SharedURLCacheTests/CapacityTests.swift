import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import SharedURLCache
import Testing
import TestProcess

@Suite("Capacities", .blockingWaits, .timeLimit(.minutes(5)))
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
        #expect(cache.statistics.diskEntryBytes == 0)
        let hit = try #require(cache.cachedResponse(for: request("https://api.example.com/a")))
        #expect(hit.storagePolicy == .allowedInMemoryOnly)
        #expect(try directory.makeCache().get("https://api.example.com/a") == nil)
        #expect(cache.statistics.refusals == 0) // a configuration, not a refusal
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
        _ = cache.get("https://api.example.com/0") // 0 becomes the most recent
        #expect(cache.statistics.memoryEntries == 10)

        cache.memoryCapacity = 25_000

        #expect(cache.memoryCapacity == 25_000)
        #expect(cache.currentMemoryUsage <= 25_000)
        #expect(cache.statistics.memoryEntries == 2)
        #expect(cache.statistics.evictions == 8)
        let before = cache.statistics.memoryHits
        #expect(cache.get("https://api.example.com/0") == body) // kept: most recent
        #expect(cache.get("https://api.example.com/9") == body) // kept: second most recent
        #expect(cache.statistics.memoryHits == before + 2)
        #expect(cache.get("https://api.example.com/1") == body) // evicted from memory, still on disk
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

    @Test func aFullDiskTierEvictsTheLeastRecentlyUsedAsURLCacheDoes() throws {
        // Given: 1 MiB of disk and 100 distinct responses of 64 KiB (incompressible)
        let directory = TestDirectory()
        let capacity = 1 << 20
        let cache = try directory.makeCache(disk: capacity)
        let url = { (n: Int) in "https://api.example.com/fill/\(n)" }

        // When: they are stored one after the other
        for n in 0..<100 {
            cache.put(url(n), data: randomData(size: 64 << 10, seed: UInt64(n)))
            #expect(cache.statistics.diskEntryBytes <= capacity, "entries' footprint after store \(n)")
        }

        // Then: every store succeeded, the newest are served (by another instance too), the oldest are gone
        let statistics = cache.statistics
        #expect(statistics.refusals == 0)
        #expect(statistics.stores == 100)
        #expect(statistics.directoryEvictions > 0)
        let other = try directory.makeCache(memory: 0, disk: capacity)
        for n in 95..<100 {
            #expect(cache.getData(url(n)) == randomData(size: 64 << 10, seed: UInt64(n)), "newest \(n)")
            #expect(other.getData(url(n)) == randomData(size: 64 << 10, seed: UInt64(n)), "newest \(n), other instance")
        }
        for n in 0..<50 {
            #expect(cache.getData(url(n)) == nil, "oldest \(n)")
            #expect(other.getData(url(n)) == nil, "oldest \(n), other instance")
        }
    }

    @Test func onlyAnEntryLargerThanTheDiskCapacityIsRefused() throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache(memory: 8 << 20, disk: 1 << 20)
        let url = "https://api.example.com/huge"
        cache.put("https://api.example.com/small", "small")
        cache.put(url, "older")

        cache.put(url, data: randomData(size: 3 << 19, seed: 1)) // 1.5 MiB

        #expect(cache.statistics.refusals == 1)
        #expect(cache.getData(url) == nil, "neither the refused response nor the one it replaced")
        #expect(try directory.makeCache().get(url) == nil)
        #expect(cache.get("https://api.example.com/small") == "small", "nothing else was evicted for it")
    }

    @Test func loweringTheDiskCapacityTakesEffectAtTheNextStore() throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache(memory: 0)
        for n in 0..<10 { cache.put("https://api.example.com/\(n)", data: randomData(size: 64 << 10, seed: UInt64(n))) }
        let before = cache.statistics.diskEntryBytes
        #expect(before > 10 * (64 << 10))

        cache.diskCapacity = 256 << 10
        #expect(cache.diskCapacity == 256 << 10)
        #expect(cache.statistics.diskEntryBytes == before, "lowering it removes nothing at once")
        cache.put("https://api.example.com/new", "new")

        #expect(cache.statistics.diskEntryBytes <= 256 << 10)
        #expect(cache.get("https://api.example.com/new") == "new")
        #expect(cache.getData("https://api.example.com/9") != nil, "the most recent stay")
        #expect(cache.getData("https://api.example.com/0") == nil, "the least recent went")

        cache.diskCapacity = 0
        cache.put("https://api.example.com/fourth", "fourth")
        #expect(try directory.makeCache().get("https://api.example.com/fourth") == nil)
        #expect(cache.statistics.refusals == 0)
    }
}
