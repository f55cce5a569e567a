import Foundation
import NIOCore
import SharedURLCache
import Synchronization

/// Request collapsing across processes: the in-process leader of a key (``RequestCollapser``)
/// also takes the directory's lease on it before it reaches the origin, so N processes that miss
/// one URL at once send one request (docs/Design.md, "Collapsing across processes").
///
/// The lease is taken by the fetch itself, when the caching flow has decided to go to the origin
/// (a hit takes none). When another process holds it, the fetch throws
/// ``OriginRequestDeferred``; the request then waits, without a thread (it sleeps between looks
/// at the lease), until the lease is free, and runs the flow again:
/// - the owner finished: the flow finds what it stored (or, when nothing was stored, goes to the
///   origin at once, like every waiter, without queueing behind each other);
/// - the owner died (its lease is dropped by the kernel with the process): the flow runs again
///   with leasing, so one waiter takes the lease over and the others wait for it.
/// A request never waits past its own deadline for another process: it then asks the origin.
final class OriginLease: Sendable {
    private let cache: SharedCache
    private let name: String
    private let leasing: Bool
    /// Whether this request holds the lease (taken by a fetch, released once).
    private let owned = Mutex(false)
    /// Made before the flow's lookup: a fetch of `name` another process finished after this
    /// moment may have stored what the lookup missed (or refreshed what it found stale).
    private let lookedUpAt = Date()

    private init(cache: SharedCache, name: String, leasing: Bool) {
        self.cache = cache
        self.name = name
        self.leasing = leasing
    }

    /// A background revalidation may take the lease after the request that started it returned;
    /// it holds this object through its fetch until it has stored, so the lease goes with it.
    deinit { release() }

    /// `fetch`, taking the lease first; throws ``OriginRequestDeferred`` when another process has it.
    private func gated(_ fetch: @escaping HTTPCachingFlow.StreamingFetch) -> HTTPCachingFlow.StreamingFetch {
        { [self] request, body in
            if leasing, !owned.withLock({ $0 }) {
                // A lease free because its owner finished after this request's lookup is not taken:
                // what the flow decided from may be out of date, so it defers and runs again, and
                // reads what was stored (a background revalidation is dropped) instead of asking
                // the origin for what another process just fetched.
                guard cache.takeOriginLease(name, unlessFinishedSince: lookedUpAt) == .acquired else {
                    throw OriginRequestDeferred()
                }
                owned.withLock { $0 = true }
            }
            return try await fetch(request, body)
        }
    }

    private func release() {
        let wasOwned = owned.withLock { owned in
            defer { owned = false }
            return owned
        }
        if wasOwned { cache.releaseOriginLease(name) }
    }

    /// The longest pause between two looks at another process's lease.
    private static let longestPause: Duration = .milliseconds(20)
    /// Rounds of waiting before a request goes to the origin whatever the leases say (each round
    /// is an owner that finished without storing, or died).
    private static let rounds = 4

    /// Runs `flow` (given the fetch to use) as the leader of `name` across processes; see the type.
    /// - Parameter waitingUntil: when a request stops waiting for another process's fetch and
    ///   asks the origin itself (the lock timeout), if before `deadline`.
    static func run(
        cache: SharedCache, name: String, deadline: NIODeadline, waitingUntil: NIODeadline? = nil,
        fetch: @escaping HTTPCachingFlow.StreamingFetch,
        _ flow: (_ fetch: @escaping HTTPCachingFlow.StreamingFetch) async throws -> CachedHTTPStreamingResponse
    ) async throws -> CachedHTTPStreamingResponse {
        var leasing = true
        for round in 0...rounds {
            let lease = OriginLease(cache: cache, name: name, leasing: leasing && round < rounds)
            let answer: CachedHTTPStreamingResponse
            do {
                answer = try await flow(lease.gated(fetch))
            } catch is OriginRequestDeferred {
                leasing = try await waitForOwner(
                    cache: cache, name: name, deadline: waitingUntil.map { min($0, deadline) } ?? deadline)
                continue
            } catch {
                lease.release()
                throw error
            }
            // A stale answer revalidating in the background did not fetch: the background task
            // may hold the lease, through its fetch, until it has stored (then `deinit`).
            if answer.cacheStatus == .updating { return answer }
            // Released once what was fetched is stored (or given up), as the in-process flight ends.
            answer.body.storeSettlement.whenSettled { lease.release() }
            return answer
        }
        preconditionFailure("the last round runs without leasing, so it cannot be deferred")
    }

    /// Waits while another process holds `name`'s lease; returns whether the next round should
    /// lease again (its owner died) rather than read the cache and go to the origin at once.
    private static func waitForOwner(cache: SharedCache, name: String, deadline: NIODeadline) async throws -> Bool {
        let since = Date()
        var pause: Duration = .milliseconds(1)
        while NIODeadline.now() < deadline {
            switch cache.originLease(name, releasedSince: since) {
            case .held:
                try await Task.sleep(for: pause)
                pause = min(pause * 2, longestPause)
            case .finished: return false
            case .abandoned: return true
            }
        }
        return false
    }
}
