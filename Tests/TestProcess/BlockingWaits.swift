import Foundation
import Testing

/// Runs each test of a suite on threads of its own instead of Swift's cooperative pool.
///
/// Tests that wait for child processes (`ChildProcess.finish`, `run`), or sleep, block the
/// thread they run on. Swift Testing runs test bodies on the cooperative pool, which has one
/// thread per core: two such tests side by side on a 2-core machine leave no thread for the
/// tests that only await (AsyncHTTPClient, the proxy), and those then miss their deadlines.
/// With `.blockingWaits` on a suite, its tests prefer a task executor whose pool adds a thread
/// whenever all of its threads are blocked; so the whole suite can run in parallel
/// (`swift test`) as well as one test at a time.
public struct BlockingWaits: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? { test.isSuite ? nil : self }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        try await withTaskExecutorPreference(BlockingTestExecutor.shared) { try await function() }
    }
}

/// Runs blocking work (a socket read, a wait for a child process) on ``BlockingTestExecutor``'s
/// threads and awaits it, never blocking a thread of Swift's global executor or of a dispatch
/// queue (libdispatch's pool, which that executor shares, grows slowly once its threads block).
public func runBlocking<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await Task(executorPreference: BlockingTestExecutor.shared) { try work() }.value
}

extension Trait where Self == BlockingWaits {
    /// The suite's tests block their threads (child processes, sleeps); see ``BlockingWaits``.
    public static var blockingWaits: Self { BlockingWaits() }
}

/// A task executor whose threads are never all busy: a job runs on an idle thread of its own
/// pool, or on a new thread when every one is blocked. A dispatch queue was used before, but
/// its worker pool is bounded: two or three tests blocked on child processes for minutes held
/// all of its threads, and every other test on the executor (AsyncHTTPClient, proxy) stalled
/// as long, then missed its "answered at once" bounds (`swift test` in parallel). Threads stay
/// for the next jobs; a run makes at most as many as tests block at once, plus a few.
final class BlockingTestExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked: every mutable field is guarded by `condition`.
    static let shared = BlockingTestExecutor()
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var idleThreads = 0

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        if idleThreads > jobs.count - 1 {
            condition.signal()
        } else {
            let thread = Thread { [self] in work() }
            thread.stackSize = 1 << 20
            thread.start()
        }
        condition.unlock()
    }

    private func work() {
        while true {
            condition.lock()
            idleThreads += 1
            while jobs.isEmpty { condition.wait() }
            idleThreads -= 1
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
