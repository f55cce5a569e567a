import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import SharedURLCache
import Synchronization
import Testing
import TestProcess

@Suite("Concurrency", .blockingWaits, .timeLimit(.minutes(5)))
struct ConcurrencyTests {
    static let threads = 8
    static let operationsPerThread = 10_000
    static let keys = 64

    static func url(_ n: Int) -> String { "https://api.example.com/items/\(n)?v=1" }

    /// 8 threads × 10,000 mixed operations on one instance (lookups, stores with every policy
    /// and with Vary, removes, capacity changes). Every hit must carry a body of the key asked
    /// for; afterwards the counters add up, the memory tier is self-consistent, and every
    /// `.allowed` memory entry agrees with the directory.
    @Test func mixedOperationsFromEightThreads() throws {
        // Given
        let directory = TestDirectory()
        let cache = try directory.makeCache(memory: 256 << 10)
        let lookups = Atomic<Int>(0)
        let wrongBodies = Atomic<Int>(0)

        // When
        onOwnThreads(Self.threads) { thread in
            var rng = SplitMix(UInt64(thread) &+ 0x5EED)
            for i in 0..<Self.operationsPerThread {
                let n = Int(rng.next() % UInt64(Self.keys))
                let url = Self.url(n)
                let language = rng.next() % 2 == 0 ? "en" : "fr"
                let body = "\(url)#\(thread)#\(i)#" + String(repeating: "x", count: Int(rng.next() % 2000))
                switch rng.next() % 100 {
                case 0..<72:
                    lookups.add(1, ordering: .relaxed)
                    let hit = cache.cachedResponse(for: request(url, headers: ["Accept-Language": language]))
                    if let text = ConcurrencyTests.text(hit), !text.hasPrefix(url + "#") {
                        wrongBodies.add(1, ordering: .relaxed)
                    }
                case 72..<79: cache.put(url, body)
                case 79..<91: cache.put(url, body, policy: .allowedInMemoryOnly)
                case 91..<94:
                    cache.put(
                        url, body, responseHeaders: ["Vary": "Accept-Language"],
                        requestHeaders: ["Accept-Language": language])
                case 94..<98: cache.removeCachedResponse(for: request(url))
                case 98: cache.memoryCapacity = Int(rng.next() % (256 << 10))
                default: _ = cache.statistics
                }
            }
        }

        // Then
        let stats = cache.statistics
        print("concurrency: \(stats)")
        #expect(wrongBodies.load(ordering: .relaxed) == 0)
        #expect(stats.hits + stats.misses == lookups.load(ordering: .relaxed))
        #expect(stats.refusals == 0)
        #expect(cache.engine.memory.withLock { $0.isConsistent })
        #expect(cache.currentMemoryUsage <= cache.memoryCapacity)

        let diskView = try directory.makeCache(memory: 0)
        for n in 0..<Self.keys {
            for language in ["en", "fr"] {
                let probe = request(Self.url(n), headers: ["Accept-Language": language])
                let mine = cache.cachedResponse(for: probe)
                let disk = diskView.cachedResponse(for: probe)
                if mine == nil { #expect(disk == nil, "key \(n) \(language)") }
                if let mine, mine.storagePolicy == .allowed {
                    #expect(Self.text(mine) == Self.text(disk), "key \(n) \(language)")
                }
            }
        }
    }

    static func text(_ cached: CachedURLResponse?) -> String? {
        cached.map { String(decoding: $0.data, as: UTF8.self) }
    }
}
