import HTTPCacheSemantics

/// The nginx-style status in the vocabulary of the `Cache-Status` field (RFC 9211), for callers
/// that have only the status (URLSession's `X-Cache-Status`) and want the standard field in their
/// logs. The flow's own answers carry a fuller member (`cacheStatusMember`: `ttl`, `fwd-status`,
/// `stored`, `detail`).
extension CacheStatus {
    /// What this status says as a `Cache-Status` member.
    public var cacheStatusMember: CacheStatusMember {
        switch self {
        // Served from the cache; a stale one shows as such in `ttl` (RFC 9211 §3: "a stale hit
        // just has negative freshness"), which only the flow's member carries.
        case .hit, .stale, .updating: CacheStatusMember(hit: true)
        case .revalidated: CacheStatusMember(forward: .stale, forwardStatus: 304)
        case .miss: CacheStatusMember(forward: .uriMiss)
        case .expired: CacheStatusMember(forward: .stale)
        case .bypass: CacheStatusMember(forward: .bypass)
        }
    }

    /// The `Cache-Status` field value for this status: `urlcache;hit`, `urlcache;fwd=uri-miss`…
    /// - Precondition: `CacheStatusMember.isValidCacheName(cacheName)`.
    public func fieldValue(cacheName: String = CacheStatusMember.defaultCacheName) -> String {
        cacheStatusMember.fieldValue(cacheName: cacheName)
    }
}
