import Foundation
import Synchronization

/// The origin request rate `urlcache warm --rate` holds, across all its concurrent fetches: a
/// token bucket of `burst` tokens refilled at `rate` per second, kept as the time the next token
/// is due (the generic cell rate algorithm), so it needs no timer. A caller that finds the bucket
/// empty reserves the next token and sleeps until it is due; so, over any interval of `t`
/// seconds, at most `rate × t + burst` requests start.
package final class WarmRateLimit: Sendable {
    private let interval: Duration
    private let tolerance: Duration
    /// When the bucket would next be full-but-one token short (the theoretical arrival time).
    private let due = Mutex<ContinuousClock.Instant?>(nil)

    /// A bucket of `burst` (at least 1) tokens refilled at `rate` tokens per second (> 0).
    package init(rate: Double, burst: Int = 1) {
        precondition(rate > 0, "WarmRateLimit: the rate must be positive")
        interval = .nanoseconds(Int64((1e9 / rate).rounded()))
        tolerance = interval * (max(burst, 1) - 1)
    }

    /// Takes a token, waiting until one is due.
    /// - Throws: `CancellationError` when the task is cancelled while it waits (the token it
    ///   reserved is lost, which only slows the rate down).
    package func acquire() async throws {
        let now = ContinuousClock.now
        let startAt = due.withLock { due -> ContinuousClock.Instant in
            let arrival = max(due ?? now, now)
            due = arrival + interval
            return max(arrival - tolerance, now)
        }
        if startAt > now { try await Task.sleep(until: startAt, clock: .continuous) }
    }
}
