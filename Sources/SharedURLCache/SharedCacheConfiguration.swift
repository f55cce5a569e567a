import Foundation
import HTTPCacheSemantics
import Logging
import SharedURLCacheStore

/// How a ``SharedCache`` is set up: capacities, directory, partition, limits and logging.
///
/// ```swift
/// var configuration = SharedCacheConfiguration(directory: URL(fileURLWithPath: "/var/cache/api"))
/// configuration.memoryCapacity = 16 << 20
/// configuration.partition = "billing-service"
/// let cache = try SharedCache(configuration: configuration)
/// ```
public struct SharedCacheConfiguration: Sendable {
    /// The memory tier's budget in bytes; 0 keeps nothing in memory.
    public var memoryCapacity: Int
    /// The disk budget in bytes for what entries take (index records + body files); 0 stores
    /// nothing on disk (like `URLCache`). A store that would exceed it evicts least recently
    /// used entries in its own commit, as `URLCache` does; only an entry larger than the whole
    /// capacity is refused (and counted).
    public var diskCapacity: Int
    /// The cache directory, shared by every process that opens it.
    public var directory: URL
    /// Entries of one partition are invisible to every other partition (per service, per
    /// tenant); the empty partition is the default.
    public var partition: String
    /// The largest entry stored, in bytes (body + response head + userInfo): an explicit limit
    /// in place of Apple's undocumented "5% of the capacity" rule. Larger entries are refused,
    /// counted in ``SharedCacheStatistics/refusals`` and logged.
    public var maximumEntrySizeBytes: Int
    /// How the directory is opened (durability, index limits, compression).
    public var store: CacheStoreConfiguration
    /// Where refusals and dropped corrupt entries are reported.
    public var logger: Logger
    /// The response fields whose values are stored as the entry's tags, by which
    /// ``SharedCache/removeCachedResponses(taggedWith:)`` and `urlcache purge --tag` find it
    /// (default `Surrogate-Key`, `Cache-Tag`, `xkey`: ``CacheTags``); empty stores no tags.
    public var tagFieldNames: [String] = CacheTags.defaultFieldNames
    /// The clock the URLCache store reads an entry's store time from (the caching flow stores
    /// with its own, ``HTTPCachingConfiguration/now``); a parameter so tests can move time.
    var now: @Sendable () -> Date = { Date() }

    /// Creates a configuration.
    /// - Parameters:
    ///   - memoryCapacity: the memory tier's budget in bytes (default 4 MiB).
    ///   - diskCapacity: the disk budget in bytes (default 256 MiB).
    ///   - directory: the cache directory.
    ///   - partition: the partition of this cache's entries (default: none).
    ///   - maximumEntrySizeBytes: the largest entry stored (default 8 MiB).
    public init(
        memoryCapacity: Int = 4 << 20,
        diskCapacity: Int = 256 << 20,
        directory: URL,
        partition: String = "",
        maximumEntrySizeBytes: Int = 8 << 20
    ) {
        self.memoryCapacity = memoryCapacity
        self.diskCapacity = diskCapacity
        self.directory = directory
        self.partition = partition
        self.maximumEntrySizeBytes = maximumEntrySizeBytes
        self.store = CacheStoreConfiguration()
        self.logger = Logger(label: "SharedURLCache")
    }

    /// `$XDG_CACHE_HOME/SharedURLCache`, or `~/.cache/SharedURLCache`: `CacheStore.defaultDirectory`,
    /// the directory `urlcache` works on when given none.
    public static var defaultDirectory: URL {
        URL(fileURLWithPath: CacheStore.defaultDirectory)
    }
}
