import Foundation
import HTTPCacheSemantics
import Logging
import SharedURLCacheStore
import Synchronization

/// The cache behind both public faces: ``SharedCache`` (URLCache's members) and
/// ``HTTPCachingFlow`` (RFC 9111). It owns the memory tier and the store handle and has one
/// lookup (``find(_:delivery:counting:)``, CacheEngine+Lookup.swift) and one store path: every
/// store builds a ``StorePlan`` (StorePlan.swift, where it is validated) and hands it to
/// ``commit(_:_:)`` with its body, whole or streamed: one index commit with its `Vary`
/// bookkeeping (CacheEngine+Store.swift).
///
/// How a hit travels: `SharedCache.cachedResponse(for:)` → ``lookupKey(for:)`` (the key, memoised
/// per URL once a store wrote it or a lookup found it) → ``find(_:delivery:counting:)``: the
/// memory tier's item, served after one index
/// read of its version, else the store's record (one index read, or two with `Vary`) and its
/// body, which then enters the memory tier → ``cachedResponse(for:requestURL:)`` builds
/// Foundation's objects once per memory item. The flow's ``httpLookup(url:requestFields:delivery:counting:)``
/// goes through the same ``find(_:delivery:counting:)``.
final class CacheEngine: Sendable {
    /// `nil` only for the memory-only fallback of `SharedCache.shared` when its directory
    /// cannot be opened.
    let store: CacheStore?
    let configuration: SharedCacheConfiguration
    let memory: Locked<MemoryTier>
    /// Primary keys of GET requests by URL string (CacheEngine+Lookup.swift).
    let keyMemo = Locked(KeyMemo())
    let counters = Counters()
    let logger: Logger
    private let diskCapacityStorage: Atomic<Int>

    /// Per-process event counters.
    final class Counters: Sendable {
        let hits = Atomic<Int>(0)
        let memoryHits = Atomic<Int>(0)
        let misses = Atomic<Int>(0)
        let stores = Atomic<Int>(0)
        let evictions = Atomic<Int>(0)
        let refusals = Atomic<Int>(0)
        let corruptPurges = Atomic<Int>(0)
        /// NotStorableReason.token → responses the flow did not store for it.
        let notStorable = Mutex<[String: Int]>([:])
    }

    init(configuration: SharedCacheConfiguration, store: CacheStore?) {
        self.store = store
        self.configuration = configuration
        memory = Locked(MemoryTier(capacity: configuration.memoryCapacity))
        diskCapacityStorage = Atomic(store == nil ? 0 : max(configuration.diskCapacity, 0))
        logger = configuration.logger
    }

    /// The disk budget (`SharedCache.diskCapacity`); always 0 without a store.
    var diskCapacity: Int {
        get { diskCapacityStorage.load(ordering: .relaxed) }
        set { diskCapacityStorage.store(store == nil ? 0 : max(newValue, 0), ordering: .relaxed) }
    }

    /// The cheap disk usage, or `nil` (logged) without a disk tier or when it cannot be read.
    func diskUsage() -> DiskUsage? {
        guard let store else { return nil }
        do {
            return try store.diskUsage(measure: false)
        } catch {
            logger.warning("cannot read disk usage", metadata: ["error": "\(error.detailedDescription())"])
            return nil
        }
    }

    /// The directory's shared counters, or `nil` (logged) without a disk tier or when they
    /// cannot be read.
    func storeStatistics() -> StoreStatistics? {
        do { return try store?.statistics() } catch {
            logger.warning("cannot read disk statistics", metadata: ["error": "\(error.detailedDescription())"])
            return nil
        }
    }
}
