import HTTPTypes

/// The knobs of the RFC 9111 policy: cache mode, cookie handling, heuristics and limits.
///
/// The defaults describe a *shared* cache (docs/Reliability.md §3.1): `s-maxage` applies, `private`
/// responses are not stored, the Authorization rule of RFC 9111 §3.5 applies, and responses with
/// `Set-Cookie` or to requests with `Cookie` are not stored.
public struct CachePolicyConfiguration: Sendable, Hashable {
    /// Whether the cache is shared between users (RFC 9111 §1) or private to one.
    public enum Mode: Sendable, Hashable {
        /// A shared cache: `s-maxage`, `proxy-revalidate`, `private` and §3.5 apply.
        case shared
        /// A private cache (one user): `private` responses may be stored.
        case `private`
    }

    /// Shared (default) or private mode.
    public var mode: Mode
    /// Store responses carrying `Set-Cookie` in shared mode (RFC 9111 §7.3; default false).
    public var allowSetCookie: Bool
    /// Store responses to requests carrying `Cookie` in shared mode (docs/Reliability.md §3.3; default false).
    public var allowRequestCookie: Bool
    /// Heuristic freshness as a percentage of (Date − Last-Modified) (RFC 9111 §4.2.2; default 10).
    public var heuristicPercent: Int
    /// Upper bound of a heuristic freshness lifetime in seconds (default 86 400, one day).
    public var heuristicMaximumSeconds: Int
    /// Store 5xx responses as the rules of RFC 9111 §3 allow: with explicit freshness, `public`,
    /// or 501's heuristic freshness (default true). Set it to false in front of an origin that
    /// puts the same explicit freshness on its failures as on its content (RFC 9111 §7.1).
    public var storeServerErrors: Bool
    /// Methods whose responses may be stored (RFC 9111 §3; default GET and HEAD).
    public var cacheableMethods: Set<HTTPRequest.Method>
    /// Header size limits (docs/Reliability.md §3.5).
    public var limits: HeaderLimits
    /// The targeted cache-control fields this cache obeys, in order (RFC 9213 §2.1), e.g.
    /// `CDN-Cache-Control` for a cache in front of an origin. The first one present with a valid
    /// value replaces `Cache-Control` and `Expires`; see ``TargetedCacheControl``. Default none.
    public var targetedFields: [HTTPField.Name] = []

    /// RFC 9213's field for caches run by or for the origin: CDNs and reverse proxies.
    public static let cdnCacheControl = HTTPField.Name("CDN-Cache-Control")!

    /// Creates a configuration.
    ///
    /// - Parameters:
    ///   - mode: Shared (default) or private.
    ///   - allowSetCookie: Store responses with `Set-Cookie` in shared mode.
    ///   - allowRequestCookie: Store responses to requests with `Cookie` in shared mode.
    ///   - heuristicPercent: Heuristic fraction of (Date − Last-Modified), in percent.
    ///   - heuristicMaximumSeconds: Cap of a heuristic lifetime, in seconds.
    ///   - storeServerErrors: Store 5xx responses the rules of RFC 9111 §3 allow.
    ///   - cacheableMethods: Methods whose responses may be stored.
    ///   - limits: Header size limits.
    public init(
        mode: Mode = .shared,
        allowSetCookie: Bool = false,
        allowRequestCookie: Bool = false,
        heuristicPercent: Int = 10,
        heuristicMaximumSeconds: Int = 86_400,
        storeServerErrors: Bool = true,
        cacheableMethods: Set<HTTPRequest.Method> = [.get, .head],
        limits: HeaderLimits = HeaderLimits()
    ) {
        self.mode = mode
        self.allowSetCookie = allowSetCookie
        self.allowRequestCookie = allowRequestCookie
        self.heuristicPercent = max(0, min(heuristicPercent, 100))
        self.heuristicMaximumSeconds = max(0, min(heuristicMaximumSeconds, DeltaSeconds.maximum))
        self.storeServerErrors = storeServerErrors
        self.cacheableMethods = cacheableMethods
        self.limits = limits
    }

    /// True in shared mode.
    public var isShared: Bool { mode == .shared }
}
