import Foundation
import HTTPCacheSemantics
import HTTPTypes
import NIOCore
import SharedURLCache
import Synchronization

/// In-process request collapsing (a "single flight" per key, like nginx's `proxy_cache_lock`):
/// the first task to miss a key leads, the others wait for it and then run the caching flow
/// themselves, which answers them from what the leader stored.
///
/// Why followers re-run the flow rather than share the leader's response: a response is only
/// ever given to the request it answers. Whether a follower may reuse what the leader got is
/// exactly RFC 9111's question (Vary, `Authorization`, `no-store`, `private`), and the flow
/// answers it against the stored entry. The price: when the leader's response was not stored
/// (`no-store`, an `Authorization` answer in shared mode, a refusal), the followers go to the
/// origin after it, at once (they do not queue behind each other).
///
/// Vary: the key is the URL plus the values of the request fields that the URL's last response
/// named in `Vary` (learnt from leaders). Until a URL's `Vary` is known, requests for different
/// variants collapse on the URL; a follower whose key changes once the leader's `Vary` is learnt
/// waits one more round under its own variant's key (so 10 `en` + 10 `fr` concurrent misses make
/// 2 origin requests); a follower whose key did not change runs the flow at once. `Vary: *`
/// turns collapsing off for the URL.
///
/// Followers learn why their leader went forward, for their `Cache-Status` (RFC 9211 §2.6
/// `collapsed`).
final class RequestCollapser: Sendable {
    /// A request that waited on a leader: why the (last) leader it waited on went forward (nil:
    /// it did not, or it failed).
    struct Followed: Sendable {
        var leaderForward: CacheStatusMember.Forward?
    }

    /// What the last leader of a URL learnt about its variants.
    enum VaryHint: Sendable, Equatable {
        case names([HTTPField.Name])
        case wildcard
    }

    /// How a follower's wait ended.
    private enum Wake: Sendable {
        /// The leader finished; why it went forward.
        case leaderFinished(CacheStatusMember.Forward?)
        /// The lock timeout passed first.
        case timedOut
    }

    private struct State: ~Copyable {
        /// Keys with a leader in flight, and the tasks waiting for it (each under an id of its
        /// own, so that a timed-out one can leave the queue).
        var flights: [String: [(id: UInt64, continuation: CheckedContinuation<Wake, Never>)]] = [:]
        var nextWaiter: UInt64 = 0
        /// URL → the `Vary` its last response carried (absent: none).
        var vary: [String: VaryHint] = [:]
    }

    /// Bound on the learnt `Vary` table; past it the table is forgotten (it is only a hint).
    private static let maximumVaryHints = 10_000
    private let state = Mutex(State())

    enum Role {
        case leader
        case follower(leaderForward: CacheStatusMember.Forward?)
        /// Waited the lock timeout without the leader finishing.
        case timedOut
    }

    /// The collapsing key for `request` at `url`, or nil when the URL must not collapse.
    func key(url: String, request: HTTPRequest) -> String? {
        let hint = state.withLock { $0.vary[url] }
        switch hint {
        case nil: return url
        case .wildcard: return nil
        case .names(let names):
            var key = url
            for name in names {
                // A length prefix keeps the encoding injective whatever the values contain.
                let value = request.headerFields[values: name].joined(separator: ", ")
                key += "\u{0}\(value.utf8.count):" + value
            }
            return key
        }
    }

