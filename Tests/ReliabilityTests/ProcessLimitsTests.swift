import Foundation
import SharedURLCacheStore
import Synchronization
import Testing
import TestProcess

extension Reliability {
    /// docs/Reliability.md T2 (open storm), T6 (map growth and cap), T7 (reader slots, tasks).
    @Suite struct ProcessLimits {
        @Test("T2 open storm: 16 processes open, use and close the directory 50 times each")
        func openStorm() throws {
            let scratch = Scratch()
            // No pre-creation: the first opens race on creating the directory too.
            let storm = try (0..<16).map { _ in try Child(["rel-openclose", scratch.cache, "50"]) }
            var opened = 0
            for (i, child) in storm.enumerated() {
                let result = child.finish()
                #expect(result.status == 0, "process \(i): \(result.err)")
                if result.out.contains("OPENED 50") { opened += 50 }
            }
            #expect(opened == 800)
            print("T2 open storm: processes=16 opens=\(opened) errors=\(800 - opened)")
        }

        @Test("first open: 16 processes open a new, empty directory at once, 20 times over; every one opens it")
        func concurrentFirstOpen() throws {
            let rounds = soak ? 200 : 20
            var failures: [String] = []
            for round in 0..<rounds {
                let scratch = Scratch()
                let storm = try (0..<16).map { _ in try Child(["rel-openclose", scratch.cache, "1"]) }
                for (i, child) in storm.enumerated() {
                    let result = child.finish()
                    if result.status != 0 || !result.out.contains("OPENED 1") {
                        failures.append("round \(round) process \(i): \(result.err)")
                    }
                }
                #expect(
                    try CacheStore(directory: scratch.cache).statistics().entries == 16,
                    "round \(round): every process's store is there")
            }
            #expect(failures.isEmpty, "\(failures.prefix(3))")
            print("first open: rounds=\(rounds) processes=16 failures=\(failures.count)")
        }

        @Test("T6 map growth: 2 writers from a 1 MiB map grow it together; every ACK readable")
        func mapGrowth() throws {
            let scratch = Scratch()
            let dir = scratch.cache, ackFile = scratch.root + "/acks"
            let seconds = soak ? "60" : "6"
            let writers = try (0..<2).map {
                try Child(["rel-mapwriter", dir, String($0), seconds, String(1 << 20), String(64 << 20)])
            }
            var maps: Set<Int> = [], growthLines = 0, acked = 0
            for (i, writer) in writers.enumerated() {
                let result = writer.finish()
                #expect(result.status == 0, "writer \(i): \(result.err)")
                acked += AckFile(ackFile).append(result.out)
                for line in result.out.split(separator: "\n") where line.hasPrefix("MAP ") {
                    growthLines += 1
                    maps.insert(Int(line.dropFirst(4)) ?? 0)
                }
            }
            let verify = try Child.run(["verify", dir, ackFile])
            #expect(verify.status == 0, "\(verify.err)")
            let finalMap = try CacheStore(directory: dir).statistics().indexMapBytes
            #expect(finalMap > 1 << 20, "the map grew")
            #expect(maps.count >= 2, "the writers saw the map change under them: \(maps.sorted())")
            print(
                "T6 growth: writers=2 acked=\(acked) mapSizesSeen=\(maps.sorted()) sizeChangesSeen=\(growthLines) finalMap=\(finalMap)"
            )
        }

