import Foundation
@_spi(Testing) import SharedURLCacheStore
import Testing
import TestProcess

extension Reliability {
    /// S3-FIFO's queues, ghost and counters change in the commits of the stores that evict and
    /// of the touches: kill -9 at any moment must leave them consistent with the records, and
    /// damage to them from another process must cost a running one neither a body nor its life.
    @Suite struct EvictionCrash {
        @Test("kill -9 while storing and hitting at the capacity under S3-FIFO: verify finds nothing to repair")
        func s3fifoKillLoop() throws {
            let scratch = Scratch()
            let dir = scratch.cache
            let capacity = 400_000
            try CacheStore(directory: dir).setEvictionPolicy(.s3fifo)
            let seed = runSeed("s3fifoKillLoop")
            var rng = Seeded(seed: seed)
            var stored = 0, hits = 0
            let rounds = soak ? 200 : 20
            for round in 0..<rounds {
                let worker = try Child(["evicting", dir, String(seed &+ UInt64(round)), String(capacity), "400"])
                #expect(worker.waitForLines(startingWith: "STORED ", count: 5), "round \(round): the worker got going")
                // The sleep is the test: the moment of the kill is drawn, not reported.
                usleep(UInt32(Double(10_000 + rng.next() % 150_000) * timeScale))
                let outcome = worker.killed()
                #expect(
                    !outcome.out.contains("INVALID") && !outcome.err.contains("INVALID"),
                    "round \(round): \(outcome.err)")
                stored += outcome.out.components(separatedBy: "STORED ").count - 1
                hits += outcome.out.components(separatedBy: "HIT ").count - 1
                let store = try CacheStore(directory: dir)
                let report = try store.verify(checkBodies: true)
                #expect(!report.isDamaged && report.strayIndexKeys == 0, "round \(round) (seed \(seed)): \(report)")
                if report.isDamaged { break }
            }
            let store = try CacheStore(directory: dir)
            #expect(try store.evictionPolicy() == .s3fifo)
            #expect(try store.diskUsage(measure: false).entryBytes <= capacity)
            #expect(try store.statistics().evictions > 0, "the loop reached the capacity")
            print("s3fifoKillLoop: \(rounds) rounds, \(stored) stores, \(hits) hits checked")
            #expect(stored >= rounds && hits > 0)
        }

        @Test(
            "garbage written into the places of the entries a live process stores and hits, into the queues' keys and counters, an earlier build's ghost and the ghost file: it goes on with right bodies, verify --fix mends"
        )
        func damagedPlacesUnderALiveProcess() throws {
            let scratch = Scratch()
            let dir = scratch.cache
            let keys = 400
            let seed = runSeed("damagedPlacesUnderALiveProcess")
            let setup = try CacheStore(directory: dir)
            try setup.setEvictionPolicy(.s3fifo)
            let worker = try Child(["evicting", dir, String(seed), "400000", String(keys)])
            #expect(worker.waitForLines(startingWith: "STORED ", count: 50), "the worker got going")
            // The worker's keys (CacheWorker's key names), their places overwritten while it runs.
            var rng = Seeded(seed: seed)
            let values: [[UInt8]] = [
                [], [1, 2, 3], [0x53] + [UInt8](repeating: 0xFF, count: 17), [0x4D] + [UInt8](repeating: 0, count: 40),
                [0x07] + [UInt8](repeating: 0x55, count: 17), [0x53] + [UInt8](repeating: 0xEE, count: 3_000),
                [0x6D] + [UInt8](repeating: 0xFF, count: 17),
            ]
            // And the queues' own keys in meta (the policy key aside, which would make it LRU): a
            // stray queue key in each queue, a key of no known length first in the small queue,
            // the counters too short (where this build keeps them and where earlier builds did),
            // a ghost bucket of an earlier build's, of the wrong length, and the counters at
            // their full length with main's hand at the very end of the use order.
            let metaGarbage: [([UInt8], [UInt8])] = [
                ([0, 0x46, 0x4D] + [UInt8](repeating: 0, count: 8) + [UInt8](repeating: 0xAA, count: 48), []),
                ([0, 0x46, 0x53] + [UInt8](repeating: 0, count: 8) + [UInt8](repeating: 0xBB, count: 48), []),
                ([0, 0x46, 0x53, 1, 2, 3], [9]),
                (Array("s3fifo".utf8), [1, 2, 3]),
                ([0, 0x45, 0x63], [4, 5, 6]),
                ([0, 0x67, 0, 1], [7]),
                (Array("s3fifo".utf8), [UInt8](repeating: 0xFF, count: 112)),
            ]
            var written = 0
            let until = Date().addingTimeInterval(2 * timeScale)
            while Date() < until && worker.isRunning {
                if rng.next() % 8 == 0 {
                    Self.damageGhostFile(dir + "/ghost", &rng)
                    continue
                }
                if rng.next() % 4 == 0 {
                    let (key, value) = metaGarbage[Int(rng.next() % UInt64(metaGarbage.count))]
                    try setup.debugPutMeta(key: key, value: value)
                    continue
                }
                let key = "https://api.example.com/items/\(rng.next() % UInt64(keys))?v=1"
                let value = values[Int(rng.next() % UInt64(values.count))]
                do {
                    try setup.debugPutUseOrderValue(for: Array(key.utf8), value: value)
                    written += 1
                } catch {
                    #expect(error.code == .notFound, "\(error)") // not stored now (never, or evicted)
                }
            }
            #expect(worker.isRunning, "the worker lived through the damage")
            #expect(worker.waitForMoreLines(startingWith: "STORED ", count: 50), "and stored on after it")
            let outcome = worker.killed()
            #expect(!outcome.out.contains("INVALID") && !outcome.err.contains("INVALID"), "\(outcome.err)")
            #expect(written > 20, "places damaged: \(written)")
            let fixed = try setup.verify(fix: true)
            #expect(fixed.strayIndexKeys > 0, "verify saw the damage: \(fixed)")
            let report = try setup.verify(checkBodies: true)
            #expect(!report.isDamaged && report.strayIndexKeys == 0, "after --fix (seed \(seed)): \(report)")
            #expect(try setup.evictionPolicy() == .s3fifo)
        }

        /// What a neighbour may do to the ghost file (S3-FIFO's hints) while a process uses it:
        /// garbage over a stretch, cut short, grown far past its slots, or replaced by a
        /// directory or by a symlink (which the process's open descriptor does not see, the
        /// next handle's open does).
        static func damageGhostFile(_ path: String, _ rng: inout Seeded) {
            let fm = FileManager.default
            switch rng.next() % 5 {
            case 0:
                guard let handle = FileHandle(forWritingAtPath: path) else { return }
                try? handle.seek(toOffset: rng.next() % (1 << 16))
                handle.write(Data((0..<4_096).map { _ in UInt8(truncatingIfNeeded: rng.next()) }))
                try? handle.close()
            case 1: _ = truncate(path, off_t(rng.next() % 4_096))
            case 2: _ = truncate(path, 1 << 40)
            case 3:
                try? fm.removeItem(atPath: path)
                try? fm.createDirectory(atPath: path, withIntermediateDirectories: false)
            default:
                try? fm.removeItem(atPath: path)
                try? fm.createSymbolicLink(atPath: path, withDestinationPath: "/dev/zero")
            }
        }
    }
}
