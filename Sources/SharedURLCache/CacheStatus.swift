/// How the cache answered one request, like nginx's `$upstream_cache_status`.
public enum CacheStatus: String, Sendable, Hashable, CaseIterable {
    /// A fresh stored response, no network.
    case hit = "HIT"
    /// A stored response revalidated with the origin (a 304): the stored body with updated headers.
    case revalidated = "REVALIDATED"
    /// A stale stored response served because the request or `stale-if-error` allowed it.
    case stale = "STALE"
    /// A stale stored response served while it is revalidated in the background
    /// (`stale-while-revalidate`).
    case updating = "UPDATING"
    /// Nothing usable was stored: the origin answered.
    case miss = "MISS"
    /// A stored response was too old and the origin sent a new one.
    case expired = "EXPIRED"
    /// The cache was not consulted (unsafe method, or a policy that ignores stored data).
    case bypass = "BYPASS"
}