        @Test("T6 hard cap: at a fixed 1 MiB map both writers get .indexFull, reads keep working")
        func mapCap() throws {
            let scratch = Scratch()
            let dir = scratch.cache, ackFile = scratch.root + "/acks"
            let writers = try (0..<2).map {
                try Child(["rel-mapwriter", dir, String($0), "60", String(1 << 20), String(1 << 20)])
            }
            var full = 0, acked = 0
            for (i, writer) in writers.enumerated() {
                let result = writer.finish()
                #expect(result.status == 0, "writer \(i): \(result.err)")
                acked += AckFile(ackFile).append(result.out)
                if result.out.contains("INDEXFULL") { full += 1 }
            }
            #expect(full == 2, "both writers reached the cap and reread their entries")
            // A new store is refused with .indexFull; removing entries makes room again. (The map
            // cap is per process: a process opened with a larger maximumIndexBytes would grow the
            // shared map, so the cross-process verify comes last.)
            let store = try CacheStore(
                directory: dir,
                configuration: {
                    var c = CacheStoreConfiguration(); c.initialIndexBytes = 1 << 20; c.maximumIndexBytes = 1 << 20;
                    return c
                }())
            var refused: CacheError?
            do {
                for i in 0..<50 {
                    try store.store(
                        RecordDescriptor(
                            key: Array("extra-\(i)".utf8), userInfo: [UInt8](repeating: UInt8(i), count: 1800)),
                        body: [1])
                }
            } catch { refused = error }
            #expect(refused?.code == .indexFull, "\(refused.map { $0.detailedDescription() } ?? "accepted")")
            #expect(try store.statistics().indexMapBytes == 1 << 20)
            let text = try String(contentsOfFile: ackFile, encoding: .utf8)
            let keys = text.split(separator: "\n").filter { $0.contains(" map-0-") }.map {
                String($0.split(separator: " ")[1])
            }
            var removeErrors: [String] = []
            for key in keys {
                do { try store.remove(key: Array(key.utf8)) } catch { removeErrors.append(error.code.name) }
            }
            // Some of these removes may fail with .indexFull (see removesAtTheCap); enough succeed.
            var storeError: CacheError?
            do {
                try store.store(
                    RecordDescriptor(key: Array("after-remove".utf8)), body: [UInt8](repeating: 9, count: 1000))
            } catch { storeError = error }
            #expect(
                storeError == nil,
                "after removing \(keys.count) entries: \(storeError.map { $0.detailedDescription() } ?? "")")
            #expect(try store.record(for: Array("after-remove".utf8))?.body == [UInt8](repeating: 9, count: 1000))
            let removed = Set(keys)
            let remaining = text.split(separator: "\n").filter {
                !removed.contains(String($0.split(separator: " ")[1]))
            }
            try remaining.map { $0 + "\n" }.joined().write(toFile: ackFile, atomically: true, encoding: .utf8)
            let verify = try Child.run(["verify", dir, ackFile])
            #expect(verify.status == 0, "\(verify.err)")
            print("T6 cap: writers=2 acked=\(acked) bothIndexFull=\(full == 2) storeAfterRemove=ok")
        }

        @Test("T6 at the cap every remove succeeds (a full index can always be shrunk)")
        func removesAtTheCap() throws {
            let scratch = Scratch()
            let dir = scratch.cache
            let writers = try (0..<2).map {
                try Child(["rel-mapwriter", dir, String($0), "60", String(1 << 20), String(1 << 20)])
            }
            let outputs = writers.map { $0.finish().out }
            var c = CacheStoreConfiguration()
            c.initialIndexBytes = 1 << 20
            c.maximumIndexBytes = 1 << 20
            let store = try CacheStore(directory: dir, configuration: c)
            let keys = outputs.joined().split(separator: "\n").filter { $0.hasPrefix("ACK ") }.map {
                String($0.split(separator: " ")[1])
            }
            var failures = 0
            for key in keys { do { try store.remove(key: Array(key.utf8)) } catch { failures += 1 } }
            #expect(failures == 0, "\(failures) of \(keys.count) removes failed with the index at its cap")
        }

        @Test("T6 at the cap a remove succeeds while another thread's stores are refused beside it")
        func removesBesideRefusedStores() throws {
            let scratch = Scratch()
            var configuration = CacheStoreConfiguration()
            configuration.initialIndexBytes = 1 << 20
            configuration.maximumIndexBytes = 1 << 20
            let store = try CacheStore(directory: scratch.cache, configuration: configuration)
            @Sendable func descriptor(_ key: String) -> RecordDescriptor {
                RecordDescriptor(key: Array(key.utf8), userInfo: [UInt8](repeating: 7, count: 1800))
            }
            var keys: [String] = []
            var refusal: CacheError?
            while refusal == nil {
                do {
                    try store.store(descriptor("fill-\(keys.count)"), body: [1])
                    keys.append("fill-\(keys.count)")
                } catch { refusal = error }
            }
            #expect(
                refusal?.code == .indexFull && keys.count > 100, "filled \(keys.count): \(String(describing: refusal))")
            // A thread of its own stores new keys all the while: at the cap most are refused, and
            // the group commit puts the removals below in the same transactions as those stores.
            let stop = Atomic<Bool>(false)
            let attempts = Atomic<Int>(0)
            let storer = Thread {
                var i = 0
                while !stop.load(ordering: .acquiring) {
                    _ = try? store.store(descriptor("extra-\(i)"), body: [1])
                    i += 1
                    attempts.add(1, ordering: .releasing)
                }
                attempts.store(-1, ordering: .releasing)
            }
            storer.start()
            while attempts.load(ordering: .acquiring) < 10 { usleep(1000) }
            var failures: [String] = []
            for key in keys {
                do { try store.remove(key: Array(key.utf8)) } catch { failures.append(error.code.name) }
            }
            stop.store(true, ordering: .releasing)
            while attempts.load(ordering: .acquiring) != -1 { usleep(1000) }
            #expect(failures.isEmpty, "\(failures.count) of \(keys.count) removes failed: \(Set(failures))")
            let stillThere = try keys.filter { try store.record(for: Array($0.utf8)) != nil }
            #expect(stillThere.isEmpty, "\(stillThere.count) removed keys still readable")
        }

        @Test("T7 reader slots: 40 processes killed while reading with 16 slots; every new open and read succeeds")
        func staleReaderSlots() throws {
            let scratch = Scratch()
            let dir = scratch.cache
            // Given: one process that creates the directory with 16 slots (LMDB sizes the lock file
            // at the first open and never shrinks it, so every opener here asks for 16) and that
            // opened before the slots go stale. Lookups of misses take reader slots too.
            let late = try Child(["rel-readonce", dir, "16"])
            #expect(late.waitForLine("READY"))
            // When: 40 readers (waves of 16, 16, 8) are killed inside their lookup loops.
            var killed = 0, staleAfterWave1 = -1
            for wave in [16, 16, 8] {
                let readers = try (0..<wave).map { _ in try Child(["rel-readloop", dir, "50", "16"]) }
                let ready = readers.filter { $0.waitForLine("READY") }.count
                #expect(ready >= wave - 2, "readers of a wave of \(wave) got going: \(ready)")
                _ = Child.killed(readers)
                killed += wave
                if wave == 16, killed == 16, let pids = readerTablePids(dir) {
                    staleAfterWave1 = pids.filter { !Child.isAlive($0) }.count
                }
                if killed == 16 {
                    // The process that opened earlier takes its first slot now: MDB_READERS_FULL
                    // → mdb_reader_check → retry.
                    late.send("GO")
                    let result = late.finish()
                    #expect(result.status == 0 && result.out.contains("MISS"), "\(result.err)")
                }
            }
            // Then: 20 new opens (10 at a time) all succeed and read.
            var opens = 0
            for _ in 0..<2 {
                let batch = try (0..<10).map { _ in try Child(["rel-readonce", dir, "16"]) }
                for child in batch {
                    let result = child.finish() // stdin closed: reads at once
                    #expect(result.status == 0 && result.out.contains("MISS"), "\(result.err)")
                    if result.status == 0 { opens += 1 }
                }
            }
            #expect(opens == 20)
            if let pids = readerTablePids(dir) {
                #expect(pids.filter { !Child.isAlive($0) }.isEmpty, "stale slots remain: \(pids)")
            }
            print(
                "T7 slots: maxReaders=16 killedInsideReads=\(killed) staleSlotsBeforeRetry=\(staleAfterWave1) newOpens=\(opens)/20"
            )
        }

        @Test("T7 tasks: 64 Swift tasks look up concurrently in one process; every hit whole")
        func concurrentTasks() async throws {
            let scratch = Scratch()
            let store = try CacheStore(directory: scratch.cache)
            let bodies = (0..<200).map { n in (0..<(100 + n * 37)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ n) } }
            @Sendable func body(_ n: Int) -> [UInt8] { bodies[n] }
            for n in 0..<200 { try store.store(RecordDescriptor(key: Array("task-\(n)".utf8)), body: body(n)) }
            let lookups = soak ? 10_000 : 1_000
            let hits = try await withThrowingTaskGroup(of: Int.self) { group in
                for t in 0..<64 {
                    group.addTask {
                        var rng = Seeded(seed: UInt64(t))
                        var hits = 0
                        for i in 0..<lookups {
                            let n = Int(rng.next() % 220)
                            if t % 8 == 0 && i % 100 == 0 {
                                try store.store(
                                    RecordDescriptor(key: Array("task-\(n % 200)".utf8)), body: body(n % 200))
                            }
                            if let hit = try store.record(for: Array("task-\(n)".utf8)) {
                                guard hit.body == body(n) else {
                                    throw CacheError(.corrupt, "task \(t): wrong body for \(n)")
                                }
                                hits += 1
                            } else if n < 200 {
                                throw CacheError(.notFound, "task \(t): lost task-\(n)")
                            }
                        }
                        return hits
                    }
                }
                return try await group.reduce(0, +)
            }
            #expect(hits > 0)
            print("T7 tasks: tasks=64 lookupsPerTask=\(lookups) hits=\(hits)")
        }
    }
}

