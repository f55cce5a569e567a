import SeededRandom
import Foundation
@_spi(Testing) import SharedURLCacheStore

/// Worker commands of the reliability suite (docs/Reliability.md T3, T5, T6, T7, T8, T17). Each runs in
/// its own process; the supervisor (Tests/ReliabilityTests, tools/soak) owns kills and checks.
///
///   rel-crashwriter DIR SEED ID KEYS POINT   ACKed stores, then dies inside a store at POINT
///                                            (rename: after the temp write; dirfsync: after the
///                                            rename; commit: inside the commit; queued, claimed,
///                                            committed, settled: the group commit across
///                                            processes, at the first store that gets there;
///                                            none: forever)
///   rel-compactor DIR MILLIS GRACE_MS [TARGET] compacts every MILLIS until killed
///   rel-compactonce DIR TARGET POINT         one compaction to TARGET entry bytes in batches of
///                                            4; with POINT claimed or committed it dies when an
///                                            eviction batch carries another process's store
///   rel-queue-and-die DIR KEY SEQ            queues one store for another process's commit, dies
///   rel-openclose DIR N                      opens, uses and closes the directory N times
///   rel-readloop DIR KEYS MAXREADERS         lookups forever (killed inside a read by the test)
///   rel-readonce DIR MAXREADERS              opens, prints READY, waits for a stdin line, looks up
///   rel-mapwriter DIR ID SECONDS INITIAL MAX distinct keys until SECONDS or .indexFull (then rereads)
///   rel-diskfull DIR FILLER                  T5 inside a small tmpfs: stores evict to make room
///   rel-freefloor DIR BYTES                  T5: stores under a free-space floor keep it free
///   rel-fullcompact DIR FILLER               T5: compaction on a file system the cache filled
///   rel-forklease DIR NAME                   takes a lease, forks a child that lives on, exits
///   rel-trylease DIR NAME                    prints the result of one attempt to take a lease
///   rel-readpool DIR N                       N concurrent read transactions, then READY, waits
///   rel-rss DIR MIB                          a streamed MIB body is refused; RSS stays bounded
///   rel-neighbour DIR SECONDS SEED           a service's traffic under a hostile neighbour
///   rel-lockchurn DIR COUNT                  takes and drops COUNT flocks in a loop (LockChurnWorker.swift)
///   rel-churn DIR ID SECONDS                 stores and removes, printing each (ChurnWorker.swift)
///   rel-soak-mixed DIR SEED SECONDS KEYS ID  mixed load that tolerates compaction evictions
///   rel-relaxed-writer DIR SEED ID KEYS      `writer` with `.relaxed` durability (never closes)
///   rel-relaxed-put DIR KEY SEQ SIZE         one `.relaxed` store, then a clean close
///   rel-relaxed-hold DIR N                   `.relaxed` stores of held-0…held-N-1, then READY,
///                                            holds the directory until a line on stdin
/// Exit codes as in Worker.swift, plus 77 for a deliberate death at a kill point.
enum ReliabilityWorker {
    static func run(_ args: [String]) -> Int32 {
        let dir = args[2]
        do {
            switch args[1] {
            case "rel-crashwriter":
                try crashWriter(dir, seed: UInt64(args[3])!, id: UInt64(args[4])!, keys: Int(args[5])!, point: args[6])
            case "rel-compactor":
                try compactor(
                    dir, millis: UInt32(args[3])!, graceMillis: Int(args[4])!,
                    target: args.count > 5 ? Int(args[5]) : nil)
            case "rel-compactonce": try compactOnce(dir, target: Int(args[3])!, point: args[4])
            case "rel-rewriter": try rewriter(dir, millis: UInt32(args[3])!, seed: UInt64(args[4])!, point: args[5])
            case "rel-queue-and-die": try queueAndDie(dir, key: args[3], seq: UInt64(args[4])!)
            case "rel-openclose": try openClose(dir, times: Int(args[3])!)
            case "rel-upgrade":
                // Upgrades the directory's format; with NTH > 0 the process dies at its NTH commit
                // (a kill -9 inside the upgrade, between two of its transactions).
                let store = try CacheStore(directory: dir)
                if let nth = Int(args[3]), nth > 0 { InjectedFault.commit.inject(nth: nth, abortProcess: true) }
                let done = try store.upgradeDirectoryFormat()
                print(
                    "UPGRADED \(done.formatBefore) \(done.formatAfter) \(done.rekeyedEntries) \(done.droppedStoredTimeKeys)"
                )
            case "rel-readloop": try readLoop(dir, keys: Int(args[3])!, maxReaders: Int(args[4])!)
            case "rel-readonce": try readOnce(dir, maxReaders: Int(args[3])!)
            case "rel-mapwriter":
                try mapWriter(
                    dir, id: Int(args[3])!, seconds: Double(args[4])!, initial: Int(args[5])!, maximum: Int(args[6])!)
            case "rel-diskfull": return try diskFull(dir, filler: args[3])
            case "rel-freefloor": return try freeFloor(dir, floor: Int(args[3])!)
            case "rel-fullcompact": return try fullCompaction(dir, filler: args[3])
            case "rel-forklease": return try forkLease(dir, name: args[3])
            case "rel-readpool": return try readPool(dir, count: UInt32(args[3])!)
            case "rel-trylease": return try tryLease(dir, name: args[3])
            case "rel-fsize": return try fileSizeLimit(dir)
            case "rel-rss": return try rss(dir, mebibytes: Int(args[3])!)
            case "rel-neighbour": return NeighbourWorker.run(args)
            case "rel-lockchurn": return LockChurnWorker.run(args)
            case "rel-churn": return ChurnWorker.run(args)
            case "rel-soak-mixed":
                try soakMixed(
                    dir, seed: UInt64(args[3])!, seconds: Double(args[4])!, keys: Int(args[5])!, id: Int(args[6])!)
            case "rel-relaxed-writer":
                try Worker.writer(
                    CacheStore(directory: dir, configuration: relaxed), seed: UInt64(args[3])!, id: UInt64(args[4])!,
                    keys: Int(args[5])!)
            case "rel-relaxed-put":
                let store = try CacheStore(directory: dir, configuration: relaxed)
                try store.store(
                    RecordDescriptor(key: Array(args[3].utf8)),
                    body: TestBody.make(key: args[3], seq: UInt64(args[4])!, size: Int(args[5])!))
            case "rel-relaxed-hold":
                let store = try CacheStore(directory: dir, configuration: relaxed)
                for i in 0..<Int(args[3])! {
                    let key = "held-\(i)"
                    try store.store(
                        RecordDescriptor(key: Array(key.utf8)), body: TestBody.make(key: key, seq: 1, size: 3000))
                }
                print("READY")
                fflush(nil)
                _ = readLine()
            default: return say(1, "unknown command \(args[1])")
            }
        } catch {
            return say(2, "cache error: \((error as? CacheError)?.detailedDescription() ?? "\(error)")")
        }
        fflush(nil)
        return 0
    }

