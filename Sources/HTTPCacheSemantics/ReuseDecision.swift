#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HTTPTypes

/// What to do with a stored response for a new request (RFC 9111 §4, §4.2.4, §5.2; RFC 5861).
public enum ReuseDecision: Sendable, Hashable {
    /// Serve the stored response: it is fresh. Set `Age` to `ageSeconds` (RFC 9111 §5.1).
    case fresh(ageSeconds: Int)
    /// Serve the stored response although stale, because the request allows it (`max-stale`,
    /// RFC 9111 §4.2.4). The flow should add nothing else; `ageSeconds` goes in `Age`.
    case staleAllowed(ageSeconds: Int, stalenessSeconds: Int)
    /// Serve the stale response now and revalidate in the background with `conditionalHeaders`
    /// (RFC 5861 §3 stale-while-revalidate).
    case staleWhileRevalidate(ageSeconds: Int, conditionalHeaders: HTTPFields)
    /// Forward the request to the origin with the conditional headers and handle the answer with
    /// ``RevalidationOutcome``.
    case revalidate(Revalidation)
    /// `only-if-cached` could not be satisfied: answer 504 Gateway Timeout (RFC 9111 §5.2.1.7).
    case gatewayTimeout
    /// The stored response cannot be used at all; forward the request unconditionally.
    case miss(MissReason)

    /// Details of a revalidation.
    public struct Revalidation: Sendable, Hashable {
        /// The conditional fields to add to the request (empty: unconditional).
        public var conditionalHeaders: HTTPFields
        /// Why the stored response cannot be served as is.
        public var reason: RevalidationReason
        /// The current age of the stored response.
        public var ageSeconds: Int
        /// Until when the stored response may be served if the origin fails or answers 5xx
        /// (RFC 5861 §4 stale-if-error); nil when it must not be (then the flow answers 504 on a
        /// network failure, RFC 9111 §5.2.2.2).
        public var staleIfErrorUntil: Date?

        /// Creates revalidation details (callers outside the decision: e.g. a policy that
        /// always revalidates).
        public init(
            conditionalHeaders: HTTPFields, reason: RevalidationReason, ageSeconds: Int, staleIfErrorUntil: Date?
        ) {
            self.conditionalHeaders = conditionalHeaders
            self.reason = reason
            self.ageSeconds = ageSeconds
            self.staleIfErrorUntil = staleIfErrorUntil
        }
    }

    /// Why a revalidation is needed.
    public enum RevalidationReason: Sendable, Hashable {
        /// Request `no-cache` or `Pragma: no-cache` (RFC 9111 §5.2.1.4, §5.4).
        case requestNoCache
        /// Response `no-cache`, qualified or not (RFC 9111 §5.2.2.4).
        case responseNoCache
        /// The age exceeds the request's `max-age` (RFC 9111 §5.2.1.1).
        case requestMaxAge
        /// Less freshness left than the request's `min-fresh` (RFC 9111 §5.2.1.3).
        case requestMinFresh
        /// The response is stale (RFC 9111 §4.2).
        case stale
    }

    /// Why a stored response cannot be used.
    public enum MissReason: Sendable, Hashable {
        /// Nothing is stored for the key.
        case noStoredResponse
        /// The request method cannot be served from the stored one (RFC 9111 §4: only GET, and
        /// HEAD from a stored GET or HEAD).
        case methodMismatch
        /// The stored response has `Vary: *` (RFC 9111 §4.1).
        case varyWildcard
        /// The selecting header values differ (RFC 9111 §4.1).
        case varyMismatch
        /// Stored for a request with `Authorization` without `public`, `s-maxage` or
        /// `must-revalidate` (RFC 9111 §3.5), in a shared cache.
        case authorizationNotPermitted
        /// The stored response is `private` or `no-store` and this is a shared cache (defence in
        /// depth: such entries are never stored by ``StorageDecision``).
        case notReusableInSharedCache
    }

    /// Decides how a stored response may serve a request.
    ///
    /// - Parameters:
    ///   - request: The presented request.
    ///   - stored: The stored response selected by the primary key, or nil.
    ///   - now: The current time (never read from a clock here).
    ///   - configuration: Shared or private mode and heuristic settings.
    public static func decide(
        request: HTTPRequest,
        stored: StoredResponse?,
        now: Date,
        configuration: CachePolicyConfiguration = CachePolicyConfiguration()
    ) -> ReuseDecision {
        decide(
            request: request, parsed: stored.map { ParsedStoredResponse($0, configuration: configuration) }, now: now)
    }

    /// ``decide(request:stored:now:configuration:)`` for a stored response parsed beforehand
    /// (under the configuration it carries): the same decision, without parsing the stored
    /// fields again.
    ///
    /// - Parameters:
    ///   - request: The presented request.
    ///   - parsed: The stored response for the request's URL, parsed, if any.
    ///   - now: The current time.
    public static func decide(request: HTTPRequest, parsed: ParsedStoredResponse?, now: Date) -> ReuseDecision {
        let requestCC = CacheControl(requestFields: request.headerFields)
        let decision = decideIgnoringOnlyIfCached(request: request, requestCC: requestCC, parsed: parsed, now: now)
        // RFC 9111 §5.2.1.7: only-if-cached → a stored response consistent with the request, or 504.
        guard requestCC.onlyIfCached else { return decision }
        switch decision {
        case .fresh, .staleAllowed, .staleWhileRevalidate: return decision
        case .revalidate, .miss, .gatewayTimeout: return .gatewayTimeout
        }
    }

