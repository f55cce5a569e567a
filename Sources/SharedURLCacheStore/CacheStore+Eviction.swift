import CSharedURLCache

/// How a directory chooses what to evict at its capacity (docs/Capacity.md, "Eviction policy").
public enum EvictionPolicy: String, Sendable, Hashable, Codable, CaseIterable {
    /// Least recently used: the oldest last use goes first. What every directory does until
    /// told otherwise.
    case lru
    /// S3-FIFO: new keys pass through a small probationary queue; keys hit while there, and keys
    /// the ghost of recent evictions remembers, live in the main queue, which a scan of one-hit
    /// wonders never reaches. A hit raises a small counter and writes nothing once it is at 3.
    case s3fifo

    init(core: Int32) { self = core == SUC_EVICTION_S3FIFO ? .s3fifo : .lru }

    var core: Int32 { self == .s3fifo ? SUC_EVICTION_S3FIFO : SUC_EVICTION_LRU }
}

extension CacheStore {
    /// The policy the directory records (``EvictionPolicy/lru`` when it records none).
    /// The corresponding C function is `suc_eviction_policy_get`.
    package func evictionPolicy() throws(CacheError) -> EvictionPolicy {
        var policy: Int32 = 0
        var detail = suc_error()
        let rc = withHandle { suc_eviction_policy_get($0, &policy, &detail) }
        guard rc == SUC_OK else { throw CacheError(core: rc, detail) }
        return EvictionPolicy(core: policy)
    }

    /// Chooses the directory's policy for every process sharing it, from its next eviction;
    /// builds the S3-FIFO queues from the use order (every entry in the main queue) or drops
    /// them, in one transaction. Every entry stays.
    /// The corresponding C function is `suc_eviction_policy_set`.
    package func setEvictionPolicy(_ policy: EvictionPolicy) throws(CacheError) {
        var detail = suc_error()
        let rc = withHandle { suc_eviction_policy_set($0, policy.core, &detail) }
        guard rc == SUC_OK else { throw CacheError(core: rc, detail) }
    }
}
