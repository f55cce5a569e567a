import Foundation
import SeededRandom
import SharedURLCacheStore

/// `CacheWorker evicting DIR SEED CAPACITY KEYS`: stores and hits at the capacity forever, under
/// whatever eviction policy the directory records, with a touch interval of 1 ms so every hit
/// raises its entry's counter. Prints `STORED key seq` after each store and `HIT key seq` after
/// each hit it checked bit-exact; a wrong body ends it with `INVALID` (exit 3). Keys are drawn
/// skewed (a few hot keys, many cold), so the queues move entries as well as evict them.
enum EvictionWorker {
    static func run(_ directory: String, seed: UInt64, capacity: Int, keys: Int) throws(CacheError) -> Never {
        var configuration = CacheStoreConfiguration()
        configuration.touchInterval = .milliseconds(1)
        configuration.hardCapacityBytes = capacity
        let store = try CacheStore(directory: directory, configuration: configuration)
        var rng = SplitMix64(seed: seed)
        var seq = seed << 32
        while true {
            let hot = rng.next() % 2 == 0
            let key = Worker.keyName(Int(rng.next() % UInt64(hot ? max(keys / 20, 1) : keys)))
            if let hit = try store.record(for: Array(key.utf8)) {
                switch TestBody.check(hit.body ?? [], expectedKey: key) {
                case .valid(let found): print("HIT \(key) \(found)")
                case .invalid(let why): Worker.fail(3, "INVALID \(key): \(why)")
                }
            } else {
                seq += 1
                // Inline bodies and body files both: eviction unlinks the files after its commit.
                let size = 512 + Int(rng.next() % (16 << 10))
                try store.store(
                    RecordDescriptor(key: Array(key.utf8)), body: TestBody.make(key: key, seq: seq, size: size))
                print("STORED \(key) \(seq)")
            }
            fflush(nil)
        }
    }
}
