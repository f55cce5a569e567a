import Foundation
import SharedURLCacheStore
import Testing
import TestProcess

extension Reliability {
    /// Heads refreshed by 304s share their body file with the records before them: kill -9 while
    /// a process stores and refreshes must never leave a record naming a file that is gone, nor
    /// lose an acknowledged head.
    @Suite struct RefreshCrash {
        @Test("kill -9 while heads are refreshed: every acknowledged body and head survives, verify finds no damage")
        func refreshKillLoop() throws {
            let scratch = Scratch()
            let dir = scratch.cache, acks = AckFile(scratch.root + "/acks")
            _ = try CacheStore(directory: dir)
            let seed = runSeed("refreshKillLoop")
            var rng = Seeded(seed: seed)
            var heads: [String: UInt64] = [:]
            var acknowledged = 0
            let rounds = 20
            for round in 0..<rounds {
                let worker = try Child(["refresher", dir, String(seed &+ UInt64(round)), String(round + 1), "40"])
                #expect(worker.waitForLines(startingWith: "HEAD ", count: 5), "round \(round): the worker got going")
                // The sleep is the test: the moment of the kill is drawn, not reported.
                usleep(UInt32(Double(10_000 + rng.next() % 150_000) * timeScale))
                let outcome = worker.killed()
                acknowledged += acks.append(outcome.out)
                // Only complete lines are acknowledgements.
                for line in outcome.out.split(separator: "\n", omittingEmptySubsequences: false).dropLast() {
                    let parts = line.split(separator: " ")
                    guard parts.count == 3, parts[0] == "HEAD", let gen = UInt64(parts[2]) else { continue }
                    heads[String(parts[1])] = max(heads[String(parts[1])] ?? 0, gen)
                }
                // Every acknowledged body is readable bit-exact from a new process.
                let verify = try Child.run(["verify", dir, acks.path])
                #expect(verify.status == 0, "round \(round) (seed \(seed)): \(verify.err)")
                if verify.status != 0 { break }
            }
            let store = try CacheStore(directory: dir)
            for (key, gen) in heads {
                let record = try #require(try store.record(for: Array(key.utf8)), "\(key) is gone")
                let head = String(decoding: record.head, as: UTF8.self)
                let found = UInt64(head.dropFirst("gen=".count)) ?? 0
                #expect(found >= gen, "\(key): head \(head), acknowledged gen=\(gen) (seed \(seed))")
            }
            // No record names a file that is gone or damaged; the counters agree with the files.
            let report = try store.verify(checkBodies: true)
            #expect(report.missingBodies == 0 && report.damagedBodies == 0 && !report.isDamaged, "seed \(seed)")
            print(
                "refreshKillLoop: \(rounds) rounds, \(acknowledged) acknowledged bodies, \(heads.count) heads checked")
            #expect(heads.count > 0 && acknowledged >= rounds)
        }
    }
}
