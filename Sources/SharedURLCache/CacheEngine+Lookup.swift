import CacheEntryFormat
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
    /// The URL string to remember ``key`` under (``KeyMemo``) if the lookup finds an entry; nil
    /// when the key came from the memo or is not to be remembered.
    var memoURL: String? = nil
}

/// Whether a lookup counts its hit or miss at once, or leaves it to its caller.
enum LookupCounting {
    case now
    case deferred
}

/// How a lookup hands out a stored body.
enum BodyDelivery {
    /// Read whole (the URLCache API, buffered flows).
    case whole
    /// Read whole up to ``BodyThresholds/wholeBodyBytes``; a larger one as a reader of the store,
    /// opened in the lookup so the decision and the bytes are of one version.
    case streamingLarge
    /// As `streamingLarge`, but a compressed body above ``BodyThresholds/passthroughMinimumBytes``
    /// also stays in the store, so that it can be sent as its stored stream (compressed
    /// passthrough) without being inflated at all.
    case streamingCompressed
}

/// What a lookup found: one stored response, from the memory tier or the store.
struct FoundEntry: Sendable {
    /// The response; its body is empty when ``storedBody`` streams it.
    var entry: CacheEntry
    /// A large body left in the store, read as it is served.
    var storedBody: StoredBody?
    /// Where the response lives (or would live) in the memory tier.
    var memoryKey: MemoryKey
    /// Served by the memory tier.
    var fromMemory: Bool
    /// The memory item's insertion stamp, when the response is in the tier now.
    var stamp: UInt64?
    /// Foundation's response already built for that memory item.
    var built: BuiltResponse?
    /// The exchange already parsed for that memory item.
    var exchange: ParsedExchange? = nil
    /// What a layer above kept with that memory item.
    var rendition: (any MemoryItemRendition)? = nil
    /// The store's version of the response (a memory item's is the one it mirrors); nil when it
    /// lives in the memory tier only.
    var version: UInt64? = nil

    var body: HitBody { storedBody.map(HitBody.stored) ?? .data(entry.body) }
}

/// A response record read from the store, with what came with it (its body, or a reader of it).
struct DiskRecord<Extra> {
    var record: StoredRecord
    var extra: Extra
    var memoryKey: MemoryKey
    /// The `Vary` that selected the record's variant, if any.
    var vary: VaryFields?
}

extension CacheEngine {
    /// Builds the primary key: ``CacheKey`` (partition, method, normalised URL with query).
    /// GET keys are remembered per URL string (``KeyMemo``): the partition is fixed per cache and
    /// `Vary` only selects the variant, so the string alone determines the key. A key computed
    /// with `rememberNow` false is not remembered; its string comes back as `memoURL`, for a
    /// lookup to remember once it finds an entry: a lookup of a URL never stored (a miss of a new
    /// URL, the common miss) then costs the memo nothing, and fills it with nothing that a hit
    /// would want (Benchmarks/RESULTS.md).
    func cacheKey(method: String?, url: URL?, rememberNow: Bool = true) -> Result<
        (key: [UInt8], memoURL: String?), StoreRefusal
    > {
        guard let url else { return .failure(.uncacheableRequest("no URL")) }
        let urlString = url.absoluteString
        let isGet = method == nil || method == "GET"
        if isGet, let key = keyMemo.withLock({ $0.key(for: urlString) }) { return .success((key, nil)) }
        guard let method = HTTPRequest.Method(method ?? "GET") else {
            return .failure(.uncacheableRequest("invalid method"))
        }
        do {
            let key = try CacheKey.encoded(partition: configuration.partition, method: method, url: urlString)
            guard isGet else { return .success((key, nil)) }
            guard rememberNow else { return .success((key, urlString)) }
            remember(key, for: urlString)
            return .success((key, nil))
        } catch {
            return .failure(.uncacheableRequest("\(error)"))
        }
    }

    /// Keeps `key` as the key of the GET of `url` (``KeyMemo``).
    func remember(_ key: [UInt8], for url: String) {
        keyMemo.withLock { $0.remember(key, for: url) }
    }

    /// ``cacheKey(method:url:)`` for the GET of a URL string (the caching flow's lookups and
    /// stores): a remembered string is not parsed into a `URL` again. A string that `URL` would
    /// spell differently (percent-encoding it) is never remembered as it is, so it takes the
    /// long way every time, to the same key.
    func httpKey(url: String) -> Result<[UInt8], StoreRefusal> {
        if let key = keyMemo.withLock({ $0.key(for: url) }) { return .success(key) }
        return cacheKey(method: "GET", url: URL(string: url)).map(\.key)
    }

    /// The cache's view of a request to look up, or `nil` (counted as a miss) when the request
    /// cannot have been stored.
    func lookupKey(for request: URLRequest) -> LookupKey? {
        switch cacheKey(method: request.httpMethod, url: request.url, rememberNow: false) {
        case .success(let (key, memoURL)):
            return LookupKey(
                key: key, requestFields: HTTPFields(pairs: request.allHTTPHeaderFields ?? [:]), memoURL: memoURL)
        case .failure(let why):
            countMiss()
            logger.debug("lookup of an uncacheable request", metadata: ["reason": "\(why)"])
            return nil
        }
    }

