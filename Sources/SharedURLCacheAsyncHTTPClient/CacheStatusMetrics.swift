import CoreMetrics
import HTTPCacheSemantics
import Synchronization

/// How a ``CachingHTTPClient`` answered, counted through swift-metrics from each answer's
/// `Cache-Status` member, so the counters and the field a caller sees never disagree:
///
/// - `urlcache_responses_total{cache="hit"}`, or `cache=` the member's `fwd` reason (`uri-miss`,
///   `vary-miss`, `stale`, `method`, `bypass`, `request`, `partial`, `miss`);
/// - `urlcache_stored_responses_total`: responses stored: those whose member says `stored`, and
///   streamed ones (whose member cannot say it) once their body was read and committed;
/// - `urlcache_not_stored_total{reason=}`: responses not stored, by the member's `detail`
///   (``NotStorableReason/token``);
/// - `urlcache_collapsed_total{reused=}`: requests that waited on another's fetch, by whether its
///   response was reused.
///
/// They go to ``CachingHTTPClient/Configuration/metricsFactory``, by default the factory the
/// application bootstrapped (`MetricsSystem.factory`; nothing is recorded until it does). Counters
/// are made once per label value, so an answer costs an increment or two; the reasons not stored,
/// an open set of tokens, are made on first use. Answers that end in a thrown error are not counted.
final class CacheStatusMetrics: Sendable {
    private let factory: any MetricsFactory
    private let hit: Counter
    private let forwarded: [CacheStatusMember.Forward: Counter]
    private let stored: Counter
    private let collapsedReused: Counter
    private let collapsedNotReused: Counter
    private let notStored: Mutex<[String: Counter]> = Mutex([:])

    init(factory: any MetricsFactory) {
        self.factory = factory
        func responses(_ value: String) -> Counter {
            Counter(label: "urlcache_responses_total", dimensions: [("cache", value)], factory: factory)
        }
        hit = responses("hit")
        forwarded = Dictionary(
            uniqueKeysWithValues: CacheStatusMember.Forward.allCases.map { ($0, responses($0.rawValue)) })
        stored = Counter(label: "urlcache_stored_responses_total", factory: factory)
        collapsedReused = Counter(
            label: "urlcache_collapsed_total", dimensions: [("reused", "true")], factory: factory)
        collapsedNotReused = Counter(
            label: "urlcache_collapsed_total", dimensions: [("reused", "false")], factory: factory)
    }

    /// Counts one answer.
    func record(_ member: CacheStatusMember) {
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

    /// Counts a response whose store was committed after its head (and member) went out.
    func recordCommittedAfterHead() { stored.increment() }

    private func notStoredCounter(_ reason: String) -> Counter {
        notStored.withLock { counters in
            if let counter = counters[reason] { return counter }
            let counter = Counter(
                label: "urlcache_not_stored_total", dimensions: [("reason", reason)], factory: factory)
            counters[reason] = counter
            return counter
        }
    }
}
