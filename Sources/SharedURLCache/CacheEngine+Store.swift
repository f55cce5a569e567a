import CacheEntryFormat
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPCacheSemantics
import HTTPTypes
import SharedURLCacheStore

/// A body for ``CacheEngine/commit(_:_:)``: whole in memory, or streamed into a writer whose
/// last chunk has been written.
enum BodyToStore: ~Copyable {
    case whole(Data)
    /// `bytes` were written; `small` is the body again when the sink kept it for the memory tier.
    case streamed(BodyWriter, bytes: Int, small: Data?)
    /// The body stored as `expecting` is kept under the plan's head (a 304); `small` is the body
    /// when the caller has it in memory, for the memory tier.
    case refreshed(expecting: UInt64, small: Data?)
}

/// What a commit did.
enum StoreCommit {
    /// Nothing was stored (counted and logged).
    case refused
    /// An entry holds the response: on disk as `version`, or in the memory tier only (nil).
    case stored(version: UInt64?)

    var isStored: Bool { if case .stored = self { true } else { false } }
}

extension CacheEngine {
    /// The URLCache store's plan for a `CachedURLResponse` (``storePlan(key:url:vary:requestFields:userInfo:inMemoryOnly:now:bodyBytes:head:)``);
    /// `nil` when it is not to be stored (`.notAllowed`, or refused: counted and logged).
    func storePlan(_ cached: CachedURLResponse, for request: URLRequest) -> StorePlan? {
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
        guard let userInfo = UserInfoCodec.encode(cached.userInfo) else {
            refuse(.userInfoNotPropertyList, url: request.url)
            return nil
        }
        let now = configuration.now()
        guard let http = response as? HTTPURLResponse else {
            return storePlan(
                key: key, url: url, vary: VaryFields(responseFields: HTTPFields()), requestFields: HTTPFields(),
                userInfo: userInfo, inMemoryOnly: inMemoryOnly, now: now, bodyBytes: cached.data.count
            ) { _ in
                ResponseHead(
                    kind: .plain, statusCode: 0, expectedContentLength: response.expectedContentLength,
                    url: url, mimeType: response.mimeType, textEncodingName: response.textEncodingName,
                    headerFields: [], varyRequestFields: [])
            }
        }
        let pairs = http.allHeaderFields
            .compactMap { name, value -> ResponseHead.HeaderPair? in
                guard let name = name as? String, let value = value as? String else { return nil }
                return .init(name: name, value: value)
            }
            .sorted { ($0.name, $0.value) < ($1.name, $1.value) }
        let vary = VaryFields(responseFields: HTTPFields(pairs: pairs.map { (key: $0.name, value: $0.value) }))
        let requestFields = HTTPFields(pairs: request.allHTTPHeaderFields ?? [:])
        return storePlan(
            key: key, url: url, vary: vary, requestFields: requestFields, userInfo: userInfo,
            inMemoryOnly: inMemoryOnly, now: now, bodyBytes: cached.data.count
        ) { vary in
            let selecting = vary.map {
                VaryKey.selectingFields(vary: $0, requestFields: requestFields)
                    .map { ResponseHead.HeaderPair(name: $0.name.canonicalName, value: $0.value) }
            }
            return ResponseHead(
                kind: .http, statusCode: http.statusCode, expectedContentLength: http.expectedContentLength,
                url: url, mimeType: nil, textEncodingName: nil, headerFields: pairs,
                varyRequestFields: selecting ?? [])
        }
    }

