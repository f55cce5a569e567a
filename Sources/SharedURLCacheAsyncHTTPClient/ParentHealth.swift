import NIOCore
import Synchronization

/// Passive health checks of a ``ParentTier``: which parents are down, and until when. (With
/// ``ParentTier/probe`` a parent stays down until `ParentProbe` sees it answer instead.)
///
/// Nothing is sent to find out: a parent that fails a real request (refused, reset, no response
/// head in time) is down for the tier's `retryAfter`, doubled for each further failure in a row
/// up to `maximumRetryAfter`; once that time has passed, the next request whose URL ranks it
/// first tries it again, and a success clears its record. Failures seen by requests already in
/// flight when it went down count once, so a burst does not stretch the back-off.
/// Per process: each child learns a parent's state from its own requests.
final class ParentHealth: Sendable {
    private struct State {
        /// Failures in a row since the last success.
        var failures = 0
        /// Skipped until then; `nil` while up.
        var downUntil: NIODeadline?
    }

    private let tier: ParentTier
    private let states: Mutex<[State]>

    init(tier: ParentTier) {
        self.tier = tier
        self.states = Mutex(Array(repeating: State(), count: tier.parents.count))
    }

    /// The parents to try for `key`, in rendezvous order, leaving out those down now.
    func candidates(for key: String, now: NIODeadline = .now()) -> [Int] {
        let order = Rendezvous.order(of: tier.parents, for: key)
        return states.withLock { states in
            order.filter { index in states[index].downUntil.map { $0 <= now } ?? true }
        }
    }

    /// Whether the parent at `index` is skipped now (for tests and logs).
    func isDown(_ index: Int, now: NIODeadline = .now()) -> Bool {
        states.withLock { $0[index].downUntil.map { $0 > now } ?? false }
    }

    /// The parent at `index` answered.
    func succeeded(_ index: Int) {
        states.withLock { states in
            if states[index].failures != 0 || states[index].downUntil != nil { states[index] = State() }
        }
    }

    /// The parent at `index` failed a request; it is down for its next back-off, or, with an
    /// active probe (``ParentTier/probe``), until the probe finds it answering.
    /// - Returns: true when this failure took the parent down (it was up or its back-off had
    ///   passed): the caller starts the probe then.
    @discardableResult
    func failed(_ index: Int, now: NIODeadline = .now()) -> Bool {
        states.withLock { states in
            // Already down: another request of the same burst saw the same outage.
            if let until = states[index].downUntil, until > now { return false }
            states[index].failures += 1
            if tier.probe != nil {
                states[index].downUntil = .distantFuture
                return true
            }
            let doublings = Int64(min(states[index].failures - 1, 16))
            let (doubled, overflow) = max(tier.retryAfter.nanoseconds, 0).multipliedReportingOverflow(
                by: 1 << doublings)
            let backOff =
                overflow ? tier.maximumRetryAfter.nanoseconds : min(doubled, tier.maximumRetryAfter.nanoseconds)
            states[index].downUntil = now + .nanoseconds(max(backOff, 0))
            return true
        }
    }
}
