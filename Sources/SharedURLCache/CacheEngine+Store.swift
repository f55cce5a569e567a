import CacheEntryFormat
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPCacheSemantics
import HTTPTypes
import SharedURLCacheStore

/// A response ready to store: keys computed, head and userInfo encoded. Sendable, so the disk
/// work can run on another thread.
struct PreparedStore: Sendable {
    var key: [UInt8]
    /// The variant: empty without `Vary`, `VaryKey(...).encoded` with it.
    var variant: [UInt8]
    /// The response's `Vary`, when it names fields.
    var vary: VaryFields?
    var entry: CacheEntry
    var headBytes: [UInt8]

    /// Body + head + userInfo, the figure ``SharedCacheConfiguration/maximumEntrySizeBytes`` bounds.
    var entrySize: Int { entry.body.count + headBytes.count + entry.userInfo.count }
}

extension CacheEngine {
    /// Turns a `CachedURLResponse` into a ``PreparedStore``; `nil` when it is not to be stored
    /// (`.notAllowed`, or refused: counted and logged).
    func prepare(_ cached: CachedURLResponse, for request: URLRequest) -> PreparedStore? {
        let inMemoryOnly: Bool
        switch cached.storagePolicy {
        case .allowed: inMemoryOnly = false
        case .allowedInMemoryOnly: inMemoryOnly = true
        case .notAllowed: return nil
        @unknown default: return nil
        }
        let key: [UInt8]
        switch cacheKey(method: request.httpMethod, url: request.url) {
        case .success(let computed): key = computed.key
        case .failure(let why):
            refuse(why, url: request.url)
            return nil
        }
        let response = cached.response
        let url = response.url?.absoluteString ?? request.url?.absoluteString ?? ""
        var head: ResponseHead
        var variant: [UInt8] = []
        var vary: VaryFields?
        if let http = response as? HTTPURLResponse {
            let pairs = http.allHeaderFields
                .compactMap { name, value -> ResponseHead.HeaderPair? in
                    guard let name = name as? String, let value = value as? String else { return nil }
                    return .init(name: name, value: value)
                }
                .sorted { ($0.name, $0.value) < ($1.name, $1.value) }
            let responseFields = HTTPFields(pairs: pairs.map { (key: $0.name, value: $0.value) })
            let parsed = VaryFields(responseFields: responseFields)
            if parsed.isWildcard || parsed.hasInvalidName {
                refuse(parsed.isWildcard ? .varyWildcard : .invalidVary, url: request.url)
                return nil
            }
            let requestFields = HTTPFields(pairs: request.allHTTPHeaderFields ?? [:])
            var selecting: [ResponseHead.HeaderPair] = []
            if !parsed.isEmpty {
                vary = parsed
                variant = VaryKey(vary: parsed, requestFields: requestFields).encoded
                selecting = VaryKey.selectingFields(vary: parsed, requestFields: requestFields)
                    .map { .init(name: $0.name.canonicalName, value: $0.value) }
            }
            head = ResponseHead(
                kind: .http, statusCode: http.statusCode, expectedContentLength: http.expectedContentLength,
                url: url, mimeType: nil, textEncodingName: nil, headerFields: pairs, varyRequestFields: selecting)
        } else {
            head = ResponseHead(
                kind: .plain, statusCode: 0, expectedContentLength: response.expectedContentLength,
                url: url, mimeType: response.mimeType, textEncodingName: response.textEncodingName,
                headerFields: [], varyRequestFields: [])
        }
        guard let userInfo = UserInfoCodec.encode(cached.userInfo) else {
            refuse(.userInfoNotPropertyList, url: request.url)
            return nil
        }
        let prepared = PreparedStore(
            key: key, variant: variant, vary: vary,
            entry: CacheEntry(
                head: head, body: cached.data, userInfo: userInfo, storedAt: Self.storeTime(),
                inMemoryOnly: inMemoryOnly),
            headBytes: head.encoded())
        guard prepared.entrySize <= configuration.maximumEntrySizeBytes else {
            refuse(
                .entryTooLarge(bytes: prepared.entrySize, limit: configuration.maximumEntrySizeBytes), url: request.url)
            return nil
        }
        return prepared
    }

