import Foundation
import SharedURLCacheStore

/// Thrown by a fetch that declines to reach the origin because another process is fetching the
/// same response now (request collapsing across processes). The caching flow passes it on as it
/// is, never as an unreachable origin (no stale answer, no 504, for it): the caller waits for the
/// other process and runs the flow again, which then finds what that process stored.
package struct OriginRequestDeferred: Error {
    package init() {}
}

/// Cross-process request leases of this cache's partition (`CacheStore.tryLease(_:)`): what
/// `CachingHTTPClient` collapses on across processes. Without a disk tier there is nothing to
/// share, and a lease that cannot be taken or read (an I/O error) is no reason to fail a
/// request: both read as "go to the origin".
extension SharedCache {
    /// `.acquired` when this process may fetch `name` (it holds the lease, or leases are
    /// unavailable); `.held` when another process is fetching it now; with `date`,
    /// `.finishedSince` when another process finished fetching it at or after `date` (the lease
    /// is then not taken: look at the cache again).
    package func takeOriginLease(_ name: String, unlessFinishedSince date: Date? = nil) -> LeaseAttempt {
        guard let store = engine.store else { return .acquired }
        return (try? store.tryLease(leaseName(name), unlessFinishedSince: date)) ?? .acquired
    }

    /// Whether another process still fetches `name`, and if not, whether it finished since `date`.
    package func originLease(_ name: String, releasedSince date: Date) -> LeaseObservation {
        guard let store = engine.store else { return .finished }
        return (try? store.leaseState(leaseName(name), releasedSince: date)) ?? .abandoned
    }

    /// Releases the lease of `name` (taken with ``takeOriginLease(_:)``).
    package func releaseOriginLease(_ name: String) {
        try? engine.store?.releaseLease(leaseName(name))
    }

    /// Leases are per partition: another partition's entries are not this one's to wait for.
    private func leaseName(_ name: String) -> [UInt8] {
        Array(configuration.partition.utf8) + [0] + Array(name.utf8)
    }
}
