import AsyncHTTPClient
import HTTPCacheSemantics
import NIOCore
import NIOHTTP1
import Synchronization

/// Sends a ``CachingHTTPClient``'s origin-bound GET and HEAD requests through its
/// ``ParentTier``: to the URL's parent by rendezvous order, on to the next one when a parent
/// fails, and to the origin (or nowhere) when none can take it. The rules are on ``ParentTier``.
final class ParentRouter: Sendable {
    let tier: ParentTier
    let health: ParentHealth

    init(tier: ParentTier) {
        self.tier = tier
        self.health = ParentHealth(tier: tier)
    }

    /// What became of one `execute`'s exchanges: whether the parent tier could not answer one
    /// (every parent down, failed, or a gateway error), and so where the request went instead.
    final class Trace: Sendable {
        private let unavailable = Mutex<String?>(nil)

        /// The tier could not answer; `direct` when the request then went to the origin.
        func noteTierUnavailable(direct: Bool) {
            unavailable.withLock { $0 = direct ? "parents-and-origin-down" : "parents-down" }
        }

        /// `member` with `detail=parents-down` (fallback fail) or `detail=parents-and-origin-down`
        /// (fallback direct, and the origin failed too) when a stored response met nothing
        /// upstream that answered (`fwd=stale` with no `fwd-status`: served stale within
        /// `stale-if-error`, or a 504 where it must not be), else `member` unchanged.
        func noting(_ member: CacheStatusMember) -> CacheStatusMember {
            guard let detail = unavailable.withLock({ $0 }), member.forward == .stale, member.forwardStatus == nil,
                member.detail == nil
            else { return member }
            var noted = member
            noted.detail = detail
            return noted
        }
    }

    /// The answer to `request` (bound for `url` at the origin) from a parent, or from the origin
    /// when the tier cannot give it and the fallback is direct.
    /// - Parameters:
    ///   - request: the request as it would go to the origin (its URL is the origin's).
    ///   - url: the origin URL: the rendezvous key, and where the request goes direct.
    ///   - authority: the origin's `host[:port]`, sent as `Host` to the parent.
    ///   - target: the origin-form target (`/path?query`) asked of the parent.
    ///   - scheme: the origin's scheme; `https` is told to the parent in `X-Forwarded-Proto`.
    /// - Throws: ``CachingHTTPClientError/parentsUnavailable`` when no parent answers and the
    ///   fallback is ``ParentTier/Fallback/fail``; the origin's errors when it goes direct; the
    ///   `HTTPClient`'s error when the `deadline` passes or the task is cancelled.
    func execute(
        _ request: HTTPClientRequest, url: String, authority: String, target: String, scheme: String,
        httpClient: HTTPClient, deadline: NIODeadline, trace: Trace
    ) async throws -> HTTPClientResponse {
        for index in health.candidates(for: url) {
            let parent = tier.parents[index]
            var outbound = request
            outbound.url = parent.description + target
            // The parent caches and forwards what the origin would get: its Host, not the parent's.
            outbound.headers.replaceOrAdd(name: "Host", value: authority)
            if scheme == "https" { outbound.headers.replaceOrAdd(name: "X-Forwarded-Proto", value: "https") }
            let attemptDeadline = min(deadline, .now() + tier.timeout)
            let response: HTTPClientResponse
            do {
                response = try await httpClient.execute(outbound, deadline: attemptDeadline)
            } catch {
                // The caller's own limits end the request; anything else is this parent's failure.
                if Task.isCancelled || NIODeadline.now() >= deadline { throw error }
                if health.failed(index), let probe = tier.probe {
                    ParentProbe.start(probe, parent: index, of: self, httpClient: httpClient)
                }
                continue
            }
            health.succeeded(index)
            let gatewayError = [502, 503, 504].contains(response.status.code)
            guard gatewayError, tier.fallback == .direct else { return response }
            // The parent is up but could not reach the origin: it may be the parent's path to the
            // origin that is broken, not ours, so try ours (the parent's answer is dropped).
            break
        }
        trace.noteTierUnavailable(direct: tier.fallback == .direct)
        guard tier.fallback == .direct else { throw CachingHTTPClientError.parentsUnavailable }
        return try await httpClient.execute(request, deadline: deadline)
    }
}
