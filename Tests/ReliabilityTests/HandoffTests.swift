import Foundation
import SharedURLCacheStore
import Testing
import TestProcess

extension Reliability {
    /// Group commit across processes (docs/Design.md, "Commits"): a store waits for the index's
    /// write lock queued in the `handoff` file, and whichever process commits next takes it into
    /// its transaction. These tests use real processes only.
    @Suite struct Handoff {
        @Test("a store queued by a process that died is committed by another process's commit")
        func queuedStoreRidesInAnotherCommit() throws {
            let scratch = Scratch()
            let dir = scratch.cache
            _ = try Child.run(["put", dir, "first", "1", "2000"])
            // Given: a process that queued a store and died before it took the write lock.
            let queued = try Child.run(["rel-queue-and-die", dir, "queued-key", "7"])
            try #require(queued.status == 77, "the store was not queued: \(queued.status) \(queued.err)")
            #expect(try Child.run(["get", dir, "queued-key"]).status == 4, "committed before anyone committed")
            // When: another process stores.
            let other = try Child.run(["put", dir, "other-key", "1", "2000"])
            try #require(other.status == 0, "\(other.err)")
            // Then: the queued store went in with that commit, body and all, and verify is clean.
            let hit = try Child.run(["get", dir, "queued-key"])
            #expect(hit.status == 0 && hit.out.contains("HIT 7"), "\(hit.status) \(hit.out) \(hit.err)")
            let report = try CacheStore(directory: dir).verify()
            #expect(!report.isDamaged && report.countersMatch, "\(report)")
        }

        @Test(
            "a committer killed with other processes' stores in its transaction or after its commit, or a store's process killed once it found its store carried, loses no acknowledged store",
            arguments: ["claimed", "committed", "settled"])
        func committerDiesAtEachStep(point: String) throws {
            let scratch = Scratch()
            let dir = scratch.cache, acks = AckFile(scratch.root + "/acks")
            _ = try CacheStore(directory: dir)
            var reached = 0
            for round in 0..<6 {
                // Given: writer A storing, and writer B armed to die at `point` as soon as it commits
                // one of A's queued stores.
                // (Each process its own id: sequence numbers only grow from round to round.)
                let writerA = try Child(["writer", dir, String(round), String(round * 2), "40"])
                let writerB = try Child([
                    "rel-crashwriter", dir, String(round &* 31), String(round * 2 + 1), "40", point,
                ])
                // When: B gets there (or 10 s pass).
                let deadline = Date().addingTimeInterval(10)
                while writerB.isRunning && Date() < deadline { usleep(20_000) }
                usleep(100_000) // A goes on after B died: its store B held is committed by A itself
                let b = writerB.killed()
                let a = writerA.killed()
                if b.status == 77 { reached += 1 }
                #expect(writerA.wasSignalled, "writer A stopped: \(a.status) \(a.err)")
                #expect(writerB.wasSignalled || b.status == 77, "writer B: \(b.status) \(b.err)")
                acks.append(a.out)
                acks.append(b.out)
                // Then: every acknowledged store so far is readable, bit-exact, from a new process.
                let verify = try Child.run(["verify", dir, acks.path])
                #expect(verify.status == 0, "round \(round) \(point): \(verify.err)")
            }
            #expect(reached >= 3, "writer B reached \(point) in \(reached) of 6 rounds")
            let report = try CacheStore(directory: dir).verify()
            #expect(!report.isDamaged && report.countersMatch, "\(report)")
            // No slot stays queued once every process is gone and one more store committed: a
            // store its dead process left queued is carried and freed, and one already carried
            // is freed (a slot left queued is never used again).
            try #require(try Child.run(["put", dir, "last", "1", "2000"]).status == 0)
            let queued = try Self.queuedSlots(dir)
            #expect(queued.isEmpty, "\(point): slots still queued \(queued)")
        }

