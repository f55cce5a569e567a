import Foundation
@_spi(Testing) import SharedURLCacheStore
import Testing
import TestProcess

/// Per-partition byte quotas (docs/Capacity.md, "Partition quotas"). A store
/// that would take its partition over the quota evicts that partition's own least recently used
/// entries in its commit, never another partition's.
@Suite(.blockingWaits, .timeLimit(.minutes(5)))
struct PartitionQuotaTests {
    static let quota = 60_000

    static func descriptor(_ partition: String, _ i: Int) -> RecordDescriptor {
        RecordDescriptor(key: bytes("\(partition)/\(i)"), partition: bytes(partition))
    }

    static func counters(_ store: CacheStore, _ partition: String) throws -> PartitionCounters? {
        try store.partitionCounters().partitions.first { $0.partition == bytes(partition) }
    }

    @Test(
        "a partition over its quota evicts its own least recently used entries; another partition is untouched",
        arguments: [nil, 2_000_000])
    func quotaEvictsOwnEntriesOnly(capacity: Int?) throws {
        let dir = TestDirectory()
        var configuration = CacheStoreConfiguration()
        configuration.touchInterval = .milliseconds(1)
        let store = try CacheStore(directory: dir.cache, configuration: configuration)
        for i in 0..<30 {
            try store.store(Self.descriptor("quiet", i), body: makeBody(size: 5_000, compressible: false, seed: 1))
        }
        try store.store(Self.descriptor("noisy", 0), body: makeBody(size: 5_000, compressible: false, seed: 2))
        let set = try store.setPartitionQuota(bytes("noisy"), maxBytes: Self.quota)
        #expect(set.indexedEntries == 1 && set.evictedEntries == 0)
        for i in 1..<100 {
            // With a capacity too (not reached here), the quota is read before the put.
            try store.store(
                Self.descriptor("noisy", i), body: makeBody(size: 5_000, compressible: false, seed: UInt64(i)),
                capacityBytes: capacity)
            // The first one stays in use: last-use order, not store order.
            _ = try store.record(for: bytes("noisy/0"))
            let noisy = try #require(try Self.counters(store, "noisy"))
            #expect(noisy.bytes <= Self.quota, "after store \(i): \(noisy)")
            #expect(noisy.quotaBytes == Self.quota)
        }
        // As `du` counts them: the records and the body files in whole blocks, from a walk.
        let walked = try PartitionCounterTests.walk(store)
        #expect(try #require(walked[bytes("noisy")]).bytes <= Self.quota)
        #expect(walked[bytes("quiet")]?.entries == 30, "no entry of another partition was evicted")
        for i in 0..<30 { #expect(try store.version(for: bytes("quiet/\(i)")) != nil) }
        #expect(try store.version(for: bytes("noisy/0")) != nil, "the entry in use stayed")
        #expect(try store.version(for: bytes("noisy/99")) != nil)
        #expect(try store.version(for: bytes("noisy/1")) == nil, "the least recently used went")
        #expect(try store.statistics().evictions > 80)
        try PartitionCounterTests.expectCountersMatchWalk(store)
    }

    @Test("setting a quota evicts down to it; an entry larger than the quota is refused; removing it ends it")
    func setRefuseRemove() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        for i in 0..<40 {
            try store.store(
                Self.descriptor("big", i), body: makeBody(size: 4_000, compressible: false, seed: UInt64(i)))
        }
        try store.store(Self.descriptor("other", 0), body: bytes("stays"))
        let set = try store.setPartitionQuota(bytes("big"), maxBytes: Self.quota)
        #expect(set.indexedEntries == 40 && set.evictedEntries > 20, "\(set)")
        #expect(try #require(try Self.counters(store, "big")).bytes <= Self.quota)
        #expect(try store.version(for: bytes("big/39")) != nil && store.version(for: bytes("big/0")) == nil)

        for capacity in [nil, 10_000_000] {
            try store.store(Self.descriptor("big", 39), body: bytes("old"))
            do {
                try store.store(
                    Self.descriptor("big", 39), body: makeBody(size: 70_000, compressible: false),
                    capacityBytes: capacity)
                Issue.record("an entry larger than the quota was stored")
            } catch {
                #expect(error.code == .overCapacity && error.message.contains("quota"), "\(error)")
            }
            #expect(try store.version(for: bytes("big/39")) == nil, "no older response comes back")
            #expect(try store.diskUsage(measure: true).leftoverFiles == 0, "no body file left behind")
        }
        #expect(try store.record(for: bytes("other/0"))?.body == bytes("stays"))

        try store.setPartitionQuota(bytes("big"), maxBytes: nil)
        #expect(try Self.counters(store, "big")?.quotaBytes == nil)
        for i in 100..<140 {
            try store.store(
                Self.descriptor("big", i), body: makeBody(size: 4_000, compressible: false, seed: UInt64(i)))
        }
        #expect(try #require(try Self.counters(store, "big")).bytes > Self.quota, "no quota any more")
        try PartitionCounterTests.expectCountersMatchWalk(store)
    }