    static var relaxed: CacheStoreConfiguration {
        var configuration = CacheStoreConfiguration()
        configuration.durability = .relaxed
        return configuration
    }

    @discardableResult
    static func say(_ code: Int32, _ message: String) -> Int32 {
        FileHandle.standardError.write(Data((message + "\n").utf8))
        fflush(nil)
        return code
    }

    static func ack(_ key: String, _ seq: UInt64) {
        print("ACK \(key) \(seq)")
        fflush(nil)
    }

    // MARK: T3 kill points inside store

    /// Stores with acknowledgements; with a kill point, arms `abortProcess` after a seeded number
    /// of stores so the process `_exit(77)`s at exactly that step of the next file-backed store.
    /// Kill points a store of this process may not pass through: its commit (another process's
    /// commit may carry the store) and the group commit's steps.
    static let armedPoints: [String: InjectedFault] = [
        "commit": .commit, "queued": .handoffQueued, "claimed": .handoffClaimed, "committed": .handoffCommitted,
        "settled": .handoffSettled,
    ]

    static func crashWriter(_ dir: String, seed: UInt64, id: UInt64, keys: Int, point: String) throws(CacheError) {
        var configuration = CacheStoreConfiguration()
        if point == "dirfsync" { configuration.durability = .durable } // the directory fsync follows the rename
        let store = try CacheStore(directory: dir, configuration: configuration)
        var rng = SplitMix64(seed: seed)
        var seq = id << 40
        let armAfter = point == "none" ? Int.max : Int(rng.next() % 4)
        var stores = 0
        while true {
            seq += 1
            // Keys 1000… : disjoint from `writer`'s, so "latest acknowledged seq" stays exact.
            let key = Worker.keyName(1000 + Int(rng.next() % UInt64(keys)))
            // These kill points are reached when this process commits (commit; its store may ride
            // in writer A's commit instead), queues a store (queued), commits writer A's queued
            // stores (claimed, committed) or finds without the write lock that writer A's commit
            // carried its store (settled): armed once, they wait in the loop below, storing and
            // acknowledging, until the process gets there.
            if stores == armAfter, let fault = Self.armedPoints[point] {
                fault.inject(nth: 1, abortProcess: true)
            } else if stores == armAfter {
                switch point {
                case "rename": InjectedFault.rename.inject(nth: 1, abortProcess: true)
                // 1: temp fdatasync, 2: bodies/xx
                case "dirfsync": InjectedFault.fsync.inject(nth: 2, abortProcess: true)
                default: break
                }
                // A file-backed body, so every kill point is on this store's path.
                try store.store(
                    RecordDescriptor(key: Array(key.utf8)), body: TestBody.make(key: key, seq: seq, size: 30_000))
                say(3, "kill point \(point) was not reached")
                exit(3)
            }
            try store.store(
                RecordDescriptor(key: Array(key.utf8)),
                body: TestBody.make(key: key, seq: seq, size: Worker.size(&rng, max: 64 << 10)))
            ack(key, seq)
            stores += 1
        }
    }

