import CoreMetrics

/// What only the proxy counts, beside the caching client's answers (`urlcache_responses_total`
/// and the rest, `CacheStatusMetrics`, recorded into the same factory):
///
/// - `urlcache_proxy_generated_responses_total`: answers the proxy made itself for requests it
///   forwarded (400, 502, 504: the cache gave none, so they carry no `Cache-Status`);
/// - `urlcache_proxy_purges_total`, `urlcache_proxy_purged_entries_total`: allowed `PURGE`
///   requests and the entries they removed.
final class ProxyMetrics: Sendable {
    private let generated: Counter
    private let purges: Counter
    private let purgedEntries: Counter

    init(factory: any MetricsFactory) {
        generated = Counter(label: "urlcache_proxy_generated_responses_total", factory: factory)
        purges = Counter(label: "urlcache_proxy_purges_total", factory: factory)
        purgedEntries = Counter(label: "urlcache_proxy_purged_entries_total", factory: factory)
    }

    /// Counts an answer the proxy made itself.
    func recordGenerated() { generated.increment() }

    /// Counts one allowed `PURGE` and the entries it removed.
    func recordPurge(removedEntries: Int) {
        purges.increment()
        purgedEntries.increment(by: Int64(removedEntries))
    }
}
