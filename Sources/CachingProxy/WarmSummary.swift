import Foundation

/// What happened to one URL `urlcache warm` fetched.
package enum WarmOutcome: Sendable, Hashable {
    /// The response was fetched (or revalidated) and an entry committed.
    case stored
    /// A fresh entry was there already: nothing was asked of the origin.
    case alreadyFresh
    /// The origin answered, but the response may not be stored; the reason is the caching
    /// flow's (`NotStorableReason.token`: `response-no-store`, `private`, …), or `too-large`,
    /// or `status-NNN` for a status that is not stored without explicit freshness.
    case notStorable(String)
    /// No usable answer: `connect`, `timeout`, `http-NNN` (a 4xx or 5xx that was not stored),
    /// `invalid-url`, `error`.
    case failed(String)
    /// Abandoned by SIGINT while in flight (nothing of it is stored).
    case interrupted
}

/// The totals `urlcache warm` prints at its end (text, or `--json`).
package struct WarmSummary: Sendable, Hashable, Codable {
    /// URLs read from the inputs, after dropping duplicates.
    package var urls = 0
    /// Entries committed (new, replaced or revalidated).
    package var stored = 0
    /// URLs whose entry was fresh already (no origin request).
    package var alreadyFresh = 0
    /// Responses that may not be stored, by reason.
    package var notStorable: [String: Int] = [:]
    /// URLs that failed, by reason.
    package var failed: [String: Int] = [:]
    /// URLs abandoned in flight by SIGINT.
    package var interrupted = 0
    /// URLs never started because SIGINT came first.
    package var notStarted = 0
    /// Requests sent to the origin (one per URL that was not fresh; revalidations included).
    package var originRequests = 0
    /// Body bytes read from the origin.
    package var bodyBytes = 0
    /// Wall-clock seconds of the run.
    package var seconds = 0.0
    /// Whether SIGINT stopped the run before its end.
    package var stoppedBySignal = false

    package init() {}

    /// URLs with an outcome so far.
    package var done: Int {
        stored + alreadyFresh + notStorable.values.reduce(0, +) + failed.values.reduce(0, +) + interrupted
    }

    /// Counts one URL's outcome.
    package mutating func count(_ outcome: WarmOutcome) {
        switch outcome {
        case .stored: stored += 1
        case .alreadyFresh: alreadyFresh += 1
        case .notStorable(let reason): notStorable[reason, default: 0] += 1
        case .failed(let reason): failed[reason, default: 0] += 1
        case .interrupted: interrupted += 1
        }
    }
}
