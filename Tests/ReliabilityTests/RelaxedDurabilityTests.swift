import Foundation
import SharedURLCacheStore
import Testing
import TestProcess

extension Reliability {
    /// `.relaxed` durability (docs/Formats.md, "The unsynced marker"): stores are not synced, a
    /// process crash still loses nothing, and a restart of the machine with unsynced stores is
    /// detected at open and answered by discarding the index, never by reading it.
    @Suite struct RelaxedDurability {
        /// What a restart looks like to the marker: another boot id where this boot's was.
        static func pretendRestart(_ cache: String) throws {
            let handle = try #require(FileHandle(forUpdatingAtPath: cache + "/unsynced"))
            defer { try? handle.close() }
            try handle.seek(toOffset: 8)
            handle.write(Data("00000000-0000-4000-8000-000000000000".utf8))
        }

        static func markerIsSet(_ cache: String) throws -> Bool {
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: cache + "/unsynced")))
            return bytes.count == 64 && bytes[48..<56].contains { $0 != 0 }
        }

        @Test("kill -9 of a relaxed writer loses no acknowledged store; a restart after it discards the index")
        func crashThenRestart() throws {
            let scratch = Scratch()
            let dir = scratch.cache, ackFile = scratch.root + "/acks"
            // Given: a process storing with .relaxed durability (beside a reader), killed mid-stream.
            let writer = try Child(["rel-relaxed-writer", dir, "7", "0", "300"])
            let reader = try Child(["reader", dir, "1", "300"])
            #expect(writer.waitForLines(startingWith: "ACK ", count: 100), "the writer stores")
            let acknowledged = AckFile(ackFile).append(writer.killed().out)
            #expect(reader.finish().status == 0, "no torn read while the writer stored")
            #expect(acknowledged > 10, "the writers made progress (\(acknowledged))")
            // Then: every acknowledged store reads back, bit-exact (a process crash loses nothing),
            // and the directory says unsynced stores may exist.
            let verify = try Child.run(["verify", dir, ackFile])
            #expect(verify.status == 0, "\(verify.err)")
            #expect(try Self.markerIsSet(dir))

            // When: the machine restarted in that state.
            try Self.pretendRestart(dir)
            // Then: the next open discards the index instead of trusting it, and the cache works.
            let store = try CacheStore(directory: dir)
            #expect(store.discardedIndexAfterRestart)
            #expect(try store.statistics().entries == 0)
            try store.store(RecordDescriptor(key: Array("after".utf8)), body: [1, 2, 3])
            #expect(try store.record(for: Array("after".utf8))?.body == [1, 2, 3])
            #expect(try Child.run(["get", dir, "k0"]).status == 4)
            // The old body files are orphans, which a compaction sweeps.
            let report = try store.verify()
            #expect(!report.isDamaged && report.entries == 1, "\(report)")
            #expect(report.orphanFiles > 0, "the body files of the discarded index are found as orphans")
        }

        /// Runs a CacheWorker command as a process whose machine reports `bootID` (nil: no boot id
        /// at all), as in a sandbox with a kernel of its own: a private mount namespace with a file
        /// bound over /proc/sys/kernel/random/boot_id. Nil when this needs root and is not.
        static func withBootID(_ bootID: String?, in scratch: Scratch, _ arguments: [String]) throws -> Child.Outcome? {
            guard geteuid() == 0 else {
                print("skipped: binding another boot id needs root")
                return nil
            }
            let source: String
            if let bootID {
                source = scratch.root + "/boot_id"
                try Data((bootID + "\n").utf8).write(to: URL(fileURLWithPath: source))
            } else {
                source = "/dev/null"
            }
            return try Child.shell(
                "unshare -m sh -c 'mount --bind \(source) /proc/sys/kernel/random/boot_id && exec \(Child.worker) "
                    + arguments.joined(separator: " ") + "'")
        }

        static func generation(_ cache: String) throws -> UInt64 {
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: cache + "/generation")))
            return bytes[8..<16].reversed().reduce(0) { $0 << 8 | UInt64($1) }
        }

        @Test(
            "stores of the standard mode survive a restart beside relaxed writers, stored before them or while they run",
            arguments: [true, false])
        func mixedModesKeepSyncedStores(standardFirst: Bool) throws {
            let scratch = Scratch()
            let dir = scratch.cache, ackFile = scratch.root + "/acks"
            // Given: a standard store before a relaxed writer starts (or after it has set the marker),
            // and one while it runs; then the writer dies and the machine restarts.
            var standardKeys = ["standard-during"]
            if standardFirst {
                #expect(try Child.run(["put", dir, "standard-before", "1", "6000"]).status == 0)
                standardKeys.append("standard-before")
            }
            let writer = try Child(["rel-relaxed-writer", dir, "11", "0", "200"])
            #expect(writer.waitForLines(startingWith: "ACK ", count: 20), "the relaxed writer stores")
            if !standardFirst { #expect(try Self.markerIsSet(dir), "the relaxed writer stores unsynced") }
            #expect(try Child.run(["put", dir, "standard-during", "1", "6000"]).status == 0)
            #expect(writer.waitForMoreLines(startingWith: "ACK ", count: 20), "the relaxed writer stores on")
            let acknowledged = AckFile(ackFile).append(writer.killed().out)
            #expect(acknowledged > 10, "the writer made progress (\(acknowledged))")
            try Self.pretendRestart(dir)
            // Then: the index is kept, with every standard store and every acknowledged relaxed one.
            let store = try CacheStore(directory: dir)
            #expect(!store.discardedIndexAfterRestart, "an index holding standard stores is never discarded")
            for key in standardKeys {
                #expect(try store.record(for: Array(key.utf8)) != nil, "\(key) survives")
            }
            let verify = try Child.run(["verify", dir, ackFile])
            #expect(verify.status == 0, "\(verify.err)")
        }

        @Test("a process with another boot id does not discard an index a live process holds; with none alive it does")
        func liveHolderKeepsTheIndex() throws {
            let scratch = Scratch()
            let dir = scratch.cache
            let sandboxBoot = "11111111-2222-4333-8444-555555555555"
            // Given: a relaxed process, alive, holding the directory with unsynced stores.
            let holder = try Child(["rel-relaxed-hold", dir, "20"])
            #expect(holder.waitForLine("READY"))
            #expect(try Self.markerIsSet(dir))
            // When: a process whose machine reports another boot id opens it (a sandbox sharing the volume).
            guard let shared = try Self.withBootID(sandboxBoot, in: scratch, ["get", dir, "held-3"]) else {
                holder.killed()
                return
            }
            // Then: it reads the holder's stores; nothing was discarded under the holder.
            #expect(shared.status == 0, "a live holder's index is kept: \(shared.out) \(shared.err)")
            #expect(try Self.markerIsSet(dir), "the marker stays for the process that set it")
            #expect(try Self.generation(dir) == 0)
            // When: the holder dies with its stores unsynced, and no process holds the directory.
            holder.killed()
            let after = try #require(try Self.withBootID(sandboxBoot, in: scratch, ["get", dir, "held-3"]))
            // Then: that open discards the index, under a new generation, and clears the marker.
            #expect(after.status == 4, "the unsynced index is discarded: \(after.out) \(after.err)")
            #expect(try Self.generation(dir) == 1, "discarded by publishing a new generation")
            #expect(!FileManager.default.fileExists(atPath: dir + "/index.lmdb"))
            #expect(try !Self.markerIsSet(dir))
        }

        @Test("without a boot id a relaxed open is refused and a marker left by a dead writer is a restart")
        func noBootID() throws {
            let scratch = Scratch()
            let dir = scratch.cache
            #expect(try Child.run(["put", dir, "standard", "1", "100"]).status == 0)
            guard let relaxed = try Self.withBootID(nil, in: scratch, ["rel-relaxed-put", dir, "k", "1", "100"]) else {
                return
            }
            #expect(relaxed.status == 2 && relaxed.err.contains("boot id"), "\(relaxed.out) \(relaxed.err)")
            let standard = try #require(try Self.withBootID(nil, in: scratch, ["put", dir, "other", "1", "100"]))
            #expect(standard.status == 0, "the standard mode needs no boot id: \(standard.err)")
            // Given: a relaxed writer of this machine died with unsynced stores (a fresh directory).
            let fresh = scratch.root + "/fresh"
            let holder = try Child(["rel-relaxed-hold", fresh, "5"])
            #expect(holder.waitForLine("READY"))
            holder.killed()
            #expect(try Self.markerIsSet(fresh))
            // Then: a process that cannot tell a restart from a crash does not trust that index.
            let read = try #require(try Self.withBootID(nil, in: scratch, ["get", fresh, "held-1"]))
            #expect(read.status == 4, "a possibly torn index is discarded: \(read.out) \(read.err)")
            #expect(try Self.generation(fresh) == 1)
        }

        @Test("a clean close syncs and clears the marker: a restart afterwards keeps every entry")
        func cleanCloseSurvivesRestart() throws {
            let scratch = Scratch()
            let dir = scratch.cache
            for i in 0..<5 {
                let put = try Child.run(["rel-relaxed-put", dir, "key-\(i)", "1", String(i * 9000)])
                #expect(put.status == 0, "\(put.err)")
            }
            #expect(try !Self.markerIsSet(dir))
            try Self.pretendRestart(dir)
            let store = try CacheStore(directory: dir)
            #expect(!store.discardedIndexAfterRestart)
            #expect(try store.statistics().entries == 5)
            for i in 0..<5 { #expect(try Child.run(["get", dir, "key-\(i)"]).status == 0) }
        }

        @Test("a relaxed open of a directory that is not a cache refuses it and writes nothing into it")
        func notACacheStaysUntouched() throws {
            let scratch = Scratch()
            let dir = scratch.root + "/home-like"
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            FileManager.default.createFile(atPath: dir + "/notes.txt", contents: Data("mine".utf8))
            var configuration = CacheStoreConfiguration()
            configuration.durability = .relaxed
            #expect(throws: CacheError.self) { _ = try CacheStore(directory: dir, configuration: configuration) }
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["notes.txt"])
        }

        @Test("sync() makes relaxed stores durable while the handle stays open")
        func explicitSync() throws {
            let scratch = Scratch()
            var configuration = CacheStoreConfiguration()
            configuration.durability = .relaxed
            configuration.relaxedSyncInterval = .seconds(3600)
            let store = try CacheStore(directory: scratch.cache, configuration: configuration)
            try store.store(RecordDescriptor(key: Array("a".utf8)), body: Array(repeating: 7, count: 5000))
            #expect(try Self.markerIsSet(scratch.cache))
            try store.sync()
            #expect(try !Self.markerIsSet(scratch.cache))
            try store.store(RecordDescriptor(key: Array("b".utf8)), body: [1])
            #expect(try Self.markerIsSet(scratch.cache), "the next unsynced store sets it again")
        }
    }
}
