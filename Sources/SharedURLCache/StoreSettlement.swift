import Foundation
import SharedURLCacheStore

/// Resolves once what a streamed answer stores is settled: committed after its last chunk was
/// read, or given up (too large, the origin failed, the body was dropped unread). Answers that
/// store nothing are settled at once. Request collapsing waits on it before followers look up.
public struct StoreSettlement: Sendable {
    let completion: StoreCompletion?

    /// The settlement of an answer that stores nothing (a hit, an answer made up): settled, not committed.
    public static let nothingStored = StoreSettlement(completion: nil)

    /// Waits until the store is settled.
    public func wait() async {
        await completion?.wait()
    }

    /// Whether the store is settled already (always, for a body that stores nothing: a hit), so
    /// a caller need not wait.
    public var isSettled: Bool { completion?.isDone ?? true }

    /// Whether the settled store committed an entry (false while it is not settled, and for a
    /// body that stores nothing). What `Cache-Status`'s `stored` could not say yet when the head
    /// of a streamed answer went out.
    public var isCommitted: Bool { completion?.committed ?? false }

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
        (
            done: Bool, committed: Bool, waiters: [CheckedContinuation<Void, Never>],
            actions: [@Sendable () -> Void]
        )
    >((false, false, [], []))

    /// Settles: `committed` says whether an entry was stored.
    func signal(committed: Bool = false) {
        let (waiters, actions) = state.withLock { state in
            if state.done { return ([CheckedContinuation<Void, Never>](), [@Sendable () -> Void]()) }
            state.done = true
            state.committed = committed
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

    /// Whether the store was settled with an entry committed.
    var committed: Bool {
        let (done, committed) = state.withLock { ($0.done, $0.committed) }
        return done && committed
    }

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