        /// The slots the `handoff` file says are queued (its layout: handoff.c).
        static func queuedSlots(_ dir: String) throws -> [Int] {
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: dir + "/handoff")).prefix(128))
            try #require(bytes.count == 128, "the handoff file is shorter than its states")
            return (0..<16).filter { slot in
                let at = 64 + 4 * slot
                return bytes[at] == 2 && bytes[at + 1] == 0 && bytes[at + 2] == 0 && bytes[at + 3] == 0
            }
        }

        /// Entries "old-0"… of 4 KiB that do not compress, stored and closed before the test's
        /// processes start: the least recently used, which compaction evicts first.
        static func storeOldEntries(_ dir: String, count: Int) throws {
            let store = try CacheStore(directory: dir)
            for i in 0..<count {
                try store.store(
                    RecordDescriptor(key: Array("old-\(i)".utf8)), body: HostileFiles.incompressible(i, size: 4096))
            }
        }

        @Test(
            "a store queued behind a compaction's eviction batch goes in its commit; the compaction killed with it in the batch, or after the commit, loses no store",
            arguments: ["none", "claimed", "committed"])
        func compactionCarriesQueuedStores(point: String) throws {
            let scratch = Scratch()
            let dir = scratch.cache
            // Given: 1,200 entries to evict, and a store queued by a process that died before it
            // took the write lock.
            try Self.storeOldEntries(dir, count: 1200)
            let queued = try Child.run(["rel-queue-and-die", dir, "queued-key", "7"])
            try #require(queued.status == 77, "the store was not queued: \(queued.status) \(queued.err)")
            // When: a compaction evicts (armed at `point`); no other process commits meanwhile.
            let compaction = try Child.run(["rel-compactonce", dir, String(2 << 20), point])
            // Then: its first batch carried the store.
            if point == "none" {
                #expect(compaction.status == 0 && compaction.out.contains("carried=1"), "\(compaction)")
            } else {
                #expect(compaction.status == 77, "the compaction did not reach \(point): \(compaction)")
            }
            // Committed with the batch, or (killed before that commit) by the next commit of anyone.
            let hit = try Child.run(["get", dir, "queued-key"])
            #expect((hit.status == 0) == (point != "claimed"), "\(point): \(hit.status) \(hit.out) \(hit.err)")
            if point == "claimed" {
                try #require(try Child.run(["put", dir, "other-key", "1", "2000"]).status == 0)
                let later = try Child.run(["get", dir, "queued-key"])
                #expect(later.status == 0 && later.out.contains("HIT 7"), "\(later.status) \(later.out) \(later.err)")
            } else {
                #expect(hit.out.contains("HIT 7"), "\(hit.out)")
            }
            let report = try CacheStore(directory: dir).verify()
            #expect(!report.isDamaged && report.countersMatch, "\(report)")
        }

        /// One of four kinds of damage to the `handoff` file, by `step`: garbage over the states
        /// and the first slots, truncated to nothing, truncated into the header, or replaced by a
        /// file of garbage (processes keep the file they opened; a new one is not their layout).
        static func damage(handoff path: String, step: Int) throws {
            var rng = SystemRandomNumberGenerator()
            switch step % 4 {
            case 0:
                let garbage = (0..<20_000).map { _ in UInt8.random(in: 0...255, using: &rng) }
                let handle = try #require(FileHandle(forWritingAtPath: path))
                try handle.seek(toOffset: UInt64.random(in: 0..<64, using: &rng))
                try handle.write(contentsOf: garbage)
                try handle.close()
            case 1: #expect(truncate(path, 0) == 0)
            case 2: #expect(truncate(path, 100) == 0)
            default:
                try? FileManager.default.removeItem(atPath: path)
                FileManager.default.createFile(atPath: path, contents: Data(repeating: 0xA5, count: 300_000))
            }
        }

        @Test(
            "stores of a process storing beside compaction's eviction batches: every acknowledged store kept, also with the handoff file garbled, truncated or replaced meanwhile",
            arguments: [false, true])
        func storesBesideCarryingCompaction(damagingHandoff: Bool) throws {
            let scratch = Scratch()
            let dir = scratch.cache, acks = AckFile(scratch.root + "/acks")
            // Given: entries to evict, stored before any store of the writer, so compaction to the
            // target evicts only them (the least recently used), and the writer storing.
            try Self.storeOldEntries(dir, count: 2000)
            let writer = try Child(["writer", dir, "1", "1", "40"])
            #expect(writer.waitForLines(startingWith: "ACK "), "the writer stored")
            // When: a compaction in batches of 4 runs beside it, carrying what the writer queues
            // behind them, with the handoff file damaged while it runs (or not).
            let compaction = try Child(["rel-compactonce", dir, String(3 << 20), "none"])
            var rounds = 0
            while compaction.isRunning && rounds < 400 {
                usleep(10_000)
                if damagingHandoff { try Self.damage(handoff: dir + "/handoff", step: rounds) }
                rounds += 1
            }
            let compacted = compaction.finish()
            let written = writer.killed()
            // Then: the compaction ran to its end, and every acknowledged store is readable,
            // bit-exact, from a new process.
            #expect(rounds >= 8, "the compaction ended after \(rounds) rounds")
            #expect(compacted.status == 0 && compacted.out.contains("COMPACTED"), "\(compacted)")
            #expect(writer.wasSignalled, "the writer stopped: \(written.status) \(written.err)")
            #expect(acks.append(written.out) > 0, "the writer made progress")
            let verify = try Child.run(["verify", dir, acks.path])
            #expect(verify.status == 0, "\(verify.err)")
            let report = try CacheStore(directory: dir).verify()
            #expect(!report.isDamaged && report.countersMatch, "\(report)")
        }

        @Test("a neighbour keeping the handoff file's commit-in-flight marker fresh slows stores, never stops them")
        func freshInFlightMarker() throws {
            let scratch = Scratch()
            let dir = scratch.cache, acks = AckFile(scratch.root + "/acks")
            _ = try Child.run(["put", dir, "first", "1", "2000"])
            let fd = open(dir + "/handoff", O_WRONLY)
            try #require(fd >= 0, "no handoff file after a store")
            defer { close(fd) }
            // Given: a writer whose every store is queued behind what the marker says is a commit in
            // flight. When: a neighbour writes a commit that began just now, every millisecond, for 2 s.
            let writer = try Child(["writer", dir, "1", "1", "40"])
            let deadline = Date().addingTimeInterval(2)
            while Date() < deadline {
                var now = timespec()
                clock_gettime(CLOCK_MONOTONIC, &now)
                let began = UInt64(now.tv_sec) * 1000 + UInt64(now.tv_nsec) / 1_000_000
                var marker = [UInt8](repeating: 0, count: 16)
                for i in 0..<8 {
                    marker[i] = UInt8(truncatingIfNeeded: UInt64(7) >> (8 * i))
                    marker[8 + i] = UInt8(truncatingIfNeeded: began >> (8 * i))
                }
                #expect(pwrite(fd, marker, 16, 16) == 16)
                usleep(1000)
            }
            // Then: the writer went on storing (each store waits at most its bound for a ticket
            // before it takes the write lock), and every acknowledged store reads back.
            let outcome = writer.killed()
            #expect(writer.wasSignalled, "the writer stopped: \(outcome.status) \(outcome.err)")
            let stored = acks.append(outcome.out)
            #expect(stored >= 3, "the writer stored \(stored) times in 2 s")
            let verify = try Child.run(["verify", dir, acks.path])
            #expect(verify.status == 0, "\(verify.err)")
        }

        @Test("a handoff file garbled, truncated or replaced under storing processes costs no acknowledged store")
        func hostileHandoffFile() throws {
            let scratch = Scratch()
            let dir = scratch.cache, acks = AckFile(scratch.root + "/acks")
            _ = try Child.run(["put", dir, "first", "1", "2000"])
            let path = dir + "/handoff"
            try #require(FileManager.default.fileExists(atPath: path), "no handoff file after a store")
            // Two writers on keys of their own (`writer`'s and `rel-crashwriter`'s key ranges).
            let writers = [
                try Child(["writer", dir, "1", "0", "40"]),
                try Child(["rel-crashwriter", dir, "2", "1", "40", "none"]),
            ]
            for step in 0..<60 {
                usleep(15_000)
                try Self.damage(handoff: path, step: step)
            }
            for writer in writers {
                let outcome = writer.killed()
                #expect(writer.wasSignalled, "a writer stopped: \(outcome.status) \(outcome.err)")
                acks.append(outcome.out)
            }
            let verify = try Child.run(["verify", dir, acks.path])
            #expect(verify.status == 0, "\(verify.err)")
            let report = try CacheStore(directory: dir).verify()
            #expect(!report.isDamaged && report.countersMatch, "\(report)")
            // A process that opens the directory now finds a file that is not its layout: its
            // stores commit themselves.
            #expect(try Child.run(["put", dir, "after", "1", "2000"]).status == 0)
        }
    }
}
