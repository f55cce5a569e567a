import Foundation
import SharedURLCacheStore
import Testing
import TestProcess

extension Reliability {
    /// The kill -9 loops: a plain writer and reader killed at random moments (`killLoop`), and
    /// docs/Reliability.md T3, with kill points inside `store`, the compactor joining in the second
    /// half, then stale reader slots and orphans (`crashLoop`).
    @Suite struct CrashLoop {
        static let rounds = Int(ProcessInfo.processInfo.environment["SUC_ROUNDS"] ?? "") ?? (soak ? 1000 : 50)

        @Test("kill -9 at random moments: every acknowledged store stays readable bit-exact")
        func killLoop() throws {
            let scratch = Scratch()
            let dir = scratch.cache, acks = AckFile(scratch.root + "/acks")
            _ = try CacheStore(directory: dir)
            let seed = runSeed("killLoop")
            var rng = Seeded(seed: seed)
            var acknowledged = 0
            let rounds = 40
            for round in 0..<rounds {
                // Given: a writer that acknowledges each store, and a reader that checks every hit.
                let writer = try Child(["writer", dir, String(seed &+ UInt64(round)), String(round), "200"])
                let reader = try Child(["reader", dir, "0.4", "200"])
                // When: one of them is killed at a random moment after the writer's first store (a
                // process start slowed by a sanitizer or a loaded machine must not eat the round).
                // The sleep is the test: the moment of the kill is drawn, not reported.
                #expect(writer.waitForLines(startingWith: "ACK "), "round \(round): the writer stored")
                usleep(UInt32(20_000 + rng.next() % 180_000))
                let victimIsReader = rng.next() % 4 == 0
                if victimIsReader { reader.kill9() }
                let w = writer.killed()
                let r = reader.finish()
                #expect(r.status == 0 || victimIsReader, "round \(round): reader saw a bad body: \(r.err)")
                // Only complete lines are acknowledgements.
                acknowledged += acks.append(w.out)
                // Then: every acknowledged store so far is readable, bit-exact, from a new process.
                let verify = try Child.run(["verify", dir, acks.path])
                #expect(verify.status == 0, "round \(round) (seed \(seed)): \(verify.err)")
                if verify.status != 0 { break }
            }
            print("killLoop: \(rounds) rounds, \(acknowledged) acknowledged stores verified")
            #expect(acknowledged >= rounds, "the writers made progress")
            // Stale reader slots of killed readers do not stop new opens or lookups.
            let store = try CacheStore(directory: dir)
            _ = try store.record(for: Array("x".utf8))
        }

