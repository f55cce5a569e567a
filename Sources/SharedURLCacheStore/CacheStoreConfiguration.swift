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
        /// (``CacheStore/discardedIndexAfterRestart``). For caches that can be refilled; see
        /// docs/Formats.md, "The unsynced marker".
        case relaxed
    }

    /// Create the directory and its index when missing.
    public var createIfMissing = true
    public var durability = Durability.standard
    /// Initial size of the index map; it grows by doubling up to `maximumIndexBytes`.
    public var initialIndexBytes = 64 << 20
    /// At this index size stores fail with `.indexFull` (reads keep working).
    public var maximumIndexBytes = 64 << 30
    /// Larger bodies are refused with `.tooLarge`; nothing partial is published.
    public var maximumBodyBytes = 64 << 20
    /// Limit on key + variant + partition bytes.
    public var maximumKeyBytes = 16 << 10
    public var maximumHeadBytes = 256 << 10
    public var maximumUserInfoBytes = 64 << 10
    /// Bodies that compress to at most this many bytes live inside the index record (no file
    /// to open on a hit); `nil` stores every body in a file.
    public var inlineBodyLimitBytes: Int? = 2048
    /// Reader slots in the index (one per concurrent lookup across all processes).
    public var maximumReaders = 1024
    /// zlib level, 1 (fastest) … 9 (smallest).
    public var compressionLevel = 1
    /// Last-use times (for LRU eviction) are recorded at most this often per entry.
    public var touchInterval = Duration.seconds(60)
    /// Online hard cap on the bytes entries take (index records + body files), so a missed
    /// compaction cannot fill the disk: a store that would pass it evicts least-recently used
    /// entries in its own commit until it fits; only an entry larger than the cap itself is
    /// refused with `.overCapacity`. A store's own `capacityBytes` takes its place.
    /// `nil`: no cap (compaction alone holds the size).
    public var hardCapacityBytes: Int?
    /// With `.relaxed` durability: the longest time between two syncs of the index while stores
    /// go on (what a power loss can cost is then at most the index, detected at open).
    public var relaxedSyncInterval = Duration.seconds(1)

    public init() {}
}
