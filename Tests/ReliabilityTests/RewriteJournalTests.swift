import Foundation
import SharedURLCacheStore
import Testing
import TestProcess

extension Reliability {
    /// A rewrite copies the index from read snapshots while stores go on, and brings the copy up
    /// to date from the journal every writer keeps meanwhile (docs/Capacity.md, "Index
    /// generations"). A change the replay missed would be a store lost, or a removed entry back,
    /// in the new generation.
    @Suite struct RewriteJournal {
        @Test("stores and removals of two processes during back-to-back rewrites all land in the new generations")
        func changesDuringRewritesLand() throws {
            let scratch = Scratch()
            let dir = scratch.cache
            // Entries enough that a copy takes a while beside the churn.
            let seed = try CacheStore(directory: dir)
            for i in 0..<5_000 {
                try seed.store(
                    RecordDescriptor(key: Array("seed-\(i)".utf8)),
                    body: [UInt8](repeating: UInt8(i & 0xff), count: 300))
            }
            let rewriter = try Child(["rel-rewriter", dir, "1", "1", "none"])
            let churners = try (0..<2).map { try Child(["rel-churn", dir, String($0), "4"]) }
            let logs = churners.map { $0.finish() }
            let rewriterOutcome = rewriter.killed()
            #expect(rewriter.wasSignalled, "the rewriter stopped before it was killed: \(rewriterOutcome.err)")
            let rewrites = rewriterOutcome.out.split(separator: "\n").filter { $0.hasPrefix("REWRITTEN") }.count
            for log in logs { try #require(log.status == 0, "\(log.err)") }
            #expect(rewrites >= 3, "only \(rewrites) rewrites overlapped the stores")

            // The last line a churner printed for a key is what the directory holds.
            var expected: [String: UInt64?] = [:]
            for log in logs {
                for line in log.out.split(separator: "\n") {
                    let parts = line.split(separator: " ")
                    if parts.count == 3, parts[0] == "PUT" { expected[String(parts[1])] = UInt64(parts[2]) }
                    if parts.count == 2, parts[0] == "DEL" { expected[String(parts[1])] = .some(nil) }
                }
            }
            #expect(expected.count > 100, "the churners made \(expected.count) keys")
            let store = try CacheStore(directory: dir)
            var lost = 0, resurrected = 0, stale = 0, examples: [String] = []
            for (key, seq) in expected {
                let hit = try store.record(for: Array(key.utf8))
                switch (seq, hit) {
                case (nil, nil): continue
                case (nil, .some): resurrected += 1; examples.append("back: \(key)")
                case (.some, nil): lost += 1; examples.append("lost: \(key)")
                case (.some(let seq), .some(let hit)):
                    if hit.body == Array("\(key) \(seq)".utf8) { continue }
                    stale += 1
                    examples.append("stale: \(key)")
                }
            }
            #expect(
                lost == 0 && resurrected == 0 && stale == 0,
                "lost \(lost), removed but back \(resurrected), stale \(stale): \(examples.prefix(5))")
            for i in stride(from: 0, to: 5_000, by: 97) {
                #expect(try store.record(for: Array("seed-\(i)".utf8)) != nil, "seed-\(i) lost")
            }
            let report = try store.verify()
            #expect(!report.isDamaged, "\(report)")
        }
    }
}