    /// Queues one store for the group commit across processes and dies there (exit 77), before
    /// it takes the index's write lock: the store is in no index until another process commits.
    static func queueAndDie(_ dir: String, key: String, seq: UInt64) throws(CacheError) {
        let store = try CacheStore(directory: dir)
        InjectedFault.handoffQueued.inject(nth: 1, abortProcess: true)
        try store.store(RecordDescriptor(key: Array(key.utf8)), body: TestBody.make(key: key, seq: seq, size: 30_000))
        say(3, "the store was not queued for another process's commit")
        exit(3)
    }

    /// A cron-like compactor in a loop (T3 second half, T8). Without a target it only walks the
    /// index and sweeps orphans older than the grace period, so "acknowledged ⇒ present" holds.
    static func compactor(_ dir: String, millis: UInt32, graceMillis: Int, target: Int?) throws(CacheError) {
        let store = try CacheStore(directory: dir)
        var policy = CompactionPolicy(targetBytes: target)
        policy.gracePeriod = .milliseconds(graceMillis)
        policy.waitForLock = true
        policy.batchSize = 200
        var runs = 0, evicted = 0, orphans = 0, temps = 0
        while true {
            let report = try store.compact(policy)
            runs += 1
            evicted += report.evictedEntries
            orphans += report.orphanFiles
            temps += report.tempFiles
            print("COMPACTED run=\(runs) evicted=\(evicted) orphans=\(orphans) temps=\(temps)")
            fflush(nil)
            usleep(millis * 1000)
        }
    }

    /// One compaction in small batches, so that stores of other processes queue behind many of
    /// them; armed at a group-commit kill point, it dies when one of its batches carries a store.
    static func compactOnce(_ dir: String, target: Int, point: String) throws(CacheError) {
        let store = try CacheStore(directory: dir)
        if let fault = armedPoints[point] { fault.inject(nth: 1, abortProcess: true) }
        var policy = CompactionPolicy(targetBytes: target)
        policy.waitForLock = true
        policy.batchSize = 4
        let report = try store.compact(policy)
        print("COMPACTED evicted=\(report.evictedEntries) carried=\(report.carriedStores)")
    }

