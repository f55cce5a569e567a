#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HTTPTypes

/// Status codes this cache understands for `must-understand` (RFC 9111 §5.2.2.3): the final
/// codes of RFC 9110 §15 whose caching rules it implements. 206 and 304 are left out on purpose
/// (RFC 9111 §3: partial and not-modified responses are not stored as entries).
private let understoodStatusCodes: Set<Int> = [
    200, 203, 204, 300, 301, 302, 303, 307, 308,
    400, 403, 404, 405, 406, 410, 414, 421, 451,
    500, 501, 502, 503, 504,
]

/// The answer to "may this response be stored?" (RFC 9111 §3).
public enum StorageDecision: Sendable, Hashable {
    /// The response may be stored; the payload says what the policy found.
    case store(StorableResponse)
    /// The response must not be stored, and why.
    case notStorable(NotStorableReason)

    /// What the policy found in a storable response.
    public struct StorableResponse: Sendable, Hashable {
        /// The freshness lifetime in seconds at store time.
        public var freshnessLifetimeSeconds: Int
        /// Where the lifetime came from.
        public var freshnessSource: Freshness.Source
        /// Whether the response carries a validator (`ETag` or `Last-Modified`).
        public var hasValidator: Bool
        /// The response's `Vary` names.
        public var vary: VaryFields
        /// True when `no-store` was ignored because of `must-understand` (RFC 9111 §5.2.2.3).
        public var ignoredNoStoreForMustUnderstand: Bool
    }

    /// True for `.store`.
    public var isStorable: Bool {
        if case .store = self { return true }
        return false
    }

