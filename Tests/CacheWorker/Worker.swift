import SeededRandom
import Foundation
@_spi(Testing) import SharedURLCacheStore

/// Helper executable spawned by the multi-process tests: real processes on one directory.
///
///   CacheWorker mixed DIR SEED SECONDS KEYS ID MAXBODY   mixed get/put/remove on shared keys
///   CacheWorker writer DIR SEED ID KEYS                  stores forever, prints "ACK key seq"
///   CacheWorker refresher DIR SEED ID KEYS               stores and refreshes heads forever (RefreshWorker.swift)
///   CacheWorker reader DIR SECONDS KEYS                  validates every hit
///   CacheWorker verify DIR ACKFILE                       every acknowledged store is readable
///   CacheWorker put DIR KEY SEQ SIZE | get DIR KEY | remove DIR KEY
///   CacheWorker holdlock DIR MILLIS                      holds the index write lock
///   CacheWorker fdcheck DIR                              no descriptor leaks across open/use/close
///   CacheWorker partitions DIR SEED OPS                  random stores/removals/purges in 4 partitions
///   CacheWorker fill DIR PARTITION COUNT SIZE            COUNT stores of SIZE bytes into PARTITION
///   CacheWorker evicting DIR SEED CAPACITY KEYS          stores and hits at the capacity forever (EvictionWorker.swift)
///   CacheWorker api-get|api-version|api-remove|api-remove-all|api-put DIR …   see APIWorker.swift
///   CacheWorker urlsession-get DIR URL                  one GET through a caching URLSession
///   CacheWorker faults DIR                               the fault-injection loop (docs/Reliability.md T14)
///   CacheWorker rel-* DIR …                              reliability commands, see ReliabilityWorker.swift
///   CacheWorker bulk DIR OPERATION … FILES               a purge or quota, its unlinks counted (BulkWorker.swift)
///   CacheWorker fuzz-replay FAILCASES                    replays Fuzz/FailCases through FuzzChecks.swift
/// Exit codes: 0 ok, 1 usage, 2 cache error, 3 invariant violated, 4 miss (get).
@main
struct Worker {
    static func main() {
        let args = CommandLine.arguments
        guard args.count >= 3 else { fail(1, "usage: CacheWorker COMMAND DIR …") }
        let dir = args[2]
        if args[1] == "fdcheck" { fdcheck(dir) }
        if args[1] == "faults" { exit(FaultLoop.run(directory: dir)) }
        if args[1].hasPrefix("rel-") { exit(ReliabilityWorker.run(args)) }
        if args[1] == "bulk" { exit(BulkWorker.run(args)) }
        if args[1] == "fuzz-replay" { exit(FuzzChecks.replay(dir)) }
        if args[1] == "urlsession-get" { exit(URLSessionWorker.get(directory: dir, url: args[3])) }
        if args[1] == "evicting" {
            do {
                try EvictionWorker.run(dir, seed: UInt64(args[3])!, capacity: Int(args[4])!, keys: Int(args[5])!)
            } catch { fail(2, "\(error)") }
        }
        do {
            let store = try CacheStore(directory: dir)
            switch args[1] {
            case "mixed":
                try mixed(
                    store, seed: UInt64(args[3])!, seconds: Double(args[4])!, keys: Int(args[5])!, id: Int(args[6])!,
                    maxBody: Int(args[7])!)
            case "writer": try writer(store, seed: UInt64(args[3])!, id: UInt64(args[4])!, keys: Int(args[5])!)
            case "refresher":
                try RefreshWorker.run(store, seed: UInt64(args[3])!, id: UInt64(args[4])!, keys: Int(args[5])!)
            case "reader": try reader(store, seconds: Double(args[3])!, keys: Int(args[4])!)
            case "verify": try verify(store, ackFile: args[3])
            case "put":
                try store.store(
                    RecordDescriptor(key: Array(args[3].utf8)),
                    body: TestBody.make(key: args[3], seq: UInt64(args[4])!, size: Int(args[5])!))
            case "get":
                guard let hit = try store.record(for: Array(args[3].utf8)) else { exit(4) }
                switch TestBody.check(hit.body ?? [], expectedKey: args[3]) {
                case .valid(let seq): print("HIT \(seq)")
                case .invalid(let why): fail(3, "INVALID \(why)")
                }
            case "remove": print("REMOVED \(try store.remove(key: Array(args[3].utf8)))")
            case "fill":
                try PartitionWorker.fill(store, partition: args[3], count: Int(args[4])!, size: Int(args[5])!)
            case "partitions": try PartitionWorker.run(store, seed: UInt64(args[3])!, operations: Int(args[4])!)
            case let command where command.hasPrefix("api-"): exit(APIWorker.run(store, args))
            case "holdlock":
                print("LOCKING")
                fflush(nil)
                try store.withDebugWriteLock(milliseconds: UInt32(args[3])!)
                print("RELEASED")
            default: fail(1, "unknown command \(args[1])")
            }
        } catch {
            fail(2, "cache error: \(error.detailedDescription())")
        }
        fflush(nil)
        exit(0)
    }

