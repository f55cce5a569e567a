import Foundation
import SharedURLCacheStore
import Testing
import TestProcess

extension Reliability {
    /// Whether a process of an earlier release is attached is read from /proc/locks, which the
    /// kernel renders a page per read(): a neighbour taking and dropping file locks between two
    /// reads shifts the lines, so one can be skipped. Neither answer may depend on it: this
    /// process's own lock going missing made every rewrite on a busy host refuse ("cannot tell"),
    /// and an earlier release's lock going missing would let one rewrite under it.
    @Suite struct LockListing {
        /// A neighbour that takes and drops 2,000 flocks in a loop, in a folder of its own.
        static func churner(_ scratch: Scratch) throws -> Child {
            let folder = scratch.root + "/churn"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let churner = try Child(["rel-lockchurn", folder, "2000"])
            #expect(churner.waitForLine("CHURNING"))
            return churner
        }

        @Test("rewrites of 12 fresh directories all succeed while a neighbour's locks churn")
        func churnDoesNotRefuseRewrites() throws {
            let scratch = Scratch()
            let churner = try Self.churner(scratch)
            defer { churner.killed() }
            var refusals: [String] = []
            for n in 0..<12 {
                let store = try CacheStore(directory: scratch.root + "/dir-\(n)")
                try store.store(RecordDescriptor(key: Array("k".utf8)), body: Array("v".utf8))
                do { try store.rewriteIndex(waitForLock: false) } catch { refusals.append("\(error)") }
            }
            #expect(refusals.isEmpty, "\(refusals.count) of 12 refused: \(refusals.first ?? "")")
        }

        @Test("a process of an earlier release is named, every time, while a neighbour's locks churn")
        func churnDoesNotHideAnEarlierRelease() throws {
            let scratch = Scratch()
            let warm = try Child.run(["rel-openclose", scratch.cache, "1"])
            try #require(warm.status == 0, "\(warm.err)")
            let earlier = try earlierReleaseLookalike(scratch.cache, seconds: 120)
            defer { earlier.killed() }
            let churner = try Self.churner(scratch)
            defer { churner.killed() }
            let store = try CacheStore(directory: scratch.cache)
            for attempt in 0..<12 {
                do {
                    try store.rewriteIndex(waitForLock: false)
                    Issue.record("attempt \(attempt) rewrote under an earlier release")
                } catch {
                    let named = "\(error)".contains("process \(earlier.pid) of an earlier release")
                    #expect(named, "attempt \(attempt): \(error)")
                }
            }
            #expect(FileManager.default.fileExists(atPath: scratch.cache + "/index.lmdb"))
        }
    }
}
