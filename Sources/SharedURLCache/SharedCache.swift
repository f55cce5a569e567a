import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPCacheSemantics
import HTTPTypes
import Logging
import SharedURLCacheStore
import Synchronization

/// An HTTP response cache with `URLCache`'s members and semantics, on a directory that many
/// processes share, with a per-process memory tier that stays coherent with the other processes.
///
/// ```swift
/// let cache = try SharedCache(memoryCapacity: 16 << 20, diskCapacity: 512 << 20,
///                             directory: URL(fileURLWithPath: "/var/cache/api"))
/// SharedCache.shared = cache
/// ```
///
/// Named `SharedCache`, not `SharedURLCache`: a type named like its module breaks
/// module-qualified names (`SharedURLCache.SharedURLCache` would not resolve).
///
/// What differs from Foundation's Linux `URLCache`:
/// - The key is the method, the normalised absolute URL *with its query* and the cache's
///   partition; responses with `Vary` are stored per variant (the request values `Vary` names).
/// - `.allowed` entries are visible to every process on the directory; `.allowedInMemoryOnly`
///   ones to this process only. Every memory hit of an `.allowed` entry is checked against the
///   index (one read of its version, no body I/O), so a response another process removed or
///   replaced is never served from memory.
/// - The largest entry stored is ``SharedCacheConfiguration/maximumEntrySizeBytes``, not a
///   hidden fraction of the capacity; refusals are counted and logged.
/// - userInfo round-trips for property-list types under `String` keys (stored as a binary
///   property list); a store with any other userInfo is refused (counted and logged), so a
///   caller never gets back less than it stored.
///
/// Every member is safe to call from any thread. The synchronous members block on disk I/O like
/// `URLCache`'s; from async code use the `async` overloads, which run the I/O on a dedicated
/// dispatch queue instead of a cooperative thread.
///
/// ## Topics
/// - ``init(memoryCapacity:diskCapacity:directory:)``, ``init(configuration:)``, ``shared``
/// - ``cachedResponse(for:)``, ``storeCachedResponse(_:for:)``
/// - ``removeCachedResponse(for:)``, ``removeCachedResponses(since:)``, ``removeAllCachedResponses()``
/// - ``memoryCapacity``, ``diskCapacity``, ``currentMemoryUsage``, ``currentDiskUsage``, ``statistics``
public final class SharedCache: Sendable {
    /// Everything behind the URLCache members and ``HTTPCachingFlow``: one lookup, one store.
    let engine: CacheEngine
    /// The configuration the cache was created with (capacities may have changed since).
    public var configuration: SharedCacheConfiguration { engine.configuration }
    /// Runs the blocking calls of the `async` members.
    let ioQueue: DispatchQueue

    // MARK: Creating

    /// Creates a cache on `directory`, like `URLCache(memoryCapacity:diskCapacity:directory:)`.
    /// - Parameters:
    ///   - memoryCapacity: the memory tier's budget in bytes; 0 keeps nothing in memory.
    ///   - diskCapacity: the disk budget in bytes; 0 stores nothing on disk.
    ///   - directory: the shared cache directory (created when missing);
    ///     `nil` is ``SharedCacheConfiguration/defaultDirectory``.
    /// - Throws: `CacheError` when the directory cannot be opened (`.unsafeDirectory`,
    ///   `.permissionDenied`, `.notACache`…).
    public convenience init(memoryCapacity: Int, diskCapacity: Int, directory: URL? = nil) throws(CacheError) {
        try self.init(
            configuration: SharedCacheConfiguration(
                memoryCapacity: memoryCapacity, diskCapacity: diskCapacity,
                directory: directory ?? SharedCacheConfiguration.defaultDirectory))
    }

    /// Creates a cache from a full configuration.
    /// - Parameters:
    ///   - configuration: capacities, directory, partition, limits and logger.
    /// - Throws: `CacheError` when the directory cannot be opened.
    public convenience init(configuration: SharedCacheConfiguration) throws(CacheError) {
        let store = try CacheStore(directory: configuration.directory.path, configuration: configuration.store)
        self.init(configuration: configuration, store: store)
    }

    init(configuration: SharedCacheConfiguration, store: CacheStore?) {
        engine = CacheEngine(configuration: configuration, store: store)
        ioQueue = DispatchQueue(label: "SharedCache.io", qos: .utility, attributes: .concurrent)
    }

    private static let sharedStorage = Locked<SharedCache?>(nil)

    /// The process-wide cache. Assign your own before first use so that every part of the
    /// process shares it; by default it is a 4 MiB / 256 MiB cache on
    /// ``SharedCacheConfiguration/defaultDirectory`` (memory only, logged, if that directory
    /// cannot be opened).
    public static var shared: SharedCache {
        get {
            sharedStorage.withLock { current in
                if let current { return current }
                let made = makeDefault()
                current = made
                return made
            }
        }
        set { sharedStorage.withLock { $0 = newValue } }
    }

    private static func makeDefault() -> SharedCache {
        let configuration = SharedCacheConfiguration(directory: SharedCacheConfiguration.defaultDirectory)
        do {
            return try SharedCache(configuration: configuration)
        } catch {
            configuration.logger.error(
                "cannot open the default cache directory; SharedCache.shared keeps responses in memory only",
                metadata: ["directory": "\(configuration.directory.path)", "error": "\(error.detailedDescription())"])
            return SharedCache(configuration: configuration, store: nil)
        }
    }

    // MARK: Capacities and usage

    /// The memory tier's budget in bytes; lowering it evicts at once, 0 empties the tier.
    public var memoryCapacity: Int {
        get { engine.memory.withLock { $0.capacity } }
        set {
            let evicted = engine.memory.withLock { $0.setCapacity(newValue) }
            engine.counters.evictions.add(evicted, ordering: .relaxed)
        }
    }