    static func fail(_ code: Int32, _ message: String) -> Never {
        FileHandle.standardError.write(Data((message + "\n").utf8))
        fflush(nil)
        exit(code)
    }

    /// Opens, uses (hits, misses, errors, corruption) and closes a store three times; the count
    /// of open descriptors must come back to where it started (OkHttp's checkNoOpenFiles).
    static func fdcheck(_ dir: String) -> Never {
        func openDescriptors() -> Int {
            (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
        }
        func exercise() throws(CacheError) {
            var configuration = CacheStoreConfiguration()
            configuration.maximumBodyBytes = 1 << 20
            let store = try CacheStore(directory: dir, configuration: configuration)
            for i in 0..<50 {
                let key = keyName(i)
                try store.store(
                    RecordDescriptor(key: Array(key.utf8)), body: TestBody.make(key: key, seq: 1, size: i * 5000))
                _ = try store.record(for: Array(key.utf8))
                _ = try store.record(for: Array("miss-\(i)".utf8))
            }
            _ = try? store.store(RecordDescriptor(key: Array("big".utf8)), body: [UInt8](repeating: 1, count: 2 << 20))
            if let path = store.debugBodyPath(for: Array(keyName(40).utf8)) {
                _ = truncate(dir + "/" + path, 10)
                _ = try store.record(for: Array(keyName(40).utf8))
            }
            try store.remove(key: Array(keyName(1).utf8))
            try store.removeAll()
            _ = try? CacheStore(directory: dir + "/index.lmdb")
        }
        let before = openDescriptors()
        for _ in 0..<3 {
            do { try exercise() } catch { fail(2, "cache error: \(error.detailedDescription())") }
        }
        let after = openDescriptors()
        guard before == after else { fail(3, "LEAK descriptors before=\(before) after=\(after)") }
        print("FDS \(before) \(after)")
        exit(0)
    }

    static func keyName(_ n: Int) -> String { "https://api.example.com/items/\(n)?v=1" }

    /// Log-uniform sizes 0 … maxBody.
    static func size(_ rng: inout SplitMix64, max: Int) -> Int {
        if rng.next() % 16 == 0 { return 0 }
        let exp = Double(rng.next() % 1000) / 1000 * log2(Double(max))
        return Int(pow(2, exp))
    }

    static func mixed(_ store: CacheStore, seed: UInt64, seconds: Double, keys: Int, id: Int, maxBody: Int)
        throws(CacheError)
    {
        var rng = SplitMix64(seed: seed)
        let deadline = Date().addingTimeInterval(seconds)
        var ops = 0, hits = 0, misses = 0, puts = 0, removes = 0, markerReads = 0
        var seq = UInt64(id) << 40
        var lastMarker: [Int: UInt64] = [:]
        while Date() < deadline {
            ops += 1
            // 10 hot keys written by every process; the rest spread over `keys`.
            let n = rng.next() % 4 == 0 ? Int(rng.next() % 10) : Int(rng.next() % UInt64(keys))
            let key = keyName(n)
            let roll = rng.next() % 100
            if roll < 60 {
                if let hit = try store.record(for: Array(key.utf8)) {
                    hits += 1
                    if case .invalid(let why) = TestBody.check(hit.body ?? [], expectedKey: key) {
                        fail(3, "TORN \(key): \(why)")
                    }
                } else {
                    misses += 1
                }
            } else if roll < 90 {
                seq += 1
                try store.store(
                    RecordDescriptor(key: Array(key.utf8)),
                    body: TestBody.make(key: key, seq: seq, size: size(&rng, max: maxBody)))
                puts += 1
            } else {
                try store.remove(key: Array(key.utf8))
                removes += 1
            }
            // Markers: each process bumps its own; every other process must see them advance.
            if ops % 50 == 0 {
                let mine = "marker-\(id)"
                try store.store(
                    RecordDescriptor(key: Array(mine.utf8)), body: TestBody.make(key: mine, seq: UInt64(ops), size: 16))
                for other in 0..<8 where other != id {
                    let name = "marker-\(other)"
                    guard let hit = try store.record(for: Array(name.utf8)) else { continue }
                    guard case .valid(let s) = TestBody.check(hit.body ?? [], expectedKey: name) else {
                        fail(3, "TORN marker")
                    }
                    if let last = lastMarker[other], s < last {
                        fail(3, "marker of \(other) went back from \(last) to \(s)")
                    }
                    if lastMarker[other] != s { markerReads += 1 }
                    lastMarker[other] = s
                }
            }
        }
        print(
            "DONE ops=\(ops) hits=\(hits) misses=\(misses) puts=\(puts) removes=\(removes) markerAdvancesSeen=\(markerReads) peers=\(lastMarker.count)"
        )
    }

    static func writer(_ store: CacheStore, seed: UInt64, id: UInt64, keys: Int) throws(CacheError) {
        var rng = SplitMix64(seed: seed)
        var seq = id << 40
        while true {
            seq += 1
            let key = keyName(Int(rng.next() % UInt64(keys)))
            try store.store(
                RecordDescriptor(key: Array(key.utf8)),
                body: TestBody.make(key: key, seq: seq, size: size(&rng, max: 64 << 10)))
            print("ACK \(key) \(seq)")
            fflush(nil)
        }
    }

    static func reader(_ store: CacheStore, seconds: Double, keys: Int) throws(CacheError) {
        let deadline = Date().addingTimeInterval(seconds)
        var reads = 0, hits = 0
        var rng = SplitMix64(seed: UInt64(getpid()))
        while Date() < deadline {
            let key = keyName(Int(rng.next() % UInt64(keys)))
            reads += 1
            if let hit = try store.record(for: Array(key.utf8)) {
                hits += 1
                if case .invalid(let why) = TestBody.check(hit.body ?? [], expectedKey: key) {
                    fail(3, "TORN \(key): \(why)")
                }
            }
        }
        print("DONE reads=\(reads) hits=\(hits)")
    }

    /// Every key's last acknowledged sequence number must be readable, bit-exact; a later
    /// (unacknowledged) store of the same key from the same writer may have superseded it.
    static func verify(_ store: CacheStore, ackFile: String) throws(CacheError) {
        guard let text = try? String(contentsOfFile: ackFile, encoding: .utf8) else {
            fail(1, "cannot read \(ackFile)")
        }
        var latest: [String: UInt64] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard parts.count == 3, parts[0] == "ACK", let seq = UInt64(parts[2]) else { continue }
            latest[String(parts[1])] = max(latest[String(parts[1])] ?? 0, seq)
        }
        for (key, seq) in latest {
            guard let hit = try store.record(for: Array(key.utf8)) else { fail(3, "LOST \(key) seq \(seq)") }
            switch TestBody.check(hit.body ?? [], expectedKey: key) {
            case .valid(let found) where found >= seq: continue
            case .valid(let found): fail(3, "STALE \(key): found seq \(found), acknowledged \(seq)")
            case .invalid(let why): fail(3, "TORN \(key): \(why)")
            }
        }
        print("VERIFIED keys=\(latest.count)")
    }
}