    @Test("a quota set here is obeyed by another process storing into the partition")
    func quotaAcrossProcesses() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        try store.setPartitionQuota(bytes("p1"), maxBytes: 20_000, allowNewPartition: true)
        let workers = try ["p1", "p2"].map { try ChildProcess(["fill", dir.cache, $0, "40", "3000"]) }
        for worker in workers {
            let result = worker.finish()
            #expect(result.status == 0 && result.out.contains("DONE"), "\(result.err)")
        }
        let p1 = try #require(try Self.counters(store, "p1"))
        #expect(p1.entries > 0 && p1.bytes <= 20_000, "\(p1)")
        #expect(try Self.counters(store, "p2")?.entries == 40, "the others are not held to it")
        #expect(try store.version(for: bytes("p1/fill-39")) != nil && store.version(for: bytes("p1/fill-0")) == nil)
        try PartitionCounterTests.expectCountersMatchWalk(store)
    }

    @Test("compaction holds a partition that is over its quota (counters recounted after drift) to it")
    func compactionHoldsQuotas() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        for i in 0..<5 {
            try store.store(Self.descriptor("a", i), body: makeBody(size: 4_000, compressible: false, seed: UInt64(i)))
            try store.store(Self.descriptor("b", i), body: makeBody(size: 4_000, compressible: false, seed: UInt64(i)))
        }
        try store.setPartitionQuota(bytes("a"), maxBytes: 24_000)
        // An entry no counter knew of (as an earlier release's would be), counted by verify --fix:
        // the partition is now over its quota, which no store of this release could have done.
        let elsewhere = TestDirectory()
        let other = try CacheStore(directory: elsewhere.cache)
        try other.store(Self.descriptor("a", 99), body: makeBody(size: 8_000, compressible: false, seed: 99))
        try store.debugOverwriteRecord(
            for: bytes("a/99"), with: try #require(try other.debugRawRecord(for: bytes("a/99"))))
        _ = try store.verify(fix: true)
        #expect(try #require(try Self.counters(store, "a")).bytes > 24_000)

        let report = try store.compact(CompactionPolicy())
        #expect(report.quotaEvictedEntries > 0 && report.evictedEntries >= report.quotaEvictedEntries, "\(report)")
        #expect(try #require(try Self.counters(store, "a")).bytes <= 24_000)
        #expect(try Self.counters(store, "b")?.entries == 5, "the other partition is untouched")
        try PartitionCounterTests.expectCountersMatchWalk(store)
    }

    @Test("bad input is a typed error: a quota below one byte, a partition without entries")
    func badInput() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        try store.store(Self.descriptor("a", 0), body: bytes("x"))
        for size in [-1, 0, Int.min] {
            let error = #expect(throws: CacheError.self) { try store.setPartitionQuota(bytes("a"), maxBytes: size) }
            #expect(error?.code == .invalidInput, "\(size)")
        }
        let unknown = #expect(throws: CacheError.self) { try store.setPartitionQuota(bytes("nobody"), maxBytes: 1_000) }
        #expect(
            unknown?.code == .notFound && unknown?.message.contains("nobody") == true, "\(String(describing: unknown))")
        #expect(try store.partitionCounters().partitions.count == 1, "a refused quota leaves no partition behind")
        try store.setPartitionQuota(bytes("nobody"), maxBytes: 1_000, allowNewPartition: true)
        let nobody = try #require(try Self.counters(store, "nobody"))
        #expect(nobody.entries == 0 && nobody.quotaBytes == 1_000)
        // Removing a quota that is not there changes nothing.
        try store.setPartitionQuota(bytes("elsewhere"), maxBytes: nil)
        #expect(try store.partitionCounters().partitions.count == 2)
    }
}
