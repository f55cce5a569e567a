import Foundation
import SeededRandom
@_spi(Testing) import SharedURLCacheStore
import Testing
import TestProcess

/// Per-partition counters kept in the index (docs/Capacity.md, "Partitions").
/// Rule 32: counters are checked against the sums over the entries after long random sequences.
@Suite(.blockingWaits, .timeLimit(.minutes(5)))
struct PartitionCounterTests {
    /// Per partition, from a walk: entries, body bytes, and bytes as the capacity counts them
    /// (the record as the index holds it, plus the body file in whole 4 KiB blocks; an inline
    /// body has no file).
    static func walk(_ store: CacheStore) throws -> [[UInt8]: (entries: Int, bodyBytes: Int, bytes: Int)] {
        var records: [StoredRecord] = []
        try store.forEachRecord {
            records.append($0); return true
        }
        var sums: [[UInt8]: (entries: Int, bodyBytes: Int, bytes: Int)] = [:]
        for record in records {
            let recordLength = try #require(try store.debugRawRecord(for: record.key, variant: record.variant)).count
            let file = record.isInline ? 0 : (record.footprintSize + 4095) / 4096 * 4096
            var sum = sums[record.partition] ?? (0, 0, 0)
            sum.entries += 1
            sum.bodyBytes += record.bodySize
            sum.bytes += recordLength + file
            sums[record.partition] = sum
        }
        return sums
    }

    static func expectCountersMatchWalk(_ store: CacheStore, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let counted = try store.partitionCounters()
        let walked = try walk(store)
        #expect(counted.exact, sourceLocation: sourceLocation)
        let live = counted.partitions.filter { $0.entries > 0 }
        #expect(live.count == walked.count, "\(live) vs \(walked)", sourceLocation: sourceLocation)
        for partition in live {
            let sum = walked[partition.partition]
            #expect(sum?.entries == partition.entries, "\(partition)", sourceLocation: sourceLocation)
            #expect(sum?.bodyBytes == partition.bodyBytes, "\(partition)", sourceLocation: sourceLocation)
            #expect(sum?.bytes == partition.bytes, "\(partition)", sourceLocation: sourceLocation)
        }
        // The partitions add up to what the directory's own counters say the entries take.
        #expect(live.reduce(0) { $0 + $1.bytes } == (try store.diskUsage().entryBytes), sourceLocation: sourceLocation)
        #expect(try store.verify().partitionCountersMatch, sourceLocation: sourceLocation)
    }

    @Test("counters equal a walk after random stores, replacements, removals, evictions and purges")
    func countersAfterRandomOperations() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        var rng = SplitMix64(seed: 20)
        for round in 0..<6 {
            for _ in 0..<150 { try randomOperation(store, &rng) }
            try Self.expectCountersMatchWalk(store)
            #expect(try store.statistics().evictions > 0 || round < 5, "the mix evicts")
        }
        try store.removeAll()
        #expect(try store.partitionCounters().partitions.isEmpty, "empty partitions without a quota leave no key")
    }

    @Test("two processes storing and removing at once keep the counters exact")
    func countersAcrossProcesses() throws {
        let dir = TestDirectory()
        _ = try CacheStore(directory: dir.cache)
        let workers = try (1...2).map { seed in
            try ChildProcess(["partitions", dir.cache, "\(seed)", "400"])
        }
        for worker in workers {
            let result = worker.finish()
            #expect(result.status == 0 && result.out.contains("DONE"), "\(result.err)")
        }
        let store = try CacheStore(directory: dir.cache)
        #expect(try store.statistics().stores > 0)
        try Self.expectCountersMatchWalk(store)
    }

    @Test("verify reports counters an earlier release left behind, and fix counts them again")
    func verifyFindsAndFixesDrift() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        for i in 0..<20 {
            try store.store(
                RecordDescriptor(key: bytes("k\(i)"), partition: bytes(i % 2 == 0 ? "a" : "b")),
                body: makeBody(size: 5_000, compressible: false, seed: UInt64(i)))
        }
        // An entry no counter knows of, as an earlier release's would be to the partitions': a
        // valid record (inline, so it needs no body file) written into the index raw.
        let elsewhere = TestDirectory()
        let other = try CacheStore(directory: elsewhere.cache)
        try other.store(RecordDescriptor(key: bytes("ghost"), partition: bytes("a")), body: bytes("boo"))
        let raw = try #require(try other.debugRawRecord(for: bytes("ghost")))
        try store.debugOverwriteRecord(for: bytes("ghost"), with: raw)
        let found = try store.verify()
        #expect(!found.partitionCountersMatch && found.isDamaged)
        _ = try store.verify(fix: true)
        try Self.expectCountersMatchWalk(store)
    }
}

/// One operation of the mix (the same as `CacheWorker partitions`).
private func randomOperation(_ store: CacheStore, _ rng: inout SplitMix64) throws(CacheError) {
    let partition = "p\(rng.next() % 4)"
    let key = Array("\(partition)/k\(rng.next() % 40)".utf8)
    switch rng.next() % 10 {
    case 0..<6:
        let size = Int(rng.next() % 3 == 0 ? rng.next() % 20_000 : rng.next() % 600)
        let body = (0..<size).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        let tags = rng.next() % 2 == 0 ? ["t\(rng.next() % 3)"] : []
        do {
            try store.store(
                RecordDescriptor(key: key, partition: Array(partition.utf8), tags: tags), body: body,
                capacityBytes: rng.next() % 5 == 0 ? 30_000 : nil)
        } catch {
            if error.code != .overCapacity { throw error }
        }
    case 6..<8: try store.remove(key: key)
    case 8: try store.purge(tag: "t\(rng.next() % 3)", soft: rng.next() % 2 == 0)
    default: try store.removeAll(storedSince: .now.addingTimeInterval(-0.05))
    }
}
