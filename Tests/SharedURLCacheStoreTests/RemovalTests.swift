import Foundation
import SharedURLCacheStore
import Testing
import TestProcess

@Suite(.blockingWaits, .timeLimit(.minutes(5)))
struct RemovalTests {
    @Test("remove-since: equal is removed, before stays, after is removed")
    func removeSinceBoundaries() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        let t = Date(timeIntervalSince1970: 1_800_000_000)
        try store.store(
            RecordDescriptor(key: bytes("before"), storedAt: t.addingTimeInterval(-0.001)), body: bytes("b"))
        try store.store(RecordDescriptor(key: bytes("equal"), storedAt: t), body: bytes("e"))
        try store.store(RecordDescriptor(key: bytes("after"), storedAt: t.addingTimeInterval(0.001)), body: bytes("a"))
        try store.store(
            RecordDescriptor(key: bytes("ancient"), storedAt: Date(timeIntervalSince1970: -5)), body: bytes("x"))
        #expect(try store.removeAll(storedSince: t) == 2)
        #expect(try store.record(for: bytes("before")) != nil)
        #expect(try store.record(for: bytes("ancient")) != nil)
        #expect(try store.record(for: bytes("equal")) == nil)
        #expect(try store.record(for: bytes("after")) == nil)
        #expect(try store.statistics().entries == 2)
    }

    @Test("remove-since over more entries than one transaction batch")
    func removeSinceMany() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        let base = Date(timeIntervalSince1970: 1_800_000_000)
        for i in 0..<2500 {
            try store.store(
                RecordDescriptor(key: bytes("k\(i)"), storedAt: base.addingTimeInterval(Double(i))),
                body: bytes("v\(i)"))
        }
        #expect(try store.removeAll(storedSince: base.addingTimeInterval(500)) == 2000)
        #expect(try store.statistics().entries == 500)
        #expect(try store.record(for: bytes("k499")) != nil)
        #expect(try store.record(for: bytes("k500")) == nil)
    }

    @Test(
        "one recency order (a new directory): remove-since goes by stored time, whatever the entries' use, and keeps no stored-time keys"
    )
    func removeSinceByStoredTimeInOneOrder() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        #expect(try store.statistics().directoryFormat == StoreFormats.directory)
        let cut = Date(timeIntervalSinceNow: -3600)
        // Stored before the cut and used after it (every store is a use now): stays.
        try store.store(
            RecordDescriptor(key: bytes("old-used"), storedAt: cut.addingTimeInterval(-10)), body: bytes("a"))
        _ = try store.record(for: bytes("old-used"))
        // Stored after the cut: goes.
        try store.store(RecordDescriptor(key: bytes("new"), storedAt: cut.addingTimeInterval(10)), body: bytes("b"))
        // Stored a year ahead (a caller's date) and used now, before its stored time: goes, even
        // for a date after now.
        let ahead = Date(timeIntervalSinceNow: 365 * 86400)
        try store.store(RecordDescriptor(key: bytes("ahead"), storedAt: ahead), body: bytes("c"))
        _ = try store.record(for: bytes("ahead"))
        try store.flush() // the uses reach the index
        #expect(try store.removeAll(storedSince: ahead.addingTimeInterval(-1)) == 1)
        #expect(try store.record(for: bytes("ahead"), variant: [], includeBody: false, countAsUse: false) == nil)
        #expect(try store.removeAll(storedSince: cut) == 1)
        #expect(try store.record(for: bytes("old-used"), variant: [], includeBody: false, countAsUse: false) != nil)
        #expect(try store.record(for: bytes("new"), variant: [], includeBody: false, countAsUse: false) == nil)
        // No key of a stored-time order was written: verify would count each as a stray.
        let verification = try store.verify()
        #expect(!verification.isDamaged && verification.strayIndexKeys == 0, "\(verification)")
    }

    @Test("one recency order: remove-since walks past thousands of entries used since the date but stored before it")
    func removeSinceSkipsUsedEntries() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        let cut = Date(timeIntervalSinceNow: -86400)
        // 5,000 stored before the cut, all in the use order after it (stored now), interleaved
        // with 1,500 stored after it: more kept entries than one transaction looks at.
        for i in 0..<6500 {
            let stored = i % 13 < 3 ? cut.addingTimeInterval(Double(i)) : cut.addingTimeInterval(-1 - Double(i))
            try store.store(RecordDescriptor(key: bytes("k\(i)"), storedAt: stored), body: bytes("v\(i)"))
        }
        let expected = (0..<6500).filter { $0 % 13 < 3 }.count
        #expect(try store.removeAll(storedSince: cut) == expected)
        #expect(try store.statistics().entries == 6500 - expected)
        #expect(try store.record(for: bytes("k3"), variant: [], includeBody: false, countAsUse: false) != nil)
        #expect(try store.record(for: bytes("k2"), variant: [], includeBody: false, countAsUse: false) == nil)
        #expect(try store.removeAll(storedSince: cut) == 0)
    }

    @Test("remove-all empties the index and the body files")
    func removeAll() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        for i in 0..<50 {
            try store.store(
                RecordDescriptor(key: bytes("k\(i)")),
                body: makeBody(size: 20_000, compressible: false, seed: UInt64(i)))
        }
        #expect(try store.removeAll() == 50)
        let stats = try store.statistics()
        #expect(stats.entries == 0 && stats.bodyBytes == 0 && stats.storedBytes == 0 && stats.recordBytes == 0)
        let files = try FileManager.default.subpathsOfDirectory(atPath: dir.cache + "/bodies").filter { $0.count > 3 }
        #expect(files.isEmpty)
        #expect(try store.record(for: bytes("k1")) == nil)
    }

    /// Counters must equal the sum over the entries after a long random sequence (docs/Style.md rule 32).
    @Test("counters equal the model after 10,000 random operations")
    func modelBased() throws {
        let seed =
            UInt64(ProcessInfo.processInfo.environment["SUC_TEST_SEED"] ?? "") ?? UInt64.random(in: 1...UInt64.max)
        print("modelBased seed: \(seed) (replay with SUC_TEST_SEED=\(seed))")
        var rng = SeededGenerator(seed: seed)
        let dir = TestDirectory()
        var configuration = CacheStoreConfiguration()
        configuration.initialIndexBytes = 1 << 20 // also exercises map growth
        let store = try CacheStore(directory: dir.cache, configuration: configuration)
        var model: [String: (body: [UInt8], stored: Date)] = [:]
        let base = Date(timeIntervalSince1970: 1_800_000_000)
        for step in 0..<10_000 {
            let key = "k\(rng.next() % 300)"
            switch rng.next() % 100 {
            case 0..<50:
                let size = Int(rng.next() % 3) == 0 ? Int(rng.next() % 40_000) : Int(rng.next() % 600)
                let body = makeBody(size: size, compressible: rng.next() % 2 == 0, seed: rng.next())
                let stored = base.addingTimeInterval(Double(step))
                try store.store(RecordDescriptor(key: bytes(key), storedAt: stored), body: body)
                model[key] = (body, stored)
            case 50..<80:
                let hit = try store.record(for: bytes(key))
                #expect(hit?.body == model[key]?.body, "seed \(seed) step \(step) key \(key)")
            case 80..<97:
                let removed = try store.remove(key: bytes(key))
                #expect(removed == (model.removeValue(forKey: key) == nil ? 0 : 1), "seed \(seed) step \(step)")
            case 97..<99:
                let since = base.addingTimeInterval(Double(step) - Double(rng.next() % 200))
                let expected = model.filter { $0.value.stored >= since }.count
                #expect(try store.removeAll(storedSince: since) == expected, "seed \(seed) step \(step)")
                model = model.filter { $0.value.stored < since }
            default:
                if rng.next() % 10 == 0 {
                    #expect(try store.removeAll() == model.count)
                    model = [:]
                }
            }
        }
        let stats = try store.statistics()
        #expect(stats.entries == model.count, "seed \(seed)")
        #expect(stats.bodyBytes == model.values.reduce(0) { $0 + $1.body.count }, "seed \(seed)")
        var stored = 0, records = 0
        for key in model.keys {
            let hit = try #require(try store.record(for: bytes(key), variant: [], includeBody: true, countAsUse: false))
            #expect(hit.body == model[key]!.body)
            stored += hit.storedSize
            records += hit.isInline ? 0 : 1
        }
        #expect(stats.storedBytes >= stored, "on-disk bytes include every stored body")
        // Every body file on disk is referenced by exactly one record.
        let files = try FileManager.default.subpathsOfDirectory(atPath: dir.cache + "/bodies").filter { $0.count > 3 }
        #expect(files.count == records, "seed \(seed): \(files.count) body files for \(records) file-backed entries")
    }
}

@Suite(.blockingWaits, .timeLimit(.minutes(5)))
struct UsageCounterTests {
    @Test("hits and misses reach the index with the next write; stores are counted in their commit")
    func sharedUsageCounters() throws {
        let dir = TestDirectory()
        do {
            let store = try CacheStore(directory: dir.cache)
            try store.store(RecordDescriptor(key: bytes("a")), body: bytes("1"))
            store.countUsage(hits: 3, misses: 2)
            let pending = try store.statistics()
            #expect(
                pending.hits == 3 && pending.misses == 2 && pending.stores == 1,
                "this process's pending counts are included")
            try store.store(RecordDescriptor(key: bytes("b")), body: bytes("2")) // carries them to the index
            store.countUsage(hits: 1)
            try store.flush()
        }
        // A new environment (every handle closed) reads them from the index alone.
        let reopened = try CacheStore(directory: dir.cache)
        let stats = try reopened.statistics()
        #expect(stats.hits == 4 && stats.misses == 2 && stats.stores == 2)
    }
}
