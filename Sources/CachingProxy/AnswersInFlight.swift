import Synchronization

/// The answers still running in tasks, so that a shutdown waits for them before it stops the
/// event loops they write to: scheduling work on a stopped loop is a programming error in
/// SwiftNIO (a leaked promise; a crash in debug builds), and a large answer streams from its
/// task until its last chunk.
final class AnswersInFlight: Sendable {
    private let state = Mutex<(count: Int, waiters: [CheckedContinuation<Void, Never>])>((0, []))

    func begin() { state.withLock { $0.count += 1 } }

    /// How many answers are running now.
    var count: Int { state.withLock { $0.count } }

    func end() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.count -= 1
            guard state.count == 0 else { return [] }
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once no answer is running.
    func waitUntilNone() async {
        await withCheckedContinuation { continuation in
            let done = state.withLock { state -> Bool in
                if state.count == 0 { return true }
                state.waiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }
}
