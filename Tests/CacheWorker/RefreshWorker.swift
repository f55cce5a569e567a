import Foundation
import SeededRandom
import SharedURLCacheStore

/// `CacheWorker refresher DIR SEED ID KEYS`: stores file-backed bodies and refreshes their heads
/// (what a 304 stores), forever. After each store it prints `ACK key seq` (the body's sequence,
/// which `verify` checks bit-exact) and after each store or refresh `HEAD key gen`: the entry's
/// head is `gen=<gen>`, and gens only grow, so a test can check that the last acknowledged head
/// survived a kill -9.
enum RefreshWorker {
    static func run(_ store: CacheStore, seed: UInt64, id: UInt64, keys: Int) throws(CacheError) -> Never {
        var rng = SplitMix64(seed: seed)
        var seq = id << 40, gen = id << 40
        var bodySeq: [String: UInt64] = [:]
        while true {
            gen += 1
            let key = Worker.keyName(Int(rng.next() % UInt64(keys)))
            let descriptor = RecordDescriptor(key: Array(key.utf8), head: Array("gen=\(gen)".utf8))
            let refreshed: Bool
            if rng.next() % 6 != 0, let body = bodySeq[key], let version = try store.version(for: Array(key.utf8)) {
                refreshed = try store.refresh(descriptor, expecting: version) != nil
                if refreshed { print("ACK \(key) \(body)") }
            } else {
                refreshed = false
            }
            if !refreshed {
                seq += 1
                // Larger than the inline limit: the refreshes share a body file.
                let size = 8 << 10 + Int(rng.next() % (120 << 10))
                try store.store(descriptor, body: TestBody.make(key: key, seq: seq, size: size))
                bodySeq[key] = seq
                print("ACK \(key) \(seq)")
            }
            print("HEAD \(key) \(gen)")
            fflush(nil)
        }
    }
}
