import Foundation

/// Runs `body(0)` … `body(count - 1)` at once, each on a thread of its own, and returns when all
/// have. Tests use it instead of `DispatchQueue.concurrentPerform`, whose iterations run on
/// libdispatch's worker threads: on Linux those are the threads of Swift's global executor, so a
/// test storing from them for seconds stalled every async task of the test process (a parallel
/// `swift test` saw another suite's request wait a minute for a thread, past its deadline).
public func onOwnThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let finished = DispatchGroup()
    let threads = (0..<count).map { index in
        finished.enter()
        return Thread {
            body(index)
            finished.leave()
        }
    }
    for thread in threads { thread.start() }
    finished.wait()
}