    /// The disk budget in bytes, for the bytes entries take (index records + body files); 0
    /// stops storing on disk (entries then live in memory only). As with `URLCache`, a store
    /// that would pass it evicts least recently used entries in its own commit until it fits;
    /// only an entry larger than the whole capacity is refused. Lowering it removes nothing at
    /// once: the next store evicts (or `urlcache compact` trims meanwhile).
    public var diskCapacity: Int {
        get { engine.diskCapacity }
        set { engine.diskCapacity = newValue }
    }

    /// Bytes held by this process's memory tier (bodies, heads and userInfo), exact.
    public var currentMemoryUsage: Int { engine.memory.withLock { $0.usage } }

    /// Bytes the directory takes on disk, as `du -s --block-size=1` counts them: entries,
    /// the index file, leftovers (temp and orphan files) and the directories themselves. Cheap
    /// (the index's counters, two `fstat` calls and a listing of `tmp/`), so leftovers and
    /// directories are estimated (see `CacheStore.diskUsage(measure:)` for the exact walk). The
    /// bytes the entries alone take, which ``diskCapacity`` bounds, are
    /// ``SharedCacheStatistics/diskEntryBytes``.
    public var currentDiskUsage: Int { engine.diskUsage()?.totalBytes ?? 0 }

    /// A snapshot of the usage counters.
    public var statistics: SharedCacheStatistics {
        let disk = engine.storeStatistics()
        let usage = engine.diskUsage()
        let counters = engine.counters
        let (memoryEntries, memoryBytes) = engine.memory.withLock { ($0.count, $0.usage) }
        return SharedCacheStatistics(
            diskEntries: disk?.entries ?? 0,
            diskBytes: usage?.totalBytes ?? 0,
            diskEntryBytes: usage?.entryBytes ?? 0,
            memoryEntries: memoryEntries,
            memoryBytes: memoryBytes,
            hits: counters.hits.load(ordering: .relaxed),
            memoryHits: counters.memoryHits.load(ordering: .relaxed),
            misses: counters.misses.load(ordering: .relaxed),
            stores: counters.stores.load(ordering: .relaxed),
            evictions: counters.evictions.load(ordering: .relaxed),
            refusals: counters.refusals.load(ordering: .relaxed),
            corruptPurges: counters.corruptPurges.load(ordering: .relaxed),
            directoryHits: disk?.hits ?? 0,
            directoryMisses: disk?.misses ?? 0,
            directoryStores: disk?.stores ?? 0,
            directoryEvictions: disk?.evictions ?? 0,
            directoryCorruptPurges: disk?.corruptPurges ?? 0,
            notStorable: counters.notStorable.withLock { $0 })
    }

    // MARK: URLCache's members

    /// The cached response for `request`, or `nil`.
    ///
    /// A memory hit costs one index read (the version check); a disk hit one index read plus
    /// the body for a response without `Vary`, two index reads plus the body with `Vary`.
    public func cachedResponse(for request: URLRequest) -> CachedURLResponse? {
        guard let lookup = engine.lookupKey(for: request) else { return nil }
        return engine.cachedResponse(for: lookup, requestURL: request.url)
    }

    /// Stores `cachedResponse` for `request`, replacing what was stored for it, according to
    /// its `storagePolicy`. Refusals are counted and logged, never thrown (as with `URLCache`).
    public func storeCachedResponse(_ cachedResponse: CachedURLResponse, for request: URLRequest) {
        guard let plan = engine.storePlan(cachedResponse, for: request) else { return }
        engine.commit(plan, .whole(cachedResponse.data))
    }

    /// Removes every variant stored for `request`'s key, on disk (for every process) and here.
    public func removeCachedResponse(for request: URLRequest) {
        guard let lookup = engine.lookupKey(for: request) else { return }
        engine.remove(key: lookup.key)
    }

    /// Removes every response of this cache's partition stored with the tag `tag` (a value of
    /// one of ``SharedCacheConfiguration/tagFieldNames``, e.g. `Surrogate-Key`), on disk (for
    /// every process) and here. The index keeps the entries of each tag, so this reads only
    /// those, never the rest of the directory.
    /// - Returns: how many stored entries were removed.
    @discardableResult
    public func removeCachedResponses(taggedWith tag: String) -> Int {
        engine.purge(tag: tag, soft: false)
    }

    /// Marks every response of this cache's partition stored with `tag` stale instead of
    /// removing it (a soft purge): the HTTP flows (``HTTPCachingFlow``, `CachingHTTPClient`, the
    /// proxy) revalidate it before reuse, and may still serve it within `stale-while-revalidate`
    /// or `stale-if-error`, counted from the purge. ``cachedResponse(for:)`` still returns it, as
    /// `URLCache` returns stale responses.
    /// - Returns: how many stored entries were marked now.
    @discardableResult
    public func invalidateCachedResponses(taggedWith tag: String) -> Int {
        engine.purge(tag: tag, soft: true)
    }

    /// Marks every variant stored for `request` stale (a soft purge); see
    /// ``invalidateCachedResponses(taggedWith:)``.
    /// - Returns: how many stored entries were marked now.
    @discardableResult
    public func invalidateCachedResponse(for request: URLRequest) -> Int {
        guard let lookup = engine.lookupKey(for: request) else { return 0 }
        return engine.invalidate(key: lookup.key)
    }

    /// Removes every response stored at or after `date`, on disk and in memory.
    public func removeCachedResponses(since date: Date) {
        engine.removeStored(since: date)
    }

    /// Removes every response, on disk (for every process, every partition) and in memory.
    public func removeAllCachedResponses() {
        engine.removeEverything()
    }
}
