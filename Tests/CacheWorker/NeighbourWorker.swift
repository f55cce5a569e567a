import Foundation
@_spi(Testing) import SharedURLCacheStore
import SeededRandom

/// `rel-neighbour DIR SECONDS SEED`: a service's traffic while another member of the group
/// damages the directory (docs/Reliability.md, "Hostile neighbours"). Stores, lookups, removals
/// and request leases over 64 keys, half of them inline bodies and half body files, until SECONDS
/// pass. Typed errors are counted, never fatal: a damaged directory may refuse operations. A body
/// that is not the one its key was stored with exits 3 at once. `RUNNING` after the first
/// operation (the test damages the directory then); the last line is
/// `NEIGHBOUR ops=N hits=H stores=S errors=CODE:COUNT,...`.
enum NeighbourWorker {
    static func run(_ args: [String]) -> Int32 {
        let dir = args[2]
        let deadline = Date().addingTimeInterval(Double(args[3])!)
        var rng = SplitMix64(seed: UInt64(args[4])!)
        var errors: [String: Int] = [:]
        var ops = 0, hits = 0, stores = 0
        var store: CacheStore?
        while Date() < deadline {
            ops += 1
            do {
                // A refused open is an answer too: try again, as a supervisor's restart would.
                if store == nil { store = try CacheStore(directory: dir) }
                let n = Int(rng.next() % 64)
                let key = "neighbour-\(n)"
                switch rng.next() % 10 {
                case 0..<4:
                    let size = n % 2 == 0 ? 200 : 40_000
                    try store!.store(
                        RecordDescriptor(key: Array(key.utf8)),
                        body: TestBody.make(key: key, seq: rng.next() % 1000, size: size))
                    stores += 1
                case 4..<9:
                    if let hit = try store!.record(for: Array(key.utf8)) {
                        if case .invalid(let why) = TestBody.check(hit.body ?? [], expectedKey: key) {
                            return ReliabilityWorker.say(3, "WRONG BODY \(key): \(why)")
                        }
                        hits += 1
                    }
                default:
                    let name = Array("lease-\(n)".utf8)
                    if case .acquired = try store!.tryLease(name) { try store!.releaseLease(name) }
                }
            } catch {
                errors[error.code.name, default: 0] += 1
                if error.code != .notFound { usleep(2000) }
            }
            if ops == 1 {
                print("RUNNING")
                fflush(nil)
            }
        }
        let summary = errors.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: ",")
        print("NEIGHBOUR ops=\(ops) hits=\(hits) stores=\(stores) errors=\(summary)")
        fflush(nil)
        return 0
    }
}