    /// Rewrites the index into a new generation every MILLIS (what compaction does to shrink
    /// the index file), dying at a kill point of the switch after a seeded number of rewrites:
    /// `snapshot` (copied from read snapshots while every process journals, not caught up),
    /// `caught-up` (the journal replayed without the lock), `copied` (the last rows replayed
    /// under the write lock, not published), `published` (every process is told, the old
    /// index's write lock still held), `switched` (lock released, old files not yet removed).
    static func rewriter(_ dir: String, millis: UInt32, seed: UInt64, point: String) throws(CacheError) {
        let store = try CacheStore(directory: dir)
        var rng = SplitMix64(seed: seed)
        let armAfter = point == "none" ? Int.max : Int(rng.next() % 3)
        let nth = ["snapshot": 1, "caught-up": 2, "copied": 3, "published": 4, "switched": 5][point] ?? 0
        var runs = 0
        while true {
            if runs == armAfter {
                InjectedFault.rewrite.inject(nth: nth, abortProcess: true)
                try store.rewriteIndex()
                say(3, "kill point \(point) was not reached")
                exit(3)
            }
            try store.rewriteIndex()
            runs += 1
            print("REWRITTEN run=\(runs)")
            fflush(nil)
            usleep(millis * 1000)
        }
    }

    // MARK: T2 open storm, T7 reader slots

    static func openClose(_ dir: String, times: Int) throws(CacheError) {
        for i in 0..<times {
            let store = try CacheStore(directory: dir)
            let key = "open-\(getpid())-\(i % 5)"
            try store.store(
                RecordDescriptor(key: Array(key.utf8)), body: TestBody.make(key: key, seq: UInt64(i), size: 100))
            guard let hit = try store.record(for: Array(key.utf8)),
                case .valid(UInt64(i)) = TestBody.check(hit.body ?? [], expectedKey: key)
            else {
                exit(say(3, "open \(i): own store not readable"))
            }
        }
        print("OPENED \(times)")
    }

    static func readerConfiguration(_ maxReaders: Int) -> CacheStoreConfiguration {
        var configuration = CacheStoreConfiguration()
        configuration.maximumReaders = maxReaders
        return configuration
    }

    static func readLoop(_ dir: String, keys: Int, maxReaders: Int) throws(CacheError) {
        let store = try CacheStore(directory: dir, configuration: readerConfiguration(maxReaders))
        var rng = SplitMix64(seed: UInt64(getpid()))
        var reads = 0
        while true {
            let key = Worker.keyName(Int(rng.next() % UInt64(keys)))
            if let hit = try store.record(for: Array(key.utf8)),
                case .invalid(let why) = TestBody.check(hit.body ?? [], expectedKey: key)
            {
                exit(say(3, "TORN \(key): \(why)"))
            }
            reads += 1
            if reads == 1 {
                print("READY")
                fflush(nil)
            }
        }
    }

    /// Opens before the stale slots pile up, then takes its first reader slot on request: the
    /// `MDB_READERS_FULL` → `mdb_reader_check` → retry path, not the one at open.
    static func readOnce(_ dir: String, maxReaders: Int) throws(CacheError) {
        let store = try CacheStore(directory: dir, configuration: readerConfiguration(maxReaders))
        print("READY")
        fflush(nil)
        _ = readLine()
        let hit = try store.record(for: Array(Worker.keyName(0).utf8))
        print(hit == nil ? "MISS" : "HIT")
    }

    // MARK: T6 map growth and the hard cap

    static func mapWriter(_ dir: String, id: Int, seconds: Double, initial: Int, maximum: Int) throws(CacheError) {
        var configuration = CacheStoreConfiguration()
        configuration.initialIndexBytes = initial
        configuration.maximumIndexBytes = maximum
        let store = try CacheStore(directory: dir, configuration: configuration)
        var rng = SplitMix64(seed: UInt64(id) &* 7919 &+ UInt64(getpid()))
        let deadline = Date().addingTimeInterval(seconds)
        var seq = UInt64(id) << 40
        var lastMap = 0, mapChanges = 0
        var acked: [(String, UInt64)] = []
        while Date() < deadline {
            seq += 1
            let key = "map-\(id)-\(seq & 0xffff_ffff)"
            // Incompressible ~1.5 KiB bodies stay inline: the index itself grows.
            var body = TestBody.make(key: key, seq: seq, size: 0)
            for _ in 0..<(1200 + Int(rng.next() % 400)) / 8 { withUnsafeBytes(of: rng.next()) { body += $0 } }
            do {
                try store.store(
                    RecordDescriptor(key: Array(key.utf8), userInfo: body),
                    body: TestBody.make(key: key, seq: seq, size: 64))
            } catch CacheError.Code.indexFull {
                // Reads keep working at the cap: every acknowledged entry of ours is readable.
                for (k, s) in acked {
                    guard let hit = try store.record(for: Array(k.utf8)),
                        case .valid(s) = TestBody.check(hit.body ?? [], expectedKey: k)
                    else {
                        exit(say(3, "after indexFull: \(k) not readable"))
                    }
                }
                print(
                    "INDEXFULL acked=\(acked.count) map=\(try store.statistics().indexMapBytes) reread=\(acked.count)")
                return
            }
            acked.append((key, seq))
            ack(key, seq)
            let map = try store.statistics().indexMapBytes
            if map != lastMap {
                if lastMap != 0 { mapChanges += 1 }
                lastMap = map
                print("MAP \(map)")
            }
        }
        print("DONE stores=\(acked.count) mapChanges=\(mapChanges) map=\(lastMap)")
    }