    /// Runs `body` once per concurrent wave of requests with the same key: as the leader, or after
    /// waiting for the leader (at most two rounds, see the type's comment). `body` gets the key,
    /// which the leader also collapses on across processes (``OriginLease``).
    ///
    /// The leader's answer streams: what it stores is committed only after its caller has read
    /// the body to the end. So the flight ends when `settled` says the store is settled
    /// (committed or given up), not when the leader's head arrives; followers then look up and
    /// stream the stored entry, or go to the origin themselves if nothing was stored.
    /// - Returns: the answer, and for a request that waited on a leader, why that one went
    ///   forward (`forward` of its answer).
    /// - Parameter lockTimeout: how long a follower waits for a leader before it runs `body`
    ///   itself (nil: until the leader finishes).
    func run<T>(
        url: String, request: HTTPRequest, lockTimeout: TimeAmount? = nil, _ body: (_ key: String) async throws -> T,
        learn: (T) -> VaryHint?, settled: (T) -> StoreSettlement,
        forward: (T) -> CacheStatusMember.Forward?
    ) async rethrows -> (T, Followed?) {
        guard var key = key(url: url, request: request) else { return (try await body(url), nil) }
        var followed: Followed?
        for _ in 0..<2 {
            switch await waitOrLead(key, lockTimeout: lockTimeout) {
            case .timedOut:
                // nginx's proxy_cache_lock_timeout: go to the origin without waiting any longer.
                return (try await body(key), nil)
            case .leader:
                let answer: T
                do {
                    answer = try await body(key)
                } catch {
                    finish(key, leaderForward: nil)
                    throw error
                }
                remember(url: url, learn(answer))
                let flight = key
                let reason = forward(answer)
                // Ends the flight right after what the leader stores is committed (at once for a
                // hit, or when nothing is stored): a request arriving after the commit leads
                // (and hits) instead of following a finished flight. Only the signal is kept:
                // holding the body would keep it from being dropped.
                settled(answer).whenSettled { [self] in finish(flight, leaderForward: reason) }
                return (answer, followed)
            case .follower(let leaderForward):
                followed = Followed(leaderForward: leaderForward)
            }
            guard let next = self.key(url: url, request: request), next != key else { break }
            key = next
        }
        return (try await body(key), followed)
    }

    /// How many requests wait on a leader now.
    var waitingFollowers: Int { state.withLock { $0.flights.values.reduce(0) { $0 + $1.count } } }

    /// Becomes the leader of `key`, or waits until its leader finishes (or `lockTimeout` passes).
    private func waitOrLead(_ key: String, lockTimeout: TimeAmount?) async -> Role {
        let waiter = state.withLock { state -> UInt64? in
            guard state.flights[key] == nil else {
                state.nextWaiter += 1
                return state.nextWaiter
            }
            state.flights[key] = []
            return nil
        }
        guard let waiter else { return .leader }
        let timer = lockTimeout.map { timeout in
            Task { [self] in
                try await Task.sleep(nanoseconds: UInt64(max(0, timeout.nanoseconds)))
                giveUp(key, waiter: waiter)
            }
        }
        defer { timer?.cancel() }
        let wake = await withCheckedContinuation { (continuation: CheckedContinuation<Wake, Never>) in
            let queued = state.withLock { state -> Bool in
                guard state.flights[key] != nil else { return false }
                state.flights[key]!.append((waiter, continuation))
                return true
            }
            if !queued { continuation.resume(returning: .leaderFinished(nil)) } // the leader finished meanwhile
        }
        switch wake {
        case .leaderFinished(let leaderForward): return .follower(leaderForward: leaderForward)
        case .timedOut: return .timedOut
        }
    }

    /// Takes a follower out of `key`'s queue when its lock timeout passed (if it is still there).
    private func giveUp(_ key: String, waiter: UInt64) {
        let continuation = state.withLock { state -> CheckedContinuation<Wake, Never>? in
            guard let index = state.flights[key]?.firstIndex(where: { $0.id == waiter }) else { return nil }
            return state.flights[key]!.remove(at: index).continuation
        }
        continuation?.resume(returning: .timedOut)
    }

    /// Ends `key`'s flight and wakes its followers (also when the leader threw or was cancelled).
    private func finish(_ key: String, leaderForward: CacheStatusMember.Forward?) {
        let waiters = state.withLock { $0.flights.removeValue(forKey: key) } ?? []
        for waiter in waiters { waiter.continuation.resume(returning: .leaderFinished(leaderForward)) }
    }

    private func remember(url: String, _ hint: VaryHint?) {
        state.withLock { state in
            if state.vary[url] == hint { return }
            if hint != nil, state.vary.count >= Self.maximumVaryHints { state.vary.removeAll() }
            state.vary[url] = hint
        }
    }

    /// The hint a response's `Vary` gives (RFC 9110 §12.5.5: a list of field names, or `*`).
    static func hint(vary values: [String]) -> VaryHint? {
        var names: [HTTPField.Name] = []
        for value in values {
            for item in value.split(separator: ",") {
                let token = item.trimmingCharacters(in: .whitespaces)
                if token == "*" { return .wildcard }
                guard let name = HTTPField.Name(String(token)) else { return .wildcard } // malformed: do not guess
                if !names.contains(name) { names.append(name) }
            }
        }
        return names.isEmpty ? nil : .names(names.sorted { $0.canonicalName < $1.canonicalName })
    }
}
