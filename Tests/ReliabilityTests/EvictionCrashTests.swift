import Foundation
import SharedURLCacheStore
import Testing
import TestProcess

extension Reliability {
    /// S3-FIFO's queues, ghost and counters change in the commits of the stores that evict and
    /// of the touches: kill -9 at any moment must leave them consistent with the records.
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
    }
}
