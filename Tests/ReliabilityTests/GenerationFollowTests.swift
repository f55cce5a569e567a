import Foundation
import SharedURLCacheStore
import Testing
import TestProcess

extension Reliability {
    /// Processes follow the index to each new generation while another process rewrites it
    /// (docs/Capacity.md, "Index generations"). A rewrite retires the file of the generation before:
    /// a reader that read the generation number just before may find the file gone, or gone between
    /// its check and LMDB's open (which then makes an empty file). Either way it follows the newer
    /// generation; no read fails. (Seen once in the T3 kill loop under ASan: a reader's lookup failed
    /// with "the index generation lacks its tables".)
    @Suite struct GenerationFollow {
        @Test("readers in three processes never fail while a writer stores and a rewriter switches generations")
        func readersFollowWhileGenerationsSwitch() throws {
            let scratch = Scratch()
            let dir = scratch.cache
            _ = try CacheStore(directory: dir)
            let rewriter = try Child(["rel-rewriter", dir, "1", "1", "none"])
            let writer = try Child(["writer", dir, "5", "1", "200"])
            let readers = try (0..<3).map { _ in try Child(["reader", dir, "3", "200"]) }
            let results = readers.map { $0.finish() }
            let killed = Child.killed([rewriter, writer])
            let rewrites = killed[0].out.components(separatedBy: "REWRITTEN").count - 1
            for (i, result) in results.enumerated() {
                #expect(result.status == 0, "reader \(i): status \(result.status) \(result.err)")
                #expect(result.out.contains("DONE reads="), "reader \(i) read until its end")
            }
            #expect(rewrites >= 10, "the generation switched \(rewrites) times during the reads")
        }
    }
}
