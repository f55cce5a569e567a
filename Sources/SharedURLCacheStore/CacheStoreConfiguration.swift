import CSharedURLCache

/// How a cache directory is opened: durability, size limits and tuning.
///
/// ```swift
/// var configuration = CacheStoreConfiguration()
/// configuration.durability = .durable
/// let store = try CacheStore(directory: "/var/cache/api", configuration: configuration)
/// ```
public struct CacheStoreConfiguration: Sendable, Hashable {
    /// What an acknowledged store survives.
    public enum Durability: Sendable, Hashable {
        /// A process crash loses no acknowledged store; a power loss never corrupts the index but
        /// may lose the last moments (one `fdatasync` per commit, LMDB `MDB_NOMETASYNC`).
        case standard
        /// Every acknowledged store survives power loss: body and directory fsynced, every commit
        /// fully synced.
        case durable
        /// A process crash loses no acknowledged store, and stores pay no `fdatasync`: the index
        /// is synced at most ``CacheStoreConfiguration/relaxedSyncInterval`` apart and when the
        /// last handle closes. If the machine restarts while unsynced stores may exist (power
        /// loss, kernel crash, or a shutdown with the cache still open), the next open discards
        /// the index instead of reading it half-written: the cache starts empty
        /// (``CacheStore/discardedIndexAfterRestart``). Stores of `.standard` and `.durable`
        /// handles sharing the directory are never discarded: once one has stored in the index,
        /// relaxed commits to it are synced too. Needs the machine's boot id (the open fails with
        /// ``CacheError/Code/invalidInput`` without one). For caches that can be refilled; see
        /// docs/Formats.md, "The unsynced marker".
        case relaxed
    }

    /// Create the directory and its index when missing.
    public var createIfMissing = true
    /// What an acknowledged store survives; `.standard` by default.
    public var durability = Durability.standard
    /// Initial size of the index map; it grows by doubling up to `maximumIndexBytes`.
    public var initialIndexBytes = Int(core.map_size_initial)
    /// At this index size stores fail with `.indexFull` (reads keep working).
    public var maximumIndexBytes = Int(core.map_size_max)
    /// Larger bodies are refused with `.tooLarge`; nothing partial is published.
    public var maximumBodyBytes = Int(core.max_body_bytes)
    /// Limit on key + variant + partition bytes.
    public var maximumKeyBytes = Int(core.max_key_bytes)
    /// Larger response heads are refused with `.tooLarge`.
    public var maximumHeadBytes = Int(core.max_head_bytes)
    /// Larger userInfo is refused with `.tooLarge`.
    public var maximumUserInfoBytes = Int(core.max_user_info_bytes)
    /// Bodies that compress to at most this many bytes live inside the index record (no file
    /// to open on a hit, none to create on a store); `nil` stores every body in a file.
    /// 8 KiB by default: such a record takes at most two index pages, what its body file would
    /// take in blocks, while creating and unlinking a file per store is most of a store's cost
    /// on ext4 (its inode allocator): 3.3× the time of an inline 16 KiB store, measured here.
    public var inlineBodyLimitBytes: Int? = Int(core.inline_max_bytes)
    /// Reader slots in the index (one per concurrent lookup across all processes).
    public var maximumReaders = Int(core.max_readers)
    /// Compression level of the stored zlib streams, 1 (fastest) … 9 (smallest). A body stored
    /// whole is compressed by libdeflate at this level (the same stream format as zlib's, in
    /// fewer instructions and, on JSON at level 1, about 14% fewer bytes: Benchmarks/RESULTS.md);
    /// a streamed body by zlib.
    public var compressionLevel = Int(core.compression_level)
    /// Last-use times (for LRU eviction) are recorded at most this often per entry. Under S3-FIFO
    /// every hit counts until the entry's use counter is at its top, whatever this says.
    public var touchInterval = Duration.milliseconds(core.touch_interval_ms)
    /// Online hard cap on the bytes entries take (index records + body files), so a missed
    /// compaction cannot fill the disk: a store that would pass it evicts least-recently used
    /// entries in its own commit until it fits; only an entry larger than the cap itself is
    /// refused with `.overCapacity`. A store's own `capacityBytes` takes its place.
    /// `nil`: no cap (compaction alone holds the size).
    public var hardCapacityBytes: Int?
    /// A free-space floor on the directory's file system (nginx's `min_free`): a store that
    /// would leave less than this many bytes free first evicts least-recently-used entries.
    /// The file system is shared with other data, so the cache's own cap cannot keep it from
    /// filling; this can. `nil`: no floor (a full file system still makes stores evict, then
    /// retry once).
    public var minimumFreeBytes: Int?
    /// With `.relaxed` durability: the longest time between two syncs of the index while stores
    /// go on (what a power loss can cost is then at most the index, detected at open).
    public var relaxedSyncInterval = Duration.milliseconds(core.relaxed_sync_interval_ms)

    /// The core's defaults (`suc_options_init`).
    public init() {}
}

/// The C core's defaults (`suc_options_init`): every default of the configuration is read from
/// them, so the two layers cannot disagree.
private let core: suc_options = {
    var options = suc_options()
    suc_options_init(&options)
    return options
}()