    // MARK: T5 disk full

    /// Runs inside a small tmpfs: bodies until ENOSPC (a), index commits until ENOSPC (b), then
    /// space is freed and stores work again (c). Every acknowledged entry stays bit-exact.
    static func diskFull(_ dir: String, filler: String) throws -> Int32 {
        var configuration = CacheStoreConfiguration()
        configuration.initialIndexBytes = 1 << 20
        let store = try CacheStore(directory: dir, configuration: configuration)
        var acked: [(String, UInt64)] = []
        var rng = SplitMix64(seed: 5)
        func incompressible(_ key: String, _ seq: UInt64, _ size: Int) -> [UInt8] {
            var body = TestBody.make(key: key, seq: seq, size: 0)
            for _ in 0..<size / 8 { withUnsafeBytes(of: rng.next()) { body += $0 } }
            return body
        }
        func seqBytes(_ s: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: s >> (8 * $0)) } }
        /// Entries may have been evicted to make room; every one still there is the one stored.
        func checkHits(_ stage: String) throws -> Int? {
            var present = 0
            for (k, s) in acked {
                guard let hit = try store.record(for: Array(k.utf8)) else { continue }
                let body = hit.body ?? []
                // Bodies here are TestBody headers + random bytes: check key and seq only.
                guard body.count > 12, Array(body[0..<4]) == TestBody.magic, body.contains(seqBytes(s)) else {
                    say(3, "\(stage): WRONG BODY \(k)")
                    return nil
                }
                present += 1
            }
            return present
        }
        func tmpCount() -> Int { (try? FileManager.default.contentsOfDirectory(atPath: dir + "/tmp").count) ?? -1 }
        // (a) The cache alone outgrows the file system (its own cap is far larger): 160 bodies of
        // 256 KiB into 16 MiB. Every store succeeds; the least recently used entries make room.
        var seq: UInt64 = 0
        var failed: [String] = []
        for _ in 0..<160 {
            seq += 1
            let key = "full-\(seq)"
            do {
                try store.store(RecordDescriptor(key: Array(key.utf8)), body: incompressible(key, seq, 256 << 10))
                acked.append((key, seq))
            } catch { failed.append(error.code.name) }
        }
        let evictedA = try store.statistics().evictions
        guard failed.isEmpty else { return say(3, "(a) stores failed on a full file system: \(failed)") }
        guard evictedA > 0 else { return say(3, "(a) nothing was evicted: did the file system fill?") }
        guard let presentA = try checkHits("(a)") else { return 3 }
        for (k, _) in acked.suffix(5) where try store.record(for: Array(k.utf8)) == nil {
            return say(3, "(a) the newest entry \(k) is gone")
        }
        guard tmpCount() == 0 else { return say(3, "(a) temp files left: \(tmpCount())") }
        print("A full: 160 stores ok, evicted=\(evictedA) present=\(presentA)")

        // (b) Other data fills the rest of the file system; inline stores (no files) grow only the
        // index. Their commits make room by evicting body files while there are any; after that
        // a store is refused with .diskFull, never another error, and nothing read is wrong.
        fillFileSystem(with: filler)
        var indexError: CacheError?
        var inlineStores = 0
        while indexError == nil && inlineStores < 200_000 {
            seq += 1
            let key = "inline-\(seq)"
            do {
                try store.store(
                    RecordDescriptor(key: Array(key.utf8), userInfo: incompressible(key, seq, 1500)),
                    body: TestBody.make(key: key, seq: seq, size: 40))
                acked.append((key, seq))
                inlineStores += 1
            } catch { indexError = error }
        }
        guard let indexError, indexError.code == .diskFull else {
            return say(
                3,
                "(b) expected diskFull, got \(indexError?.detailedDescription() ?? "none after \(inlineStores) stores")"
            )
        }
        let evictedB = try store.statistics().evictions - evictedA
        print(
            "B diskFull after \(inlineStores) inline stores, evicted=\(evictedB) op=\(indexError.cause?.operation ?? "?")"
        )
        guard try checkHits("(b)") != nil else { return 3 }
        guard tmpCount() == 0 else { return say(3, "(b) temp files left: \(tmpCount())") }

        // (d) The other data goes: stores work again (as large as the space it gave back allows),
        // the index is not in MDB_PANIC, verify is clean.
        var filled = stat()
        let fillerBytes = stat(filler, &filled) == 0 ? Int(filled.st_size) : 0
        unlink(filler)
        seq += 1
        let big = "after-\(seq)"
        try store.store(
            RecordDescriptor(key: Array(big.utf8)),
            body: incompressible(big, seq, max(min(512 << 10, fillerBytes / 2), 8192)))
        acked.append((big, seq))
        guard try checkHits("(d)") != nil, try store.record(for: Array(big.utf8)) != nil else { return 3 }
        let verified = try store.verify()
        guard !verified.isDamaged, verified.tempFiles == 0 else { return say(3, "(d) verify: \(verified)") }
        print("D ok verified (the other data had \(fillerBytes) bytes)")
        return 0
    }

    /// Other data takes every free byte of the file system: `filler` grows until a write fails.
    static func fillFileSystem(with filler: String) {
        let fd = open(filler, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        var chunk = [UInt8](repeating: 7, count: 4096)
        while chunk.withUnsafeBytes({ write(fd, $0.baseAddress, 4096) }) == 4096 {}
        chunk = [1]
        while chunk.withUnsafeBytes({ write(fd, $0.baseAddress, 1) }) == 1 {}
        close(fd)
    }

    /// T5: compaction on a file system the cache's own bodies filled (as a proxy with a large
    /// `diskCapacity` fills a shared disk) succeeds: its eviction commit may not fit, so stores and
    /// compaction unlink bodies before they commit; a rewrite that does not fit is skipped, not
    /// fatal. Stores work after it and nothing read is wrong.
    static func fullCompaction(_ dir: String, filler: String) throws -> Int32 {
        let store = try CacheStore(directory: dir)
        var rng = SplitMix64(seed: 13)
        var acked: [String: UInt64] = [:]
        func put(_ seq: UInt64, size: Int) throws {
            let key = "fill-\(seq)"
            var body = TestBody.make(key: key, seq: seq, size: 0)
            for _ in 0..<size / 8 { withUnsafeBytes(of: rng.next()) { body += $0 } }
            try store.store(RecordDescriptor(key: Array(key.utf8)), body: body)
            acked[key] = seq
        }
        for seq in 1...100 { try put(UInt64(seq), size: 256 << 10) }
        fillFileSystem(with: filler)
        var policy = CompactionPolicy(targetBytes: 2 << 20)
        policy.gracePeriod = .zero
        let report = try store.compact(policy)
        guard report.evictedEntries > 0 else { return say(3, "compaction evicted nothing") }
        try put(1000, size: 64 << 10)
        for (key, seq) in acked {
            guard let hit = try store.record(for: Array(key.utf8)) else { continue }
            // Bodies here are a TestBody header (key, seq) followed by random bytes.
            let header = TestBody.make(key: key, seq: seq, size: 0)
            guard (hit.body ?? []).starts(with: header) else { return say(3, "WRONG BODY \(key)") }
        }
        print(
            "COMPACTED on a full file system: evicted=\(report.evictedEntries) rewriteSkipped=\(report.indexRewriteSkippedForSpace)"
        )
        return 0
    }

    /// T7: a process that holds a request lease forks a child (as a service spawning a helper
    /// would) and dies. The child lives on, but must not keep the lease: its waiters would wait
    /// for a fetch nobody makes. Prints the child's pid; the child exits after 20 s.
    static func forkLease(_ dir: String, name: String) throws -> Int32 {
        let store = try CacheStore(directory: dir)
        guard case .acquired = try store.tryLease(Array(name.utf8)) else { return say(3, "lease not acquired") }
        fflush(nil)
        let child = fork()
        if child == 0 {
            sleep(20)
            _exit(0)
        }
        print("CHILD \(child)")
        fflush(nil)
        _exit(0) // dies holding the lease, as a crash would
    }

    /// T7: after `count` concurrent lookups a process keeps a bounded pool of reader slots.
    static func readPool(_ dir: String, count: UInt32) throws -> Int32 {
        let store = try CacheStore(directory: dir)
        try store.debugFillReadPool(count)
        print("READY")
        fflush(nil)
        _ = readLine()
        return 0
    }

    static func tryLease(_ dir: String, name: String) throws -> Int32 {
        let store = try CacheStore(directory: dir)
        let attempt = try store.tryLease(Array(name.utf8))
        print("LEASE \(attempt)")
        if case .acquired = attempt { try store.releaseLease(Array(name.utf8)) }
        return 0
    }

    /// T5 with a free-space floor: 100 stores of 256 KiB on a small file system never leave less
    /// than the floor free (less one store's worth of index growth), and every store succeeds.
    static func freeFloor(_ dir: String, floor: Int) throws -> Int32 {
        var configuration = CacheStoreConfiguration()
        configuration.minimumFreeBytes = floor
        let store = try CacheStore(directory: dir, configuration: configuration)
        var rng = SplitMix64(seed: 9)
        var lowest = Int.max
        for seq in 1...100 {
            let key = "floor-\(seq)"
            var body = TestBody.make(key: key, seq: UInt64(seq), size: 0)
            for _ in 0..<(256 << 10) / 8 { withUnsafeBytes(of: rng.next()) { body += $0 } }
            try store.store(RecordDescriptor(key: Array(key.utf8)), body: body)
            var fs = statvfs()
            guard statvfs(dir, &fs) == 0 else { return say(3, "statvfs failed") }
            lowest = min(lowest, Int(fs.f_bavail) * Int(fs.f_frsize))
        }
        // The floor is held before each store; what that store's own index pages take comes after.
        guard lowest >= floor - (512 << 10) else {
            return say(3, "free space fell to \(lowest) bytes under a floor of \(floor)")
        }
        print("FLOOR ok floor=\(floor) lowestFree=\(lowest) evicted=\(try store.statistics().evictions)")
        return 0
    }

    /// T5 variant: RLIMIT_FSIZE with SIGXFSZ ignored. A body that would grow a file past the
    /// limit fails with .diskFull (EFBIG), nothing earlier is lost, nothing is left in tmp/, and
    /// stores work again once the limit is lifted.
    static func fileSizeLimit(_ dir: String) throws -> Int32 {
        var configuration = CacheStoreConfiguration()
        configuration.inlineBodyLimitBytes = nil
        let store = try CacheStore(directory: dir, configuration: configuration)
        var rng = SplitMix64(seed: 17)
        func incompressible(_ size: Int) -> [UInt8] {
            var bytes: [UInt8] = []
            bytes.reserveCapacity(size)
            for _ in 0..<size / 8 { withUnsafeBytes(of: rng.next()) { bytes += $0 } }
            return bytes
        }
        var stored: [String: [UInt8]] = [:]
        for i in 0..<20 {
            let body = incompressible(64 << 10)
            try store.store(RecordDescriptor(key: Array("before-\(i)".utf8)), body: body)
            stored["before-\(i)"] = body
        }
        signal(SIGXFSZ, SIG_IGN)
        var original = rlimit()
        getrlimit(Int32(RLIMIT_FSIZE.rawValue), &original)
        var limited = original
        limited.rlim_cur = 1 << 20
        guard setrlimit(Int32(RLIMIT_FSIZE.rawValue), &limited) == 0 else { return say(3, "setrlimit: \(errno)") }
        var code: CacheError.Code?
        do { try store.store(RecordDescriptor(key: Array("too-big".utf8)), body: incompressible(4 << 20)) } catch {
            code = error.code
        }
        guard code == .diskFull else {
            return say(3, "expected diskFull past RLIMIT_FSIZE, got \(String(describing: code))")
        }
        let temps = (try? FileManager.default.contentsOfDirectory(atPath: dir + "/tmp").count) ?? -1
        guard temps == 0 else { return say(3, "temp files left: \(temps)") }
        guard try store.record(for: Array("too-big".utf8)) == nil else { return say(3, "a refused store is visible") }
        setrlimit(Int32(RLIMIT_FSIZE.rawValue), &original)
        let after = incompressible(4 << 20)
        try store.store(RecordDescriptor(key: Array("too-big".utf8)), body: after)
        stored["too-big"] = after
        for (key, body) in stored {
            guard try store.record(for: Array(key.utf8))?.body == body else { return say(3, "LOST or TORN \(key)") }
        }
        print("FSIZE diskFull=yes temps=0 entries=\(stored.count) verified")
        return 0
    }

    // MARK: T17 bounded memory for a streamed body

    static func residentKiB(_ field: String) -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return -1 }
        for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? -1
        }
        return -1
    }

    static func rss(_ dir: String, mebibytes: Int) throws -> Int32 {
        var configuration = CacheStoreConfiguration()
        configuration.maximumBodyBytes = 64 << 20
        let store = try CacheStore(directory: dir, configuration: configuration)
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        var rng = SplitMix64(seed: 17)
        var writer = try store.makeBodyWriter()
        // Warm up, then reset the high-water mark (Linux: "5" to clear_refs resets VmHWM).
        try writer.append(chunk)
        if let f = fopen("/proc/self/clear_refs", "w") { fputs("5", f); fclose(f) }
        let before = residentKiB("VmRSS")
        var appended = chunk.count
        var refusal: CacheError?
        while appended < mebibytes << 20 {
            for i in stride(from: 0, to: chunk.count, by: 8) {
                let r = rng.next()
                withUnsafeBytes(of: r) { for j in 0..<8 { chunk[i + j] = $0[j] % 64 &+ 32 } }
            }
            do { try writer.append(chunk) } catch { refusal = error; break }
            appended += chunk.count
        }
        let peak = residentKiB("VmHWM")
        _ = consume writer
        let temps = (try? FileManager.default.contentsOfDirectory(atPath: dir + "/tmp").count) ?? -1
        print(
            "RSS beforeKiB=\(before) peakKiB=\(peak) growthKiB=\(peak - before) appendedMiB=\(appended >> 20) refused=\(refusal?.code.name ?? "no") temps=\(temps)"
        )
        guard refusal?.code == .tooLarge else {
            return say(3, "not refused: \(refusal?.detailedDescription() ?? "accepted")")
        }
        guard temps == 0 else { return say(3, "temp file left after refusal") }
        guard try store.statistics().entries == 0 else { return say(3, "something was published") }
        return 0
    }

    // MARK: Soak (T2/T8 with eviction)

    /// Like `mixed`, but a compactor may evict: a miss is always allowed, a hit must be whole and
    /// must not go back past what this process itself last stored and saw.
    static func soakMixed(_ dir: String, seed: UInt64, seconds: Double, keys: Int, id: Int) throws(CacheError) {
        let store = try CacheStore(directory: dir)
        var rng = SplitMix64(seed: seed)
        let deadline = Date().addingTimeInterval(seconds)
        var ops = 0, hits = 0, puts = 0, removes = 0
        var seq = UInt64(id) << 40
        while Date() < deadline {
            ops += 1
            let n = rng.next() % 4 == 0 ? Int(rng.next() % 10) : Int(rng.next() % UInt64(keys))
            let key = Worker.keyName(n)
            let roll = rng.next() % 100
            if roll < 60 {
                if let hit = try store.record(for: Array(key.utf8)) {
                    hits += 1
                    if case .invalid(let why) = TestBody.check(hit.body ?? [], expectedKey: key) {
                        exit(say(3, "TORN \(key): \(why) seed=\(seed)"))
                    }
                }
            } else if roll < 90 {
                seq += 1
                try store.store(
                    RecordDescriptor(key: Array(key.utf8)),
                    body: TestBody.make(key: key, seq: seq, size: Worker.size(&rng, max: 256 << 10)))
                puts += 1
            } else {
                try store.remove(key: Array(key.utf8))
                removes += 1
            }
        }
        print("DONE ops=\(ops) hits=\(hits) puts=\(puts) removes=\(removes)")
    }
}