    /// The one lookup: the memory tier first (an item that mirrors the store is served only
    /// while the index still holds its version, docs/Design.md invariant 3), then the store. A
    /// response read from the store enters the memory tier as the version it was read as.
    /// - Parameters:
    ///   - delivery: whether a large stored body is read whole or handed out as a reader.
    ///   - counting: `.deferred` counts nothing: for a caller that may decline what it finds and
    ///     look up again (it counts a hit it serves with ``countHit(fromMemory:)``).
    func find(_ lookup: LookupKey, delivery: BodyDelivery = .whole, counting: LookupCounting = .now) -> FoundEntry? {
        let found = findInMemory(lookup) ?? findOnDisk(lookup, delivery: delivery)
        if found != nil, let url = lookup.memoURL { remember(lookup.key, for: url) }
        if counting == .now {
            // Not `if let found`: that copies the whole answer (a retain of everything it holds).
            if let fromMemory = found?.fromMemory { countHit(fromMemory: fromMemory) } else { countMiss() }
        }
        return found
    }

    /// The memory tier's item for `lookup` if it may still be served, else `nil` (then the store
    /// is asked).
    private func findInMemory(_ lookup: LookupKey) -> FoundEntry? {
        // Made under the lock from the item in place: what it holds is copied (retained) once.
        let found = memory.withLock { tier -> FoundEntry? in
            guard tier.count > 0 else { return nil }
            let memoryKey = tier.memoryKey(for: lookup.key, requestFields: lookup.requestFields)
            return tier.withItem(at: memoryKey) { item in
                FoundEntry(
                    entry: item.entry, storedBody: nil, memoryKey: memoryKey, fromMemory: true, stamp: item.stamp,
                    built: item.response, exchange: item.exchange, rendition: item.rendition, version: item.version)
            }
        }
        guard let found else { return nil }
        guard isCurrent(found.version, at: found.memoryKey) else {
            memory.withLock { $0.remove(found.memoryKey, ifVersion: found.version) }
            return nil
        }
        return found
    }

    /// Reads the response for `lookup` from the store (``diskRecord(for:open:)``); a body read
    /// whole is kept in the memory tier.
    private func findOnDisk(_ lookup: LookupKey, delivery: BodyDelivery) -> FoundEntry? {
        guard let store, diskCapacity > 0 else { return nil }
        do {
            switch delivery {
            case .whole:
                guard
                    let found = try diskRecord(
                        for: lookup,
                        open: { key, variant throws(CacheError) in
                            // The body as Data straight from the store's read: a large one is
                            // the core's own buffer, never copied on its way to the caller.
                            try store.recordWithBody(for: key, variant: variant).map { ($0.record, $0.body) }
                        }), let head = decodeHead(found.record)
                else { return nil }
                return remembered(found, head: head, body: found.extra)
            case .streamingLarge, .streamingCompressed:
                guard
                    let found = try diskRecord(
                        for: lookup,
                        open: { key, variant throws(CacheError) in
                            try store.openBody(for: key, variant: variant).map { ($0.record, $0.body) }
                        }), let head = decodeHead(found.record)
                else { return nil }
                let reader = found.extra
                let passthrough = delivery == .streamingCompressed && found.record.isCompressed
                let wholeUpTo = passthrough ? BodyThresholds.passthroughMinimumBytes : BodyThresholds.wholeBodyBytes
                guard reader.size > wholeUpTo else {
                    guard let body = readWhole(reader) else { return nil }
                    return remembered(found, head: head, body: body)
                }
                let version = found.record.version
                let memoryKey = found.memoryKey
                let body = StoredBody(
                    size: reader.size, reader: reader,
                    reopen: Self.bodyOpener(store: store, memoryKey: memoryKey, version: version),
                    onFailure: { [weak self] error in self?.storedBodyFailed(error) },
                    openEncoded: found.record.isCompressed
                        ? Self.encodedOpener(store: store, memoryKey: memoryKey, version: version) : nil)
                let entry = CacheEntry(
                    head: head, body: Data(), userInfo: found.record.userInfo,
                    storedAt: found.record.storedAt, invalidatedAt: found.record.invalidatedAt, inMemoryOnly: false)
                return FoundEntry(
                    entry: entry, storedBody: body, memoryKey: memoryKey, fromMemory: false, stamp: nil,
                    built: nil, version: version)
            }
        } catch {
            logger.warning("lookup failed; treated as a miss", metadata: ["error": "\(error.detailedDescription())"])
            return nil
        }
    }

    /// Opens the body of `memoryKey`'s entry, while it is still `version`.
    static func bodyOpener(store: CacheStore, memoryKey: MemoryKey, version: UInt64) -> @Sendable () -> BodyReader? {
        {
            guard
                let (again, reader) = try? store.openBody(
                    for: memoryKey.key, variant: memoryKey.variant, countAsUse: false),
                again.version == version
            else { return nil }
            return reader
        }
    }

