import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPCacheSemantics
import HTTPTypes
import SharedURLCacheStore

/// What identifies a request in the cache: the primary key bytes and the request's fields
/// (from which the variant is computed when the stored response has `Vary`).
struct LookupKey: Sendable {
    var key: [UInt8]
    var requestFields: HTTPFields
}

extension SharedCache {
    /// Builds the primary key: ``CacheKey`` (partition, method, normalised URL with query).
    /// GET keys are remembered per URL string (``KeyMemo``): the partition is fixed per cache and
    /// `Vary` only selects the variant, so the string alone determines the key.
    func cacheKey(method: String?, url: URL?) -> Result<[UInt8], StoreRefusal> {
        guard let url else { return .failure(.uncacheableRequest("no URL")) }
        let urlString = url.absoluteString
        let isGet = method == nil || method == "GET"
        if isGet, let key = keyMemo.withLock({ $0.key(for: urlString) }) { return .success(key) }
        guard let method = HTTPRequest.Method(method ?? "GET") else {
            return .failure(.uncacheableRequest("invalid method"))
        }
        do {
            let key = try CacheKey(partition: configuration.partition, method: method, url: urlString).encoded
            if isGet { keyMemo.withLock { $0.remember(key, for: urlString) } }
            return .success(key)
        } catch {
            return .failure(.uncacheableRequest("\(error)"))
        }
    }

    /// The cache's view of a request to look up, or `nil` (counted as a miss) when the request
    /// cannot have been stored.
    func lookupKey(for request: URLRequest) -> LookupKey? {
        switch cacheKey(method: request.httpMethod, url: request.url) {
        case .success(let key):
            return LookupKey(key: key, requestFields: HTTPFields(pairs: request.allHTTPHeaderFields ?? [:]))
        case .failure(let why):
            countMiss()
            logger.debug("lookup of an uncacheable request", metadata: ["reason": "\(why)"])
            return nil
        }
    }

    /// Memory tier first (validated against the index unless memory-only), then the store.
    func entry(for lookup: LookupKey) -> CacheEntry? {
        if let entry = memoryEntry(for: lookup) { return entry }
        guard let (entry, memoryKey, version, vary) = diskEntry(for: lookup) else {
            countMiss()
            return nil
        }
        countHit()
        remember(entry, at: memoryKey, version: version, vary: vary)
        return entry
    }

    /// The memory tier's item for `lookup` if it may still be served (counted as a hit unless
    /// `counting` is `.deferred`), else `nil` (not counted: the store is asked next).
    func memoryEntry(for lookup: LookupKey, counting: LookupCounting = .now) -> CacheEntry? {
        memoryItem(for: lookup, counting: counting)?.1.entry
    }

    /// The memory tier's item for `lookup` and where it lives, as ``memoryEntry(for:counting:)``.
    func memoryItem(for lookup: LookupKey, counting: LookupCounting = .now) -> (MemoryKey, MemoryTier.Item)? {
        let found = memory.withLock { tier -> (MemoryKey, MemoryTier.Item)? in
            guard tier.count > 0 else { return nil }
            let memoryKey = tier.memoryKey(for: lookup.key, requestFields: lookup.requestFields)
            return tier.item(at: memoryKey).map { (memoryKey, $0) }
        }
        guard let (memoryKey, item) = found else { return nil }
        if isCurrent(item, at: memoryKey) {
            if counting == .now { countHit(fromMemory: true) }
            return (memoryKey, item)
        }
        memory.withLock { $0.remove(memoryKey, ifVersion: item.version) }
        return nil
    }

    /// Keeps an entry read from the store in the memory tier, as the version it was read as.
    func remember(_ entry: CacheEntry, at memoryKey: MemoryKey, version: UInt64, vary: VaryFields?,
                  response: BuiltResponse? = nil) {
        let evicted = memory.withLock { tier in
            tier.capacity > 0
                ? tier.insert(.init(entry: entry, version: version, response: response), at: memoryKey, vary: vary) : 0
        }
        if evicted > 0 { counters.evictions.add(evicted, ordering: .relaxed) }
    }

    /// Counts in this process and in the directory's shared counters (every process's view).
    func countHit(fromMemory: Bool = false) {
        counters.hits.add(1, ordering: .relaxed)
        if fromMemory { counters.memoryHits.add(1, ordering: .relaxed) }
        store?.countUsage(hits: 1)
    }

    func countMiss() {
        counters.misses.add(1, ordering: .relaxed)
        store?.countUsage(misses: 1)
    }