    /// Writes a prepared entry: to disk for `.allowed` (when the disk tier is on), then into
    /// the memory tier with the version written (or as memory-only). A full disk tier evicts
    /// older entries to make room; what the disk refuses is not kept at all
    /// (``dropRefused(key:_:url:)``).
    /// - Returns: whether an entry now holds it (on disk, or in the memory tier for an entry
    ///   kept in memory only); false when the store refused it.
    @discardableResult
    func commit(_ prepared: PreparedStore) -> Bool {
        var entry = prepared.entry
        var version: UInt64?
        if !entry.inMemoryOnly {
            let capacity = storeCapacity
            if let store, capacity > 0 {
                do {
                    version = try write(prepared, to: store, capacity: capacity)
                } catch {
                    dropRefused(key: prepared.key, error, url: URL(string: entry.head.url))
                    return false
                }
            } else {
                // No disk tier: the entry serves this process only, as URLCache does with a
                // zero disk capacity.
                entry.inMemoryOnly = true
            }
        }
        let memoryKey = MemoryKey(key: prepared.key, variant: prepared.variant)
        let (kept, evicted) = memory.withLock { tier -> (Bool, Int) in
            guard tier.capacity > 0 else { return (false, 0) }
            let evicted = tier.insert(.init(entry: entry, version: version), at: memoryKey, vary: prepared.vary)
            return (entry.memoryCost <= tier.capacity, evicted)
        }
        if evicted > 0 { counters.evictions.add(evicted, ordering: .relaxed) }
        if version != nil || kept { counters.stores.add(1, ordering: .relaxed) }
        return version != nil || kept
    }

    /// The cap each disk store evicts to: ``diskCapacity``, or the directory's hard cap
    /// (``SharedCacheConfiguration/store``) when that is lower, since a store's own capacity
    /// takes the hard cap's place in the core.
    var storeCapacity: Int { min(diskCapacity, configuration.store.hardCapacityBytes ?? .max) }

    /// After the disk refused a store of `key` (larger than the capacity, an I/O error…),
    /// nothing of the key may outlive it here or on disk. Not in memory: an item with no
    /// version is served without asking the index, so another process's remove or newer store
    /// could never reach it. Not on disk: the older response would come back once this
    /// process's copy were gone. An entry larger than the capacity needs no disk remove: the
    /// core removed the one it would have replaced in that very commit.
    func dropRefused(key: [UInt8], _ error: CacheError, url: URL?) {
        let tooLarge = error.code == .overCapacity
        refuse(tooLarge ? .largerThanDiskCapacity(capacity: storeCapacity) : .storeFailed(error), url: url)
        if !tooLarge, let store {
            do { try store.remove(key: key, variant: nil) } catch {
                logger.warning(
                    "cannot remove the entry a failed store would have replaced",
                    metadata: ["error": "\(error.detailedDescription())"])
            }
        }
        memory.withLock { $0.removeAll(key: key) }
    }

    /// The disk write: one commit (``otherVariants(for:)``). `capacity` is the disk capacity
    /// the store evicts to.
    private func write(_ prepared: PreparedStore, to store: CacheStore, capacity: Int) throws(CacheError) -> UInt64 {
        let descriptor = RecordDescriptor(
            key: prepared.key, variant: prepared.variant, partition: Array(configuration.partition.utf8),
            head: prepared.headBytes, userInfo: prepared.entry.userInfo, storedAt: prepared.entry.storedAt,
            appFlags: RecordKind.response.rawValue, otherVariants: Self.otherVariants(for: prepared.vary),
            tags: tags(of: prepared.entry.head))
        return try store.store(descriptor, body: Array(prepared.entry.body), capacityBytes: capacity)
    }

