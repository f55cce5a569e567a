import Foundation
import SeededRandom
import SharedURLCacheStore

/// `CacheWorker partitions DIR SEED OPS`: random stores (some under a capacity, so they evict),
/// removals and tag purges over four partitions, for the partition-counter tests
/// (Tests/SharedURLCacheStoreTests/PartitionCounterTests.swift). Prints "DONE".
/// `CacheWorker fill DIR PARTITION COUNT SIZE`: COUNT stores of SIZE random bytes into PARTITION.
enum PartitionWorker {
    static func fill(_ store: CacheStore, partition: String, count: Int, size: Int) throws(CacheError) {
        var rng = SplitMix64(seed: UInt64(count))
        for i in 0..<count {
            let body = (0..<size).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            try store.store(
                RecordDescriptor(key: Array("\(partition)/fill-\(i)".utf8), partition: Array(partition.utf8)),
                body: body)
        }
        print("DONE")
    }

    static func run(_ store: CacheStore, seed: UInt64, operations: Int) throws(CacheError) {
        var rng = SplitMix64(seed: seed)
        for _ in 0..<operations { try randomOperation(store, &rng) }
        print("DONE")
    }

    /// One operation of the mix; the same in the tests' own process.
    static func randomOperation(_ store: CacheStore, _ rng: inout SplitMix64) throws(CacheError) {
        let partition = "p\(rng.next() % 4)"
        let key = Array("\(partition)/k\(rng.next() % 40)".utf8)
        switch rng.next() % 10 {
        case 0..<6:
            let size = Int(rng.next() % 3 == 0 ? rng.next() % 20_000 : rng.next() % 600)
            let body = (0..<size).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            let tags = rng.next() % 2 == 0 ? ["t\(rng.next() % 3)"] : []
            // Some stores under a capacity: they evict other entries, of any partition.
            let capacity = rng.next() % 5 == 0 ? 30_000 : nil
            do {
                try store.store(
                    RecordDescriptor(key: key, partition: Array(partition.utf8), tags: tags), body: body,
                    capacityBytes: capacity)
            } catch {
                if error.code != .overCapacity { throw error }
            }
        case 6..<8: try store.remove(key: key)
        case 8: try store.purge(tag: "t\(rng.next() % 3)", soft: rng.next() % 2 == 0)
        default: try store.removeAll(storedSince: .now.addingTimeInterval(-0.05))
        }
    }
}
