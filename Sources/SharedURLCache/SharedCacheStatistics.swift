/// Usage counters of a ``SharedCache``.
///
/// Disk figures and the `directory…` counters come from the index and are shared by every
/// process that opens the directory (a process's hits and misses reach it with that process's
/// next write). The other event counters are this instance's own, kept in atomics.
public struct SharedCacheStatistics: Sendable, Hashable {
    /// Entries in the directory, across all processes and partitions (a response with `Vary`
    /// counts one per variant, plus one for its vary spec).
    public var diskEntries: Int
    /// Bytes the directory takes on disk as `du` counts them (entries, index file, leftovers,
    /// directories); the same figure as ``SharedCache/currentDiskUsage``.
    public var diskBytes: Int
    /// Bytes the live entries take (index records + body files): the part of ``diskBytes``
    /// that ``SharedCache/diskCapacity`` bounds.
    public var diskEntryBytes: Int
    /// Entries in this process's memory tier.
    public var memoryEntries: Int
    /// Bytes charged to this process's memory tier; the same as ``SharedCache/currentMemoryUsage``.
    public var memoryBytes: Int
    /// Lookups answered with a response (from memory or disk).
    public var hits: Int
    /// The part of ``hits`` served by the memory tier.
    public var memoryHits: Int
    /// Lookups answered with nothing.
    public var misses: Int
    /// Responses stored (in memory, on disk or both).
    public var stores: Int
    /// Entries evicted from the memory tier to stay within its capacity.
    public var evictions: Int
    /// Stores refused: too large, over capacity, uncacheable request, unusable `Vary` or
    /// userInfo, or a failed disk write. Each is logged with its reason.
    public var refusals: Int
    /// Entries this instance found corrupt (an undecodable head, or a body that failed its
    /// length or checksum check while it was read) and purged: each is a miss. The same event
    /// as ``directoryCorruptPurges``, which counts the store's purges in every process.
    public var corruptPurges: Int
    /// The former name of ``corruptPurges``.
    @available(*, deprecated, renamed: "corruptPurges")
    public var corruptEntries: Int { corruptPurges }
    /// Hits of every process on the directory, ever.
    public var directoryHits: Int = 0
    /// Misses of every process on the directory, ever.
    public var directoryMisses: Int = 0
    /// Entries stored on disk by every process, ever.
    public var directoryStores: Int = 0
    /// Entries evicted from the directory by compaction or the hard cap, ever.
    public var directoryEvictions: Int = 0
    /// Entries the store purged because a length or checksum check failed, ever.
    public var directoryCorruptPurges: Int = 0
    /// Responses the caching flow did not store because RFC 9111 §3 (or this cache's poisoning
    /// and privacy rules) forbid it, by reason: `NotStorableReason.token`, the `detail` of their
    /// `Cache-Status` (e.g. `response-no-store`, `private`). This instance's own.
    public var notStorable: [String: Int] = [:]
}