    /// The tags a response is stored with: the values of the configured tag fields
    /// (``SharedCacheConfiguration/tagFieldNames``).
    func tags(of head: ResponseHead) -> [String] {
        CacheTags.tags(
            in: head.headerFields.lazy.map { (name: $0.name, value: $0.value) }, names: configuration.tagFieldNames)
    }

    /// What a response's store does to the key's other variants, in its own commit. Without
    /// `Vary`: it is the key's only entry, so no process's memory tier can still validate a
    /// variant of an earlier `Vary` response. With `Vary`: the vary spec goes to the empty
    /// variant unless the same one is there; a different one is replaced, and the variants it
    /// selected are removed for the same reason (docs/Formats.md, "Variants").
    static func otherVariants(for vary: VaryFields?) -> OtherVariants {
        guard let vary else { return .remove }
        return .selectedBy(
            head: VarySpec(names: vary.names.map(\.canonicalName)).encoded(),
            appFlags: RecordKind.varySpec.rawValue)
    }

    /// Store times are kept to the millisecond, as the index keeps them, so that
    /// `removeCachedResponses(since:)` treats memory and disk alike.
    static func storeTime() -> Date {
        Date(timeIntervalSince1970: (Date().timeIntervalSince1970 * 1000).rounded(.down) / 1000)
    }

    /// Counts and logs a response that is not stored.
    func refuse(_ reason: StoreRefusal, url: URL?) {
        counters.refusals.add(1, ordering: .relaxed)
        logger.notice("response not stored", metadata: ["reason": "\(reason)", "url": "\(url?.absoluteString ?? "?")"])
    }

    // MARK: Removing

    /// Removes every variant of `key`; returns how many entries the directory had for it.
    @discardableResult
    func remove(key: [UInt8]) -> Int {
        var removed = 0
        if let store {
            do { removed = try store.remove(key: key, variant: nil) } catch {
                logger.warning("remove failed", metadata: ["error": "\(error.detailedDescription())"])
            }
        }
        memory.withLock { $0.removeAll(key: key) }
        return removed
    }

    /// Removes (or, `soft`, marks stale) this partition's entries tagged `tag`, in every
    /// process: the index finds them through its tag postings. Memory-only entries with the tag
    /// go too; the others were read from disk, so their next use finds the index changed.
    /// Returns how many stored entries were removed or marked.
    @discardableResult
    func purge(tag: String, soft: Bool) -> Int {
        var count = 0
        if let store {
            do {
                let report = try store.purge(tag: tag, partition: Array(configuration.partition.utf8), soft: soft)
                count = soft ? report.invalidatedEntries : report.removedEntries
            } catch {
                logger.warning(
                    "purge by tag failed", metadata: ["tag": "\(tag)", "error": "\(error.detailedDescription())"])
            }
        }
        memory.withLock { $0.removeAll(where: { $0.version == nil && tags(of: $0.entry.head).contains(tag) }) }
        return count
    }

    /// Marks every variant of `key` stale (a soft purge); returns how many were marked.
    @discardableResult
    func invalidate(key: [UInt8]) -> Int {
        var marked = 0
        if let store {
            do { marked = try store.invalidate(key: key, variant: nil) } catch {
                logger.warning("soft purge failed", metadata: ["error": "\(error.detailedDescription())"])
            }
        }
        // Memory-only entries have no record to mark: they go; the others are read again, marked.
        memory.withLock { $0.removeAll(key: key) }
        return marked
    }

    func removeStored(since date: Date) {
        if let store {
            do { try store.removeAll(storedSince: date) } catch {
                logger.warning("remove since failed", metadata: ["error": "\(error.detailedDescription())"])
            }
        }
        memory.withLock { $0.removeAll(where: { $0.entry.storedAt >= date }) }
    }

    func removeEverything() {
        if let store {
            do { try store.removeAll() } catch {
                logger.warning("remove all failed", metadata: ["error": "\(error.detailedDescription())"])
            }
        }
        memory.withLock { $0.removeAll() }
    }
}