        @Test("kill -9 and kill points inside store: every acknowledged store survives, bit-exact")
        func crashLoop() throws {
            let scratch = Scratch()
            let dir = scratch.cache, acks = AckFile(scratch.root + "/acks")
            _ = try CacheStore(directory: dir)
            let seed = runSeed("T3 crashLoop")
            var rng = Seeded(seed: seed)
            let points = ["rename", "dirfsync", "commit", "queued", "claimed", "committed", "settled", "none"]
            // The index rewrite's kill points (docs/Capacity.md): a rewriter joins every round.
            let rewritePoints = ["snapshot", "caught-up", "copied", "published", "switched", "none"]
            var acknowledged = 0, verifiedKeys = 0, pointDeaths = 0, kills = 0, compactorRounds = 0, rewriterDeaths = 0
            let rounds = Self.rounds
            // A kill at 5–200 ms only finds a process at its kill point if it got there first: on a
            // loaded machine (the suite in parallel on two cores) processes start later, so fewer
            // rounds end at a kill point. The loop runs on until both kill points were reached in
            // a fair share of rounds, up to three times the rounds, instead of failing for load.
            let fairShare = rounds / 8 + 1
            var round = 0
            while round < rounds || ((pointDeaths < fairShare || rewriterDeaths < fairShare) && round < 3 * rounds) {
                defer { round += 1 }
                // Given: writer A (killed at random), writer B dying at a kill point, a reader,
                // and from the second half on a compactor (no size target: ACKed ⇒ present).
                let point = points[round % points.count]
                var children: [(name: String, child: Child)] = [
                    ("writerA", try Child(["writer", dir, String(seed &+ UInt64(round)), String(round * 2), "200"])),
                    (
                        "writerB",
                        try Child([
                            "rel-crashwriter", dir, String(seed &+ UInt64(round) &* 31), String(round * 2 + 1), "200",
                            point,
                        ])
                    ),
                    ("reader", try Child(["reader", dir, "0.5", "200"])),
                    (
                        "rewriter",
                        try Child([
                            "rel-rewriter", dir, "20", String(seed &+ UInt64(round) &* 7),
                            rewritePoints[round % rewritePoints.count],
                        ])
                    ),
                ]
                if round >= rounds / 2 {
                    children.append(("compactor", try Child(["rel-compactor", dir, "30", "5000"])))
                    compactorRounds += 1
                }
                // When: one random process is killed after 5–200 ms, the rest shortly after. These
                // sleeps are the test: a kill at a random moment of the processes' work, not after
                // an event they report.
                usleep(UInt32(Double(5_000 + rng.next() % 195_000) * timeScale))
                let victim = Int(rng.next() % UInt64(children.count))
                children[victim].child.kill9()
                kills += 1
                usleep(UInt32(Double(rng.next() % 50_000) * timeScale))
                let outcomes = Child.killed(children.map(\.child))
                for ((name, child), result) in zip(children, outcomes) {
                    if name.hasPrefix("writer") { acknowledged += acks.append(result.out) }
                    if name == "writerB" && result.status == 77 { pointDeaths += 1 }
                    if name == "rewriter" && result.status == 77 { rewriterDeaths += 1 }
                    // A kill -9 ends with a signal; anything else must be a clean exit or 77.
                    let signalled = child.wasSignalled
                    #expect(
                        signalled || result.status == 0 || result.status == 77,
                        "round \(round) \(name) (seed \(seed)): status \(result.status) \(result.err)")
                }
                // Then: every acknowledged store so far is readable, bit-exact, from a new process.
                if acknowledged > 0 {
                    let verify = try Child.run(["verify", dir, acks.path])
                    #expect(verify.status == 0, "round \(round) point \(point) (seed \(seed)): \(verify.err)")
                    if verify.status != 0 { break }
                    verifiedKeys =
                        Int(
                            verify.out.split(separator: "=").last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
                        ) ?? verifiedKeys
                }
            }
            #expect(acknowledged > rounds, "the writers made progress")
            #expect(
                pointDeaths >= fairShare,
                "writer B died at its kill point in a fair share of \(round) rounds (\(pointDeaths))")
            #expect(
                rewriterDeaths >= fairShare,
                "the rewriter died at a kill point of the switch in a fair share of \(round) rounds (\(rewriterDeaths))"
            )

            // Stale reader slots: a new open reclaims every slot of a dead process.
            #expect(try Child.run(["get", dir, "nothing"]).status == 4)
            if let pids = readerTablePids(dir) {
                let stale = pids.filter { !Child.isAlive($0) }
                #expect(stale.isEmpty, "stale reader slots left after an open: \(stale)")
            }

            // Orphans (temp files of writers killed after the temp write, bodies renamed but
            // never committed) are all gone after one compaction.
            let store = try CacheStore(directory: dir)
            let before = try store.verify()
            var policy = CompactionPolicy()
            policy.gracePeriod = .zero
            let report = try store.compact(policy)
            let after = try store.verify(checkBodies: true)
            #expect(!after.isDamaged, "\(after)")
            #expect(after.orphanFiles == 0 && after.tempFiles == 0, "one compaction removes every orphan: \(after)")
            #expect((try? FileManager.default.contentsOfDirectory(atPath: dir + "/tmp").count) == 0)
            #expect(report.orphanFiles + report.tempFiles == before.orphanFiles + before.tempFiles)
            let verify = try Child.run(["verify", dir, acks.path])
            #expect(verify.status == 0, "after compaction (seed \(seed)): \(verify.err)")
            print(
                "T3: rounds=\(round) kills=\(kills) killPointDeaths=\(pointDeaths) compactorRounds=\(compactorRounds) rewriterDeaths=\(rewriterDeaths) acknowledged=\(acknowledged) keysVerified=\(verifiedKeys) orphansBefore=\(before.orphanFiles) tempsBefore=\(before.tempFiles) removedByOneCompaction=\(report.orphanFiles + report.tempFiles) failures=0"
            )
        }
    }
}