    /// Commits a plan, the one way every store path writes: to disk (one index commit with the
    /// `Vary` bookkeeping, evicting to the disk capacity), then into the memory tier with the
    /// version written. A whole body is written at once, unless the plan or a cache without a
    /// disk tier keeps it in memory only; a streamed body is published from its writer, and kept
    /// in the memory tier when the sink kept a copy (``BodyThresholds/wholeBodyBytes``). What the
    /// disk refuses leaves nothing of the key behind (``dropRefused(key:_:url:)``).
    @discardableResult
    func commit(_ plan: StorePlan, _ body: consuming BodyToStore) -> StoreCommit {
        let capacity = storeCapacity
        switch consume body {
        case .whole(let data):
            var inMemoryOnly = plan.inMemoryOnly
            var version: UInt64?
            if !inMemoryOnly {
                if let store, capacity > 0 {
                    do {
                        version = try store.store(
                            descriptor(plan, head: plan.headBytes), body: Array(data), capacityBytes: capacity)
                    } catch {
                        dropRefused(key: plan.key, error, url: URL(string: plan.head.url))
                        return .refused
                    }
                } else {
                    // No disk tier: the entry serves this process only, as URLCache does with a
                    // zero disk capacity.
                    inMemoryOnly = true
                }
            }
            let entry = CacheEntry(
                head: plan.head, body: data, userInfo: plan.userInfo, storedAt: plan.storedAt,
                inMemoryOnly: inMemoryOnly)
            let (kept, evicted) = memory.withLock { tier -> (Bool, Int) in
                guard tier.capacity > 0 else { return (false, 0) }
                let evicted = tier.insert(.init(entry: entry, version: version), at: plan.memoryKey, vary: plan.vary)
                return (entry.memoryCost <= tier.capacity, evicted)
            }
            if evicted > 0 { counters.evictions.add(evicted, ordering: .relaxed) }
            guard version != nil || kept else { return .refused }
            counters.stores.add(1, ordering: .relaxed)
            return .stored(version: version)
        case .refreshed(let expected, let small):
            // Refused (nothing changes) when the entry changed since it was read, or cannot be
            // refreshed here: the caller stores the whole response instead.
            guard !plan.inMemoryOnly, let store, capacity > 0 else { return .refused }
            let version: UInt64?
            do {
                version = try store.refresh(descriptor(plan, head: plan.headBytes), expecting: expected)
            } catch {
                logger.notice(
                    "stored head not refreshed", metadata: ["error": "\(error.detailedDescription())"])
                return .refused
            }
            guard let version else { return .refused }
            counters.stores.add(1, ordering: .relaxed)
            if let small {
                let entry = CacheEntry(
                    head: plan.head, body: small, userInfo: plan.userInfo, storedAt: plan.storedAt, inMemoryOnly: false)
                remember(entry, at: plan.memoryKey, version: version, vary: plan.vary)
            } else {
                memory.withLock { $0.removeAll(key: plan.key) }
            }
            return .stored(version: version)
        case .streamed(let writer, let bytes, let small):
            var head = plan.head
            head.expectedContentLength = Int64(bytes)
            let version: UInt64
            do {
                version = try writer.commit(descriptor(plan, head: head.encoded()), capacityBytes: capacity)
            } catch {
                dropRefused(key: plan.key, error, url: URL(string: head.url))
                return .refused
            }
            counters.stores.add(1, ordering: .relaxed)
            if let small, small.count == bytes {
                let entry = CacheEntry(
                    head: head, body: small, userInfo: plan.userInfo, storedAt: plan.storedAt, inMemoryOnly: false)
                remember(entry, at: plan.memoryKey, version: version, vary: plan.vary)
            } else {
                // What the tier holds for this key is an older version now: drop it at once.
                memory.withLock { $0.removeAll(key: plan.key) }
            }
            return .stored(version: version)
        }
    }

    /// The index record a plan commits; `head` is the plan's head encoded with the body's length.
    private func descriptor(_ plan: StorePlan, head: [UInt8]) -> RecordDescriptor {
        RecordDescriptor(
            key: plan.key, variant: plan.variant, partition: plan.partition, head: head, userInfo: plan.userInfo,
            storedAt: plan.storedAt, appFlags: RecordKind.response.rawValue,
            otherVariants: Self.otherVariants(for: plan.vary), tags: plan.tags)
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