    /// Whether a memory item may be served: memory-only items always; others only while the
    /// index still holds the very version they mirror (one read, no body I/O). This is what
    /// keeps the tier coherent with every other process's stores and removes
    /// (docs/Design.md invariant 3).
    private func isCurrent(_ item: MemoryTier.Item, at memoryKey: MemoryKey) -> Bool {
        guard let version = item.version else { return true }
        guard let store else { return false }
        do {
            return try store.version(for: memoryKey.key, variant: memoryKey.variant) == version
        } catch {
            logger.warning("cannot validate a memory hit", metadata: ["error": "\(error.detailedDescription())"])
            return false
        }
    }

    /// Reads the entry from the store (see ``diskRecord(for:open:)``).
    func diskEntry(for lookup: LookupKey) -> (CacheEntry, MemoryKey, UInt64, VaryFields?)? {
        guard let store, diskCapacity > 0 else { return nil }
        do {
            guard let (record, _, memoryKey, vary) = try diskRecord(for: lookup, open: { key, variant throws(CacheError) in
                try store.record(for: key, variant: variant, includeBody: true).map { ($0, ()) }
            }), let entry = decodeEntry(record)
            else { return nil }
            return (entry, memoryKey, record.version, vary)
        } catch {
            logger.warning("lookup failed; treated as a miss", metadata: ["error": "\(error.detailedDescription())"])
            return nil
        }
    }

    /// Finds the response record for `lookup`: the record at the empty variant is either the
    /// response (no `Vary`: one read) or the vary spec, from which the request's variant is
    /// computed and read (two reads). `open` reads one record and whatever comes with it (the
    /// body, or a reader of it).
    func diskRecord<Extra>(
        for lookup: LookupKey, open: ([UInt8], [UInt8]) throws(CacheError) -> (StoredRecord, Extra)?
    ) throws(CacheError) -> (StoredRecord, Extra, MemoryKey, VaryFields?)? {
        guard let (first, extra) = try open(lookup.key, []) else { return nil }
        switch RecordKind(rawValue: first.appFlags) {
        case .response:
            return (first, extra, MemoryKey(key: lookup.key, variant: []), nil)
        case .varySpec:
            guard let spec = VarySpec(decoding: first.head) else {
                purgeCorrupt(first, why: "undecodable vary spec")
                return nil
            }
            let vary = VaryFields(responseFields: [.vary: spec.varyValue])
            let variant = VaryKey(vary: vary, requestFields: lookup.requestFields).encoded
            guard let (record, extra) = try open(lookup.key, variant), RecordKind(rawValue: record.appFlags) == .response
            else { return nil }
            return (record, extra, MemoryKey(key: lookup.key, variant: variant), vary)
        case nil:
            purgeCorrupt(first, why: "unknown record kind \(first.appFlags)")
            return nil
        }
    }

    private func decodeEntry(_ record: StoredRecord) -> CacheEntry? {
        guard let head = ResponseHead(decoding: record.head), let body = record.body else {
            if !ResponseHead.isLaterVersion(record.head) { purgeCorrupt(record, why: "undecodable response head") }
            return nil
        }
        return CacheEntry(head: head, body: Data(body), userInfo: record.userInfo, storedAt: record.storedAt, inMemoryOnly: false)
    }

    /// Bad cached data is a miss plus a purge, logged (docs/Style.md rule 20).
    func purgeCorrupt(_ record: StoredRecord, why: String) {
        counters.corruptEntries.add(1, ordering: .relaxed)
        logger.error("corrupt cache entry purged", metadata: ["reason": "\(why)", "version": "\(record.version)"])
        do { try store?.remove(key: record.key, variant: record.variant) } catch {
            logger.warning("cannot purge a corrupt entry", metadata: ["error": "\(error.detailedDescription())"])
        }
    }
}

/// GET keys by URL string, bounded: when full it starts over, so a process that sees many
/// distinct URLs pays the key building it paid before and holds at most `limit` keys.
struct KeyMemo {
    static let defaultLimit = 1024
    private(set) var keys: [String: [UInt8]] = [:]
    let limit: Int

    init(limit: Int = KeyMemo.defaultLimit) { self.limit = max(limit, 0) }

    func key(for url: String) -> [UInt8]? { keys[url] }

    mutating func remember(_ key: [UInt8], for url: String) {
        guard limit > 0 else { return }
        if keys.count >= limit { keys.removeAll(keepingCapacity: true) }
        keys[url] = key
    }
}

extension HTTPFields {
    /// Fields from Foundation's dictionary form; names that are not valid field names are
    /// skipped (they can take no part in `Vary` matching).
    init(pairs: some Sequence<(key: String, value: String)>) {
        self.init()
        for (name, value) in pairs {
            guard let fieldName = HTTPField.Name(name) else { continue }
            append(HTTPField(name: fieldName, value: value))
        }
    }
}
