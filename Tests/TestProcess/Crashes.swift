import Foundation

// The one home of the crash tests' machinery: start a real worker process, kill -9 it at a
// point, reap it, reopen the directory and check. Every test that kills a real process with
// SIGKILL (the ReliabilityTests suites, the proxy's lease takeover, the store's open under a
// killed lock holder) kills and reaps through these, so a kill is always followed by a reap and
// "the point" is an event the child reported, or a random moment the test chose on purpose.

extension ChildProcess {
    /// Reads stdout until `count` whole lines start with `prefix` (false at end of file): a
    /// writer's `ACK` lines say how far it got, so a kill can come after its Nth store instead of
    /// after a sleep that a slow start eats. What was read stays in `finish`'s output.
    public func waitForLines(startingWith prefix: String, count: Int = 1) -> Bool {
        waitForLines { lines in lines.lazy.filter { $0.hasPrefix(prefix) }.count >= count }
    }

    /// Reads stdout until `count` more lines start with `prefix` than had been read when called
    /// (false at end of file): a writer that went on storing after something the test did.
    public func waitForMoreLines(startingWith prefix: String, count: Int) -> Bool {
        var before: Int?
        return waitForLines { lines in
            let seen = lines.lazy.filter { $0.hasPrefix(prefix) }.count
            if before == nil { before = seen }
            return seen >= before! + count
        }
    }

    /// SIGKILL, then the reap: what the child wrote before it died, and its status (9 unless it
    /// had ended on its own first).
    @discardableResult
    public func killed(deadline: TimeInterval = 60) -> Outcome {
        kill9()
        return finish(deadline: deadline)
    }

    /// SIGKILL to every child first (so none outlives the others by a reap), then each reaped.
    public static func killed(_ children: [ChildProcess], deadline: TimeInterval = 60) -> [Outcome] {
        for child in children { child.kill9() }
        return children.map { $0.finish(deadline: deadline) }
    }

    /// SIGKILL to a process that is not a child of this one (a grandchild a worker forked).
    public static func kill9(pid: pid_t) { _ = kill(pid, SIGKILL) }

    /// Whether a process `pid` exists: the owner of a reader-table slot, a forked grandchild.
    public static func isAlive(_ pid: pid_t) -> Bool { kill(pid, 0) == 0 || errno == EPERM }
}

/// What killed writers acknowledged: their complete `ACK key seq` lines (a line the kill cut is
/// no acknowledgement), gathered in one file that CacheWorker's `verify` reads back after the
/// reopen, every entry bit-exact.
public struct AckFile: Sendable {
    public let path: String

    /// The file at `path`, created empty when missing.
    public init(_ path: String) {
        self.path = path
        if !FileManager.default.fileExists(atPath: path) {
            _ = FileManager.default.createFile(atPath: path, contents: nil)
        }
    }

    /// Appends the complete `ACK ` lines of `output`; returns how many.
    @discardableResult
    public func append(_ output: String) -> Int {
        let lines = output.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            .filter { $0.hasPrefix("ACK ") }
        guard !lines.isEmpty, let handle = FileHandle(forWritingAtPath: path) else { return 0 }
        defer { try? handle.close() }
        handle.seekToEndOfFile()
        handle.write(Data(lines.map { $0 + "\n" }.joined().utf8))
        return lines.count
    }
}
