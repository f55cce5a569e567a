import CoreMetrics
import HTTPCacheSemantics
import Synchronization

/// How the proxy answered, counted through swift-metrics from each answer's `Cache-Status`
/// member, so the counters and the field a client sees can never disagree:
///
/// - `urlcache_proxy_responses_total{cache="hit"}`, or `cache=` the member's `fwd` reason
///   (`uri-miss`, `vary-miss`, `stale`, `method`, `bypass`, `request`, `partial`, `miss`), or
///   `none` for an answer the proxy made itself (400, 502, 504: no member);
/// - `urlcache_proxy_stored_total`: responses stored;
/// - `urlcache_proxy_not_stored_total{reason=}`: responses not stored, by the member's `detail`
///   (``NotStorableReason/token``);
/// - `urlcache_proxy_collapsed_total{reused=}`: requests that waited on another's fetch, by
///   whether its response was reused;
/// - `urlcache_proxy_purges_total`, `urlcache_proxy_purged_entries_total`: allowed `PURGE`
///   requests and the entries they removed (not counted in the responses).
///
/// Counters are made once per label value (a hit costs one atomic increment); the reasons not
/// stored, an open set of tokens, are made on first use.
final class ProxyMetrics: Sendable {
    private let factory: any MetricsFactory
    private let hit: Counter
    private let forwarded: [CacheStatusMember.Forward: Counter]
    private let generated: Counter
    private let stored: Counter
    private let collapsedReused: Counter
    private let collapsedNotReused: Counter
    private let notStored: Mutex<[String: Counter]> = Mutex([:])
    private let purges: Counter
    private let purgedEntries: Counter

    init(factory: any MetricsFactory) {
        self.factory = factory
        func responses(_ value: String) -> Counter {
            Counter(label: "urlcache_proxy_responses_total", dimensions: [("cache", value)], factory: factory)
        }
        hit = responses("hit")
        generated = responses("none")
        forwarded = Dictionary(
            uniqueKeysWithValues: CacheStatusMember.Forward.allCases.map { ($0, responses($0.rawValue)) })
        stored = Counter(label: "urlcache_proxy_stored_total", factory: factory)
        purges = Counter(label: "urlcache_proxy_purges_total", factory: factory)
        purgedEntries = Counter(label: "urlcache_proxy_purged_entries_total", factory: factory)
        collapsedReused = Counter(
            label: "urlcache_proxy_collapsed_total", dimensions: [("reused", "true")], factory: factory)
        collapsedNotReused = Counter(
            label: "urlcache_proxy_collapsed_total", dimensions: [("reused", "false")], factory: factory)
    }

    /// Counts one answer.
    func record(_ member: CacheStatusMember?) {
        guard let member else { return generated.increment() }
        if member.hit {
            hit.increment()
        } else if let forward = member.forward {
            forwarded[forward]?.increment()
        }
        if member.stored { stored.increment() }
        switch member.collapsed {
        case true?: collapsedReused.increment()
        case false?: collapsedNotReused.increment()
        case nil: break
        }
        if let reason = member.detail { notStoredCounter(reason).increment() }
    }

    /// Counts one allowed `PURGE` and the entries it removed.
    func recordPurge(removedEntries: Int) {
        purges.increment()
        purgedEntries.increment(by: Int64(removedEntries))
    }

    private func notStoredCounter(_ reason: String) -> Counter {
        notStored.withLock { counters in
            if let counter = counters[reason] { return counter }
            let counter = Counter(
                label: "urlcache_proxy_not_stored_total", dimensions: [("reason", reason)], factory: factory)
            counters[reason] = counter
            return counter
        }
    }
}
