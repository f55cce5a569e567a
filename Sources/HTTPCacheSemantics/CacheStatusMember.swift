import RawStructuredFieldValues

/// How one cache handled a request: its member of the `Cache-Status` response field (RFC 9211),
/// a Structured Field List (RFC 9651) whose members name a cache and carry parameters.
///
/// ```swift
/// CacheStatusMember(hit: true, ttlSeconds: 376).fieldValue(cacheName: "urlcache")
/// // urlcache;hit;ttl=376
/// CacheStatusMember(forward: .uriMiss, forwardStatus: 200, stored: true).fieldValue(cacheName: "urlcache")
/// // urlcache;fwd=uri-miss;fwd-status=200;stored
/// ```
///
/// Serialized as RFC 9651 §4.1 does (no space after `;`; RFC 9211's examples add one, which
/// parsers skip).
public struct CacheStatusMember: Sendable, Hashable {
    /// Why the request went forward towards the origin (RFC 9211 §2.2).
    public enum Forward: String, Sendable, Hashable, CaseIterable {
        /// The cache was configured not to handle the request.
        case bypass
        /// The method's semantics require forwarding (unsafe methods, RFC 9111 §4.4).
        case method
        /// Nothing stored matched the request URI.
        case uriMiss = "uri-miss"
        /// A response matched the URI but not the request's fields named by its `Vary`.
        case varyMiss = "vary-miss"
        /// Nothing stored could be used (uri-miss and vary-miss not told apart).
        case miss
        /// A fresh response was selected, but the request's directives did not allow its use.
        case request
        /// A response was selected, but it was stale (or had to be validated).
        case stale
        /// A partial response was selected, but it did not cover the request.
        case partial
    }

    /// The name this library's caches use unless told otherwise.
    public static let defaultCacheName = "urlcache"

    /// `hit` (§2.1): answered from the cache without going forward.
    public var hit: Bool
    /// `fwd` (§2.2): the request went forward, and why.
    public var forward: Forward?
    /// `fwd-status` (§2.3): the status the next hop answered the forwarded request with.
    public var forwardStatus: Int?
    /// `ttl` (§2.4): the response's remaining freshness lifetime in seconds, negative when stale.
    public var ttlSeconds: Int?
    /// `stored` (§2.5): the cache stores the response.
    public var stored: Bool
    /// `collapsed` (§2.6): the request waited on another's forward request; true when that one's
    /// response was reused, false when this one had to go forward after all; nil when it did not wait.
    public var collapsed: Bool?
    /// `detail` (§2.8): implementation-specific information, here why a response was not stored
    /// (``NotStorableReason/token``).
    public var detail: String?

    /// A member; every parameter left out is absent from the field.
    public init(
        hit: Bool = false, forward: Forward? = nil, forwardStatus: Int? = nil, ttlSeconds: Int? = nil,
        stored: Bool = false, collapsed: Bool? = nil, detail: String? = nil
    ) {
        self.hit = hit
        self.forward = forward
        self.forwardStatus = forwardStatus
        self.ttlSeconds = ttlSeconds
        self.stored = stored
        self.collapsed = collapsed
        self.detail = detail
    }

    /// This member for a request that waited on another request's forward one for the same
    /// resource (RFC 9111 §4, request collapsing): answered from what that one brought
    /// (`fwd=<its reason>;collapsed`), or forwarded itself after all (`collapsed=?0`).
    /// - Parameter leaderForward: why the awaited request went forward; nil when it did not
    ///   (then nothing was collapsed and the member is unchanged).
    public func collapsed(behind leaderForward: Forward?) -> CacheStatusMember {
        var member = self
        if forward != nil {
            member.collapsed = false
        } else if let leaderForward {
            member.hit = false
            member.forward = leaderForward
            member.collapsed = true
        }
        return member
    }

    /// Whether `name` can identify a cache in the field: a Token or a String (printable ASCII).
    public static func isValidCacheName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.allSatisfy { (0x20...0x7E).contains($0) }
    }

    /// The list member `<cacheName>;<parameters>` (RFC 9211 §2), parameters in the order the
    /// RFC defines them. The name is a Token when it is one, else a String (`"my cache"`).
    /// - Precondition: ``isValidCacheName(_:)``.
    public func fieldValue(cacheName: String = defaultCacheName) -> String {
        precondition(Self.isValidCacheName(cacheName), "Cache-Status: not a cache name: \(cacheName)")
        var parameters = OrderedMap<String, RFC9651BareItem>()
        if hit { parameters["hit"] = .bool(true) }
        if let forward { parameters["fwd"] = .token(forward.rawValue) }
        if let forwardStatus { parameters["fwd-status"] = .integer(Int64(forwardStatus)) }
        if let ttlSeconds { parameters["ttl"] = .integer(Int64(ttlSeconds)) }
        if stored { parameters["stored"] = .bool(true) }
        if let collapsed { parameters["collapsed"] = .bool(collapsed) }
        if let detail, Self.isValidCacheName(detail) { parameters["detail"] = RFC9651BareItem(stringLiteral: detail) }
        let member = Item(bareItem: RFC9651BareItem(stringLiteral: cacheName), parameters: parameters)
        var serializer = StructuredFieldValueSerializer()
        // Cannot fail: the name and detail are printable ASCII (a Token or a String), the
        // integers are HTTP status codes and ages (far inside ±10^15).
        let bytes = (try? serializer.writeListFieldValue([.item(member)])) ?? Array(cacheName.utf8)
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension CacheStatusMember.Forward {
    /// Why a revalidation went forward: the request's directives refused a response it could
    /// otherwise have had (`request`), or the stored response was stale or must be validated
    /// (`stale`; RFC 9111 §5.2.2.4 `no-cache`).
    public init(_ reason: ReuseDecision.RevalidationReason) {
        switch reason {
        case .requestNoCache, .requestMaxAge, .requestMinFresh: self = .request
        case .responseNoCache, .stale: self = .stale
        }
    }

    /// Why a request that found nothing usable went forward. Nothing stored for the request is
    /// `uri-miss`: the store selects the `Vary` variant itself, so a URL stored only for other
    /// variants reads as a URI miss too (`vary-miss` is the decision's own mismatch).
    public init(_ reason: ReuseDecision.MissReason) {
        switch reason {
        case .noStoredResponse: self = .uriMiss
        case .varyMismatch: self = .varyMiss
        case .methodMismatch, .varyWildcard, .authorizationNotPermitted, .notReusableInSharedCache: self = .miss
        }
    }
}
