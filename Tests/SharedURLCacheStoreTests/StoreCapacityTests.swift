import Foundation
import SharedURLCacheStore
import Testing
import TestProcess

/// A store's own capacity (`capacityBytes`): a full store evicts to fit, as URLCache does; only
/// an entry larger than the capacity is refused. And the directory's disk usage as a value.
@Suite(.blockingWaits, .timeLimit(.minutes(5)))
struct StoreCapacityTests {
    static let capacity = 200_000

    @Test("a store past its capacity evicts least recently used entries in its commit until it fits")
    func evictsToFit() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache) // no hard cap: only the per-store one
        for i in 0..<100 {
            try store.store(
                RecordDescriptor(key: bytes("k\(i)")),
                body: makeBody(size: 10_000, compressible: false, seed: UInt64(i)),
                capacityBytes: Self.capacity)
            #expect(try store.diskUsage().entryBytes <= Self.capacity, "after store \(i)")
        }
        #expect(try store.statistics().evictions > 0)
        #expect(try store.record(for: bytes("k99"))?.body == makeBody(size: 10_000, compressible: false, seed: 99))
        #expect(try store.version(for: bytes("k0")) == nil, "the oldest went first")
    }

    @Test("a streamed store takes the same capacity at commit")
    func streamedStoreEvictsToFit() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        for i in 0..<40 {
            var writer = try store.makeBodyWriter()
            try writer.append(makeBody(size: 10_000, compressible: false, seed: UInt64(i)))
            _ = try writer.commit(RecordDescriptor(key: bytes("k\(i)")), capacityBytes: Self.capacity)
        }
        #expect(try store.diskUsage().entryBytes <= Self.capacity)
        #expect(try store.version(for: bytes("k39")) != nil)
        #expect(try store.version(for: bytes("k0")) == nil)
    }

    @Test("an entry larger than the capacity is refused, and the entry it would replace is gone too")
    func largerThanCapacity() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        try store.store(RecordDescriptor(key: bytes("other")), body: bytes("stays"), capacityBytes: Self.capacity)
        try store.store(RecordDescriptor(key: bytes("k")), body: bytes("old"), capacityBytes: Self.capacity)
        do {
            try store.store(
                RecordDescriptor(key: bytes("k")), body: makeBody(size: 300_000, compressible: false),
                capacityBytes: Self.capacity)
            Issue.record("an entry larger than the capacity was stored")
        } catch {
            #expect(error.code == .overCapacity)
        }
        #expect(try store.record(for: bytes("k")) == nil, "no older response comes back")
        #expect(try store.record(for: bytes("other"))?.body == bytes("stays"), "nothing else was evicted for it")
        #expect(try store.diskUsage(measure: true).leftoverFiles == 0, "no body file left behind")
    }

    @Test("disk usage: its parts add up, entries are records plus body files, and a removal gives them back")
    func diskUsageParts() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        let empty = try store.diskUsage(measure: true)
        #expect(empty.measured && empty.entryBytes == 0 && empty.bodyFileBytes == 0)
        for i in 0..<5 {
            try store.store(RecordDescriptor(key: bytes("f\(i)")), body: makeBody(size: 50_000, compressible: false))
        }
        try store.store(RecordDescriptor(key: bytes("inline")), body: bytes("small"))
        for measure in [false, true] {
            let usage = try store.diskUsage(measure: measure)
            #expect(usage.measured == measure)
            #expect(
                usage.totalBytes == usage.indexBytes + usage.bodyFileBytes + usage.leftoverBytes + usage.overheadBytes)
            #expect(usage.bodyFileBytes >= 5 * 50_000)
            #expect(usage.entryBytes == usage.bodyFileBytes + (try store.statistics().recordBytes))
        }
        try store.removeAll()
        let after = try store.diskUsage(measure: true)
        #expect(after.entryBytes == 0 && after.bodyFileBytes == 0)
    }
}