extension Reliability.ProcessLimits {
    @Test("T7 reader slots: after 64 concurrent lookups a process keeps at most 16 of the 1,024 shared slots")
    func readerPoolIsBounded() throws {
        let scratch = Scratch()
        let warm = try Child.run(["rel-openclose", scratch.cache, "1"])
        try #require(warm.status == 0, "\(warm.err)")
        let reader = try Child(["rel-readpool", scratch.cache, "64"])
        #expect(reader.waitForLine("READY"))
        defer {
            reader.send("done")
            _ = reader.finish()
        }
        let pids = try #require(readerTablePids(scratch.cache), "mdb_stat is missing")
        let held = pids.filter { $0 == reader.pid }.count
        #expect(held > 0 && held <= 16, "the process holds \(held) reader slots")
        print("T7 pool: slots held after 64 concurrent lookups = \(held)")
    }
}

extension Reliability.ProcessLimits {
    @Test("T2 opens while other processes commit: a growing index is never taken for a damaged one")
    func opensBesideCommitsNeverReplaceTheIndex() throws {
        let scratch = Scratch()
        let warm = try Child.run(["rel-openclose", scratch.cache, "1"])
        try #require(warm.status == 0, "\(warm.err)")
        let seed = runSeed("opens-beside-commits")
        let writers = try (0..<2).map {
            try Child(["mixed", scratch.cache, String(seed &+ UInt64($0)), "4", "5000", String($0), "65536"])
        }
        let openers = try (0..<8).map { _ in try Child(["rel-openclose", scratch.cache, "40"]) }
        for child in openers + writers {
            let result = child.finish()
            #expect(result.status == 0, "\(result.err)")
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: scratch.cache)
        #expect(!names.contains { $0.hasPrefix("damaged-") }, "an index was replaced: \(names)")
    }
}
