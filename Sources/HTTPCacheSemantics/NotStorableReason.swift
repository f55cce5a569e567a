/// Why a response may not be stored (RFC 9111 §3 and this project's security rules).
public enum NotStorableReason: Sendable, Hashable {
    /// The request method is not cacheable (RFC 9111 §3: GET and HEAD by default).
    case methodNotCacheable
    /// The status is not final (1xx) or outside 100…599 (RFC 9111 §3).
    case statusNotFinal
    /// 206 Partial Content: ranges are not combined by this cache (RFC 9111 §3.3, not implemented).
    case partialContent
    /// 304 Not Modified is an update of a stored response, never an entry (RFC 9111 §4.3.4).
    case notModified
    /// `must-understand` with a status this cache does not understand (RFC 9111 §5.2.2.3).
    case mustUnderstandUnknownStatus
    /// The request carried `no-store` (RFC 9111 §5.2.1.5).
    case requestNoStore
    /// The response carried `no-store` (RFC 9111 §5.2.2.5).
    case responseNoStore
    /// `private` (qualified or not) in a shared cache (RFC 9111 §5.2.2.7).
    case privateResponse
    /// `Authorization` on the request without `public`, `s-maxage` or `must-revalidate` in a
    /// shared cache (RFC 9111 §3.5).
    case authorizationWithoutPermission
    /// `Set-Cookie` in a shared cache (RFC 9111 §7.3, docs/Reliability.md §3.1).
    case setCookieInSharedCache
    /// `Cookie` on the request in a shared cache (docs/Reliability.md §3.3).
    case requestCookieInSharedCache
    /// A 5xx response while ``CachePolicyConfiguration/storeServerErrors`` is false (RFC 9111 §7.1).
    case serverError
    /// In a shared cache, a 4xx other than 404, 405, 410 and 414 without `s-maxage`: the
    /// poisoning guard of ``StorageDecision`` (RFC 9111 §7.1).
    case clientErrorWithoutSharedMaxAge
    /// Neither explicit freshness, `public`, nor a heuristically cacheable status (RFC 9111 §3).
    case noExplicitFreshnessOrHeuristicStatus
    /// Storable in principle, but nothing makes it reusable: no explicit freshness, no
    /// heuristic freshness and no validator (docs/Reliability.md §3.3, cache deception).
    case notReusable
    /// `Vary: *`: it would never match (RFC 9111 §4.1), so it is not stored.
    case varyWildcard
    /// `Vary` lists more names than the limit, or an invalid name (docs/Reliability.md §3.5).
    case invalidOrOversizedVary
    /// `Cache-Control` was malformed (unbalanced quote or oversized): a hidden `no-store` or
    /// `private` cannot be ruled out (docs/Reliability.md §3.6).
    case malformedCacheControl
    /// The header block breaks a limit or contains forbidden bytes (docs/Reliability.md §3.2, §3.5).
    case invalidHeaders(HeaderViolation)
}

extension NotStorableReason {
    /// A short name for the reason, a Structured Field Token (RFC 9651 §3.3.4): the `detail` of
    /// the `Cache-Status` field (RFC 9211 §2.8) and the key of the not-stored counters.
    public var token: String {
        switch self {
        case .methodNotCacheable: "method-not-cacheable"
        case .statusNotFinal: "status-not-final"
        case .partialContent: "partial-content"
        case .notModified: "not-modified"
        case .mustUnderstandUnknownStatus: "must-understand-unknown-status"
        case .requestNoStore: "request-no-store"
        case .responseNoStore: "response-no-store"
        case .privateResponse: "private"
        case .authorizationWithoutPermission: "authorization"
        case .setCookieInSharedCache: "set-cookie"
        case .requestCookieInSharedCache: "request-cookie"
        case .serverError: "server-error"
        case .clientErrorWithoutSharedMaxAge: "client-error-without-s-maxage"
        case .noExplicitFreshnessOrHeuristicStatus: "no-freshness"
        case .notReusable: "not-reusable"
        case .varyWildcard: "vary-wildcard"
        case .invalidOrOversizedVary: "invalid-vary"
        case .malformedCacheControl: "malformed-cache-control"
        case .invalidHeaders: "invalid-headers"
        }
    }
}