    /// Decides whether a response may be stored (RFC 9111 §3, §3.5, §5.2).
    ///
    /// Status codes (RFC 9111 §3, RFC 9110 §15.1): any final status may be stored when the
    /// response has explicit freshness (`max-age`, `s-maxage` in shared mode, `Expires`) or is
    /// `public`; without those, only the heuristically cacheable codes (200, 203, 204, 206, 300,
    /// 301, 308, 404, 405, 410, 414, 501), which then get heuristic freshness from `Last-Modified`
    /// (RFC 9111 §4.2.2) or revalidate by their validator. 206 and 304 are never entries.
    ///
    /// Poisoning guard (RFC 9111 §7.1; "CPDoS"): in a shared cache, a 4xx other than the
    /// heuristically cacheable 404, 410 and 414 is stored only when the response carries
    /// `s-maxage`. Those three describe the resource, i.e. the cache key (method and URI; the URI
    /// is keyed byte for byte, see ``NormalizedURL``). A 405 is heuristically cacheable too, but
    /// it answers the method a request *says* it uses, and method-override fields
    /// (`X-HTTP-Method-Override` and the like, which the key does not hold) let one client turn
    /// a GET into a 405 for everyone. Every other 4xx may answer what the key does not hold: header syntax or size (400, 431), content (411, 413), preconditions and
    /// ranges (412, 416), `Expect` (417), a client's rate or a firewall's verdict (429, 403).
    /// Stored under the URL, one client's malformed or oversized request would deny everyone the
    /// resource, and origins often put the same `max-age` or `Expires` on every answer: only
    /// freshness addressed to shared caches alone (RFC 9111 §5.2.2.10) shows the origin meant it.
    /// A private cache serves one user, who can only poison their own entries: no guard there.
    /// 5xx answers follow the general rule unless ``CachePolicyConfiguration/storeServerErrors``
    /// is false.
    ///
    /// - Parameters:
    ///   - request: The request that was sent.
    ///   - response: The final response received for it.
    ///   - responseTime: When the response was received (stands in for a missing `Date`).
    ///   - configuration: Shared or private mode, cookie rules, limits.
    /// - Returns: `.store` with what was found, or `.notStorable` with the first rule that failed.
    public static func evaluate(
        request: HTTPRequest,
        response: HTTPResponse,
        responseTime: Date,
        configuration: CachePolicyConfiguration = CachePolicyConfiguration()
    ) -> StorageDecision {
        let fields = response.headerFields
        let code = response.status.code
        // RFC 9213 §2.1: a targeted field in effect replaces Cache-Control and Expires.
        let targeted = TargetedCacheControl.directives(in: fields, targets: configuration.targetedFields)
        let responseCC = targeted ?? CacheControl(responseFields: fields)
        let requestCC = CacheControl(requestFields: request.headerFields)
        let shared = configuration.isShared

        // RFC 9111 §3: the request method is understood by the cache (GET, HEAD).
        guard configuration.cacheableMethods.contains(request.method) else { return .notStorable(.methodNotCacheable) }
        // RFC 9111 §3: the status code is final.
        guard (200...599).contains(code) else { return .notStorable(.statusNotFinal) }
        // RFC 9111 §3: 206 and 304 only when the cache understands them (it does not store them).
        if code == 206 { return .notStorable(.partialContent) }
        if code == 304 { return .notStorable(.notModified) }
        // RFC 9111 §5.2.2.3: must-understand limits storage to caches that understand the status.
        let understood = understoodStatusCodes.contains(code)
        if responseCC.mustUnderstand && !understood { return .notStorable(.mustUnderstandUnknownStatus) }
        // docs/Reliability.md §3.6: a malformed Cache-Control may hide no-store or private.
        if responseCC.isMalformed || requestCC.isMalformed { return .notStorable(.malformedCacheControl) }
        // RFC 9111 §5.2.1.5: request no-store.
        if requestCC.noStore { return .notStorable(.requestNoStore) }
        // RFC 9111 §5.2.2.5 / §5.2.2.3: response no-store, ignored when must-understand is present
        // and the status is understood.
        let ignoreNoStore = responseCC.mustUnderstand && understood
        if responseCC.noStore && !ignoreNoStore { return .notStorable(.responseNoStore) }
        // RFC 9111 §5.2.2.7: a shared cache must not store a private response. A qualified
        // private="X" is treated like the unqualified form (simpler than stripping X; stricter).
        if shared && responseCC.isPrivate { return .notStorable(.privateResponse) }
        // RFC 9111 §3.5: Authorization in a shared cache needs public, s-maxage or must-revalidate.
        if shared && request.headerFields.contains(.authorization)
            && !(responseCC.isPublic || responseCC.sharedMaxAge != nil || responseCC.mustRevalidate)
        {
            return .notStorable(.authorizationWithoutPermission)
        }
        // RFC 9111 §7.3 + docs/Reliability.md §3.1: Set-Cookie would hand one user's session to another.
        if shared && !configuration.allowSetCookie && fields.contains(.setCookie) {
            return .notStorable(.setCookieInSharedCache)
        }
        // docs/Reliability.md §3.3: a request with Cookie may get a personalised answer.
        if shared && !configuration.allowRequestCookie && request.headerFields.contains(.cookie) {
            return .notStorable(.requestCookieInSharedCache)
        }
        // docs/Reliability.md §3.2 / §3.5: header limits and forbidden bytes.
        if let violation = HeaderViolation.check(fields: fields, limits: configuration.limits) {
            return .notStorable(.invalidHeaders(violation))
        }
        // RFC 9111 §4.1: Vary: * never matches, so it is not worth storing; docs/Reliability.md §3.5 limit.
        let vary = VaryFields(responseFields: fields)
        if vary.isWildcard { return .notStorable(.varyWildcard) }
        if vary.hasInvalidName || vary.names.count > configuration.limits.maximumVaryNames {
            return .notStorable(.invalidOrOversizedVary)
        }

        let lifetime = Freshness.lifetime(
            status: response.status,
            headerFields: fields,
            responseTime: HTTPDate(responseTime),
            configuration: configuration
        )
        let explicit =
            responseCC.maxAge != nil || (shared && responseCC.sharedMaxAge != nil)
            || (targeted == nil && fields.contains(.expires))
        if (500...599).contains(code) && !configuration.storeServerErrors { return .notStorable(.serverError) }
        // RFC 9111 §7.1: the poisoning guard written down above.
        let describesResource = code != 405 && Freshness.heuristicallyCacheableStatusCodes.contains(code)
        if shared && (400...499).contains(code) && !describesResource && responseCC.sharedMaxAge == nil {
            return .notStorable(.clientErrorWithoutSharedMaxAge)
        }
        // RFC 9111 §3: explicit freshness, public, private (private cache), or a heuristically
        // cacheable status.
        let permitted =
            explicit || responseCC.isPublic || (!shared && responseCC.isPrivate)
            || Freshness.heuristicallyCacheableStatusCodes.contains(code)
        guard permitted else { return .notStorable(.noExplicitFreshnessOrHeuristicStatus) }
        // docs/Reliability.md §3.3: without explicit freshness, only a heuristic lifetime or a validator
        // makes the entry reusable; otherwise storing only serves cache deception.
        let hasValidator = fields[.eTag].flatMap { EntityTag($0) } != nil || fields.contains(.lastModified)
        if !explicit && lifetime.seconds == 0 && !hasValidator { return .notStorable(.notReusable) }

        return .store(
            StorableResponse(
                freshnessLifetimeSeconds: lifetime.seconds,
                freshnessSource: lifetime.source,
                hasValidator: hasValidator,
                vary: vary,
                ignoredNoStoreForMustUnderstand: responseCC.noStore && ignoreNoStore
            )
        )
    }
}
