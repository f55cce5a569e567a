import Dispatch
import Testing

/// Runs each test of a suite on threads of its own instead of Swift's cooperative pool.
///
/// Tests that wait for child processes (`ChildProcess.finish`, `run`), or sleep, block the
/// thread they run on. Swift Testing runs test bodies on the cooperative pool, which has one
/// thread per core: two such tests side by side on a 2-core machine leave no thread for the
/// tests that only await (AsyncHTTPClient, the proxy), and those then miss their deadlines.
/// With `.blockingWaits` on a suite, its tests prefer a task executor backed by an ordinary
/// concurrent dispatch queue, whose threads the system adds while others block; so the whole
/// suite can run in parallel (`swift test`) as well as one test at a time.
public struct BlockingWaits: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? { test.isSuite ? nil : self }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        try await withTaskExecutorPreference(BlockingTestExecutor.shared) { try await function() }
    }
}

extension Trait where Self == BlockingWaits {
    /// The suite's tests block their threads (child processes, sleeps); see ``BlockingWaits``.
    public static var blockingWaits: Self { BlockingWaits() }
}

/// A task executor on a concurrent dispatch queue: jobs run on threads outside the cooperative
/// pool, and a job that blocks does not hold back the others (child tasks of a test included).
final class BlockingTestExecutor: TaskExecutor {
    static let shared = BlockingTestExecutor()
    private let queue = DispatchQueue(label: "suc.tests.blocking-waits", attributes: .concurrent)

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
