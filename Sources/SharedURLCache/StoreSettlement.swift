import Foundation
import SharedURLCacheStore

/// Resolves once what a streamed answer stores is settled: committed after its last chunk was
/// read, or given up (too large, the origin failed, the body was dropped unread). Answers that
/// store nothing are settled at once. Request collapsing waits on it before followers look up.
public struct StoreSettlement: Sendable {
    let completion: StoreCompletion?

    /// Waits until the store is settled.
    public func wait() async {
        await completion?.wait()
    }

    /// Whether the store is settled already (always, for a body that stores nothing: a hit), so
    /// a caller need not wait.
    public var isSettled: Bool { completion?.isDone ?? true }
}

/// A one-shot signal with any number of waiters.
final class StoreCompletion: Sendable {
    private let state = Locked<(done: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func signal() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            if state.done { return [] }
            state.done = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    var isDone: Bool { state.withLock { $0.done } }

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state -> Bool in
                if state.done { return true }
                state.waiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }
}