    private static func decideIgnoringOnlyIfCached(
        request: HTTPRequest, requestCC: CacheControl, parsed: ParsedStoredResponse?, now: Date
    ) -> ReuseDecision {
        guard let parsed else { return .miss(.noStoredResponse) }
        let stored = parsed.stored
        let configuration = parsed.configuration
        // RFC 9111 §4: the method must allow the stored response to be used; RFC 9110 §9.3.2:
        // a HEAD may be answered from a stored GET.
        switch request.method {
        case .get where stored.requestMethod == .get: break
        case .head where stored.requestMethod == .get || stored.requestMethod == .head: break
        default: return .miss(.methodMismatch)
        }
        // RFC 9111 §4.1: Vary: * never matches; otherwise the selecting values must match.
        let vary = parsed.vary
        if vary.isWildcard { return .miss(.varyWildcard) }
        let varyMatches = VaryKey.matches(
            vary: vary,
            storedRequestFields: stored.varyRequestFields,
            requestFields: request.headerFields
        )
        guard varyMatches else { return .miss(.varyMismatch) }

        let responseCC = parsed.cacheControl
        let shared = configuration.isShared
        // RFC 9111 §3.5: enforced again at reuse.
        if shared && stored.requestHadAuthorization
            && !(responseCC.isPublic || responseCC.sharedMaxAge != nil || responseCC.mustRevalidate)
        {
            return .miss(.authorizationNotPermitted)
        }
        if shared && (responseCC.isPrivate || (responseCC.noStore && !responseCC.mustUnderstand)) {
            return .miss(.notReusableInSharedCache)
        }

        let freshness = parsed.freshness(at: now)
        let age = freshness.currentAgeSeconds
        // The conditional fields are built only when a decision needs them: a fresh hit (the
        // common case) must not pay for formatting validators it never sends.
        func revalidate(_ reason: RevalidationReason, staleIfErrorUntil: Date? = nil) -> ReuseDecision {
            .revalidate(
                Revalidation(
                    conditionalHeaders: ConditionalRequest.headers(for: stored),
                    reason: reason,
                    ageSeconds: age,
                    staleIfErrorUntil: staleIfErrorUntil
                )
            )
        }

        // RFC 9111 §5.2.1.4 / §5.4: the client asks for validation.
        if requestCC.noCache { return revalidate(.requestNoCache) }
        // RFC 9111 §5.2.2.4: no-cache (qualified too, treated as unqualified) → always validate.
        if responseCC.noCache { return revalidate(.responseNoCache) }
        // RFC 8246 §2: an immutable response is not revalidated while fresh, even on a reload
        // (request max-age=0); an explicit no-cache (force reload) still revalidates (above).
        let immutableAndFresh = responseCC.immutable && freshness.isFresh
        // RFC 9111 §5.2.1.1: request max-age bounds the acceptable age.
        if let maxAge = requestCC.maxAge, age > maxAge, !immutableAndFresh { return revalidate(.requestMaxAge) }
        // RFC 9111 §5.2.1.3: request min-fresh demands remaining freshness.
        if let minFresh = requestCC.minFresh, freshness.remainingSeconds < minFresh, !immutableAndFresh {
            return revalidate(.requestMinFresh)
        }
        // RFC 9111 §4.2: fresh → serve.
        if freshness.isFresh { return .fresh(ageSeconds: age) }

        // RFC 9111 §4.2.4: never serve stale against must-revalidate (§5.2.2.2), or in a shared
        // cache against proxy-revalidate (§5.2.2.8) or s-maxage (§5.2.2.10 implies it).
        let staleForbidden =
            responseCC.mustRevalidate
            || (shared && (responseCC.proxyRevalidate || responseCC.sharedMaxAge != nil))
        if staleForbidden { return revalidate(.stale) }
        let staleness = freshness.stalenessSeconds
        // RFC 9111 §5.2.1.2: the client accepts this much staleness.
        switch requestCC.maxStale {
        case .any: return .staleAllowed(ageSeconds: age, stalenessSeconds: staleness)
        case .seconds(let limit) where staleness <= limit:
            return .staleAllowed(ageSeconds: age, stalenessSeconds: staleness)
        default: break
        }
        // RFC 5861 §3: serve stale while revalidating in the background, within the window.
        if let window = responseCC.staleWhileRevalidate, staleness <= window {
            return .staleWhileRevalidate(ageSeconds: age, conditionalHeaders: ConditionalRequest.headers(for: stored))
        }
        // RFC 5861 §4: stale-if-error from the response or the request opens a window for errors.
        let window = max(responseCC.staleIfError ?? -1, requestCC.staleIfError ?? -1)
        var until: Date?
        if window >= staleness {
            until = Date(timeIntervalSince1970: Double(HTTPDate(now).secondsSince1970 + Int64(window - staleness)))
        }
        return revalidate(.stale, staleIfErrorUntil: until)
    }
}
