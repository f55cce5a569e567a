import SharedURLCacheStore

/// What `urlcache eviction` prints.
package struct EvictionPolicySummary: Sendable, Hashable, Codable {
    package var directory: String
    /// The policy the directory records, which every process of this release obeys.
    package var policy: EvictionPolicy
}

extension CacheMaintainer {
    /// Chooses the directory's eviction policy, or with `nil` only reports it
    /// (``CacheStore/setEvictionPolicy(_:)``). Choosing S3-FIFO walks the use order once.
    /// - Throws: `CacheError`.
    package func setEvictionPolicy(_ policy: EvictionPolicy?) throws -> EvictionPolicySummary {
        if let policy { try store.setEvictionPolicy(policy) }
        return EvictionPolicySummary(directory: directory, policy: try store.evictionPolicy())
    }
}