    /// Opens the stored stream of `memoryKey`'s entry for compressed passthrough, while it is
    /// still `version`.
    private static func encodedOpener(store: CacheStore, memoryKey: MemoryKey, version: UInt64)
        -> @Sendable () -> BodyReader?
    {
        {
            guard let (again, reader) = try? store.openEncodedBody(for: memoryKey.key, variant: memoryKey.variant),
                again.version == version
            else { return nil }
            return reader
        }
    }

    /// A stored body read whole, or nil when it could not be (a damaged one was purged by the store).
    private func readWhole(_ reader: BodyReader) -> Data? {
        // Gathered in the Data itself: an array first cost a second copy of the whole body.
        var body = Data(capacity: reader.size)
        do {
            while case let chunk = try reader.read(maxBytes: CachedBody.chunkBytes), !chunk.isEmpty {
                body.append(contentsOf: chunk)
            }
        } catch {
            storedBodyFailed(error)
            return nil
        }
        return body
    }

    /// A response read whole from the store, kept in the memory tier as the version it was read as.
    private func remembered<Extra>(_ found: DiskRecord<Extra>, head: ResponseHead, body: Data) -> FoundEntry {
        let entry = CacheEntry(
            head: head, body: body, userInfo: found.record.userInfo, storedAt: found.record.storedAt,
            invalidatedAt: found.record.invalidatedAt, inMemoryOnly: false)
        let stamp = remember(entry, at: found.memoryKey, version: found.record.version, vary: found.vary)
        return FoundEntry(
            entry: entry, storedBody: nil, memoryKey: found.memoryKey, fromMemory: false, stamp: stamp,
            built: nil, version: found.record.version)
    }

    /// Keeps an entry read from the store in the memory tier, as the version it was read as.
    /// - Returns: the memory item's insertion stamp, or nil when the tier holds nothing.
    @discardableResult
    func remember(_ entry: CacheEntry, at memoryKey: MemoryKey, version: UInt64, vary: VaryFields?) -> UInt64? {
        let (evicted, stamp) = memory.withLock { tier -> (Int, UInt64?) in
            guard tier.capacity > 0 else { return (0, nil) }
            let evicted = tier.insert(.init(entry: entry, version: version), at: memoryKey, vary: vary)
            return (evicted, tier.lastStamp)
        }
        if evicted > 0 { counters.evictions.add(evicted, ordering: .relaxed) }
        return stamp
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

    /// Whether a memory item that mirrors `version` may be served: memory-only items (no
    /// version) always; others only while the index still holds the very version they mirror (one read, no body I/O). This is what
    /// keeps the tier coherent with every other process's stores and removes
    /// (docs/Design.md invariant 3).
    private func isCurrent(_ version: UInt64?, at memoryKey: MemoryKey) -> Bool {
        guard let version else { return true }
        guard let store else { return false }
        do {
            return try store.version(for: memoryKey.key, variant: memoryKey.variant) == version
        } catch {
            logger.warning("cannot validate a memory hit", metadata: ["error": "\(error.detailedDescription())"])
            return false
        }
    }

    /// Finds the response record for `lookup`: the record at the empty variant is either the
    /// response (no `Vary`: one read) or the vary spec, from which the request's variant is
    /// computed and read (two reads). `open` reads one record and whatever comes with it (the
    /// body, or a reader of it).
    private func diskRecord<Extra>(
        for lookup: LookupKey, open: ([UInt8], [UInt8]) throws(CacheError) -> (StoredRecord, Extra)?
    ) throws(CacheError) -> DiskRecord<Extra>? {
        guard let (first, extra) = try open(lookup.key, []) else { return nil }
        switch RecordKind(rawValue: first.appFlags) {
        case .response:
            return DiskRecord(
                record: first, extra: extra, memoryKey: MemoryKey(key: lookup.key, variant: []), vary: nil)
        case .varySpec:
            guard let spec = VarySpec(decoding: first.head) else {
                purgeCorrupt(first, why: "undecodable vary spec")
                return nil
            }
            let vary = VaryFields(responseFields: [.vary: spec.varyValue])
            let variant = VaryKey(vary: vary, requestFields: lookup.requestFields).encoded
            guard let (record, extra) = try open(lookup.key, variant),
                RecordKind(rawValue: record.appFlags) == .response
            else { return nil }
            return DiskRecord(
                record: record, extra: extra, memoryKey: MemoryKey(key: lookup.key, variant: variant), vary: vary)
        case nil:
            purgeCorrupt(first, why: "unknown record kind \(first.appFlags)")
            return nil
        }
    }

    /// The record's response head, or nil (a miss; a head that is not of a later format is purged).
    private func decodeHead(_ record: StoredRecord) -> ResponseHead? {
        guard let head = ResponseHead(decoding: record.head) else {
            if !ResponseHead.isLaterVersion(record.head) { purgeCorrupt(record, why: "undecodable response head") }
            return nil
        }
        return head
    }

    /// Bad cached data is a miss plus a purge, logged (docs/Style.md rule 20).
    func purgeCorrupt(_ record: StoredRecord, why: String) {
        counters.corruptPurges.add(1, ordering: .relaxed)
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
