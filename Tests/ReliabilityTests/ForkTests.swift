import Foundation
import Testing
import TestProcess

extension Reliability {
    /// docs/Reliability.md T7: what a forked child inherits from a parent with the cache open.
    @Suite struct Fork {
        @Test("a lease held by a parent that forked and died is free again while the child lives on")
        func childDoesNotKeepTheParentsLease() throws {
            let scratch = Scratch()
            let parent = try Child.run(["rel-forklease", scratch.cache, "lease-a"])
            let line = parent.out.split(separator: "\n").first { $0.hasPrefix("CHILD ") }
            let child = try #require(line.flatMap { Int32($0.dropFirst(6)) }, "\(parent)")
            defer { Child.kill9(pid: child) }
            #expect(Child.isAlive(child), "the child should still be running")
            let attempt = try Child.run(["rel-trylease", scratch.cache, "lease-a"])
            #expect(attempt.out.contains("LEASE acquired"), "\(attempt.out) \(attempt.err)")
        }
    }
}
