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

    /// Runs `action` once the store is settled: at once when it is already, else on the thread
    /// that settles it, right after the commit (request collapsing ends its flight there, so no
    /// request arriving after the commit waits on it).
    package func whenSettled(_ action: @escaping @Sendable () -> Void) {
        guard let completion else { return action() }
        completion.whenDone(action)
    }
}

/// A one-shot signal with any number of waiters.
final class StoreCompletion: Sendable {
    private let state = Locked<
        (done: Bool, waiters: [CheckedContinuation<Void, Never>], actions: [@Sendable () -> Void])
    >((false, [], []))

    func signal() {
        let (waiters, actions) = state.withLock { state in
            if state.done { return ([CheckedContinuation<Void, Never>](), [@Sendable () -> Void]()) }
            state.done = true
            defer { (state.waiters, state.actions) = ([], []) }
            return (state.waiters, state.actions)
        }
        for action in actions { action() }
        for waiter in waiters { waiter.resume() }
    }

    /// Runs `action` when signalled (now, if it was).
    func whenDone(_ action: @escaping @Sendable () -> Void) {
        let done = state.withLock { state -> Bool in
            if !state.done { state.actions.append(action) }
            return state.done
        }
        if done { action() }
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
