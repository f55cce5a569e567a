import CSharedURLCache
import Foundation

/// The owner of one open cache directory: the only Swift type that holds a C handle.
///
/// ```swift
/// let store = try CacheStore(directory: "/var/cache/api")
/// let version = try store.store(RecordDescriptor(key: key, head: head), body: body)
/// if let hit = try store.record(for: key) { use(hit.body!) }
/// ```
///
/// Safe to share between threads and tasks; several processes may open the same directory at
/// once and see each other's stores and removes. Opening the same directory twice in one process
/// shares one underlying environment.
///
/// ## Topics
/// - ``store(_:body:capacityBytes:)``, ``makeBodyWriter(uncompressed:)``
/// - ``record(for:variant:includeBody:)``, ``version(for:variant:)``, ``variants(for:)``
/// - ``remove(key:variant:)``, ``removeAll(storedSince:)``, ``removeAll()``
/// - ``statistics()``, ``diskUsage(measure:)``, ``flush()``
public final class CacheStore: @unchecked Sendable {
    // @unchecked: the handle is immutable after init and the C core is thread-safe (its own
    // locks guard every shared structure); nothing else is stored.
    private let handle: OpaquePointer
    /// The directory this handle opened, as given.
    public let directory: String
    /// The configuration it was opened with.
    public let configuration: CacheStoreConfiguration

    /// Opens (or creates) the cache directory.
    /// - Parameters:
    ///   - directory: the cache root; never a symlink, never world-writable.
    ///   - configuration: limits, durability and tuning.
    /// - Throws: `CacheError` with `.directoryNotFound`, `.unsafeDirectory`, `.notACache`,
    ///   `.unsupportedVersion`, `.permissionDenied`, `.io` or `.index`.
    /// The corresponding C function is `suc_cache_open`.
    public init(directory: String, configuration: CacheStoreConfiguration = .init()) throws(CacheError) {
        var options = suc_options()
        suc_options_init(&options)
        options.create = configuration.createIfMissing ? 1 : 0
        switch configuration.durability {
        case .standard: options.durability = SUC_DURABILITY_DEFAULT
        case .durable: options.durability = SUC_DURABILITY_DURABLE
        case .relaxed: options.durability = SUC_DURABILITY_RELAXED
        }
        options.map_size_initial = UInt64(max(configuration.initialIndexBytes, 1))
        options.map_size_max = UInt64(max(configuration.maximumIndexBytes, 1))
        options.max_body_bytes = UInt64(max(configuration.maximumBodyBytes, 1))
        options.max_key_bytes = UInt32(clamping: max(configuration.maximumKeyBytes, 1))
        options.max_head_bytes = UInt32(clamping: max(configuration.maximumHeadBytes, 1))
        options.max_user_info_bytes = UInt32(clamping: max(configuration.maximumUserInfoBytes, 1))
        options.inline_max_bytes = configuration.inlineBodyLimitBytes.map { UInt32(clamping: max($0, 1)) } ?? UInt32.max
        options.max_readers = UInt32(clamping: max(configuration.maximumReaders, 1))
        options.compression_level = Int32(min(max(configuration.compressionLevel, 1), 9))
        options.touch_interval_ms = UInt32(clamping: max(configuration.touchInterval.milliseconds, 1))
        options.relaxed_sync_interval_ms = UInt32(clamping: max(configuration.relaxedSyncInterval.milliseconds, 1))
        options.hard_cap_bytes = configuration.hardCapacityBytes.map { UInt64(max($0, 1)) } ?? 0
        options.min_free_bytes = configuration.minimumFreeBytes.map { UInt64(max($0, 0)) } ?? 0
        var detail = suc_error()
        var handle: OpaquePointer?
        let rc = suc_cache_open(directory, &options, &handle, &detail)
        guard rc == SUC_OK, let handle else { throw CacheError(core: rc, detail) }
        self.handle = handle
        self.directory = directory
        self.configuration = configuration
    }

    deinit { suc_cache_close(handle) }

    /// Lends the C handle for the duration of `body`; it must not escape.
    func withHandle<R, E: Error>(_ body: (OpaquePointer) throws(E) -> R) throws(E) -> R {
        try body(handle)
    }

    // MARK: Storing

    /// Stores an entry, replacing any entry with the same key and variant.
    /// - Parameters:
    ///   - descriptor: keys, head, userInfo and store time.
    ///   - body: the response body.
    ///   - capacityBytes: this store's cap on the bytes entries take (records + body files):
    ///     least recently used entries are evicted in the same commit until the entry fits, as
    ///     `URLCache` does at its disk capacity. `nil`: the configuration's
    ///     ``CacheStoreConfiguration/hardCapacityBytes``.
    /// - Returns: the new record version.
    /// - Throws: `.tooLarge`, `.diskFull`, `.indexFull`, `.io`, `.invalidInput`, and
    ///   `.overCapacity` for an entry larger than the capacity itself (the entry it would
    ///   have replaced is removed even then, so an older response never comes back).
    /// The corresponding C function is `suc_put`.
    @discardableResult
    public func store(_ descriptor: RecordDescriptor, body: [UInt8], capacityBytes: Int? = nil) throws(CacheError)
        -> UInt64
    {
        let result: Result<UInt64, CacheError> = body.withUnsafeBytes { bodyBytes in
            descriptor.withParams(capacityBytes: capacityBytes) { params in
                var detail = suc_error()
                var version: UInt64 = 0
                let rc = suc_put(handle, &params, bodyBytes.baseAddress, bodyBytes.count, &version, &detail)
                return rc == SUC_OK ? .success(version) : .failure(CacheError(core: rc, detail))
            }
        }
        return try result.get()
    }

    /// Starts a streamed store: append the body in pieces, then commit with its descriptor.
    /// The corresponding C function is `suc_writer_begin`.
    public func makeBodyWriter(uncompressed: Bool = false) throws(CacheError) -> BodyWriter {
        var detail = suc_error()
        var writer: OpaquePointer?
        let rc = suc_writer_begin(handle, uncompressed ? UInt32(SUC_PUT_RAW) : 0, &writer, &detail)
        guard rc == SUC_OK, let writer else { throw CacheError(core: rc, detail) }
        return BodyWriter(store: self, writer: writer)
    }

    // MARK: Looking up

    /// Looks up an entry; `nil` is a miss (including an entry whose body failed its checks,
    /// which is then purged).
    /// - Parameters:
    ///   - key: the primary key bytes.
    ///   - variant: the secondary key bytes.
    ///   - includeBody: `false` reads the record only (no body I/O).
    /// - Throws: environment failures only (`.io`, `.outOfMemory`, `.index`…), never for a miss.
    /// The corresponding C function is `suc_get`.
    public func record(for key: [UInt8], variant: [UInt8] = [], includeBody: Bool = true) throws(CacheError)
        -> StoredRecord?
    {
        try record(for: key, variant: variant, includeBody: includeBody, countAsUse: true)
    }

    /// Like ``record(for:variant:includeBody:)``, with control over whether the lookup counts
    /// as a use for eviction (maintenance tools read without touching).
    public func record(for key: [UInt8], variant: [UInt8], includeBody: Bool, countAsUse: Bool) throws(CacheError)
        -> StoredRecord?
    {
        try withEntry(for: key, variant: variant, includeBody: includeBody, countAsUse: countAsUse) { entry in
            .success(StoredRecord(suc_entry_get_view(entry).pointee, includesBody: includeBody))
        }
    }

    /// The lookup every read shares (``record(for:variant:includeBody:countAsUse:)``,
    /// ``openBody(for:variant:countAsUse:)``): one `suc_get`, a miss as `nil`, the C entry lent
    /// to `body` and freed when it returns.
    func withEntry<R>(
        for key: [UInt8], variant: [UInt8], includeBody: Bool, countAsUse: Bool,
        _ body: (OpaquePointer) -> Result<R?, CacheError>
    ) throws(CacheError) -> R? {
        var flags: UInt32 = 0
        if !includeBody { flags |= UInt32(SUC_GET_NO_BODY) }
        if !countAsUse { flags |= UInt32(SUC_GET_NO_TOUCH) }
        let result: Result<R?, CacheError> = key.withUnsafeBytes { k in
            variant.withUnsafeBytes { v in
                var detail = suc_error()
                var entry: OpaquePointer?
                let rc = suc_get(handle, k.baseAddress, k.count, v.baseAddress, v.count, flags, &entry, &detail)
                if rc == SUC_ENOTFOUND { return .success(nil) }
                guard rc == SUC_OK, let entry else { return .failure(CacheError(core: rc, detail)) }
                defer { suc_entry_free(entry) }
                return body(entry)
            }
        }
        return try result.get()
    }

    /// The current version of an entry, or `nil`; one index read, no body I/O.
    /// The corresponding C function is `suc_get_version`.
    public func version(for key: [UInt8], variant: [UInt8] = []) throws(CacheError) -> UInt64? {
        let result: Result<UInt64?, CacheError> = key.withUnsafeBytes { k in
            variant.withUnsafeBytes { v in
                var detail = suc_error()
                var version: UInt64 = 0
                let rc = suc_get_version(handle, k.baseAddress, k.count, v.baseAddress, v.count, &version, &detail)
                if rc == SUC_ENOTFOUND { return .success(nil) }
                return rc == SUC_OK ? .success(version) : .failure(CacheError(core: rc, detail))
            }
        }
        return try result.get()
    }

    /// The variants stored under `key`, with their versions.
    /// The corresponding C function is `suc_list_variants`.
    public func variants(for key: [UInt8]) throws(CacheError) -> [(variant: [UInt8], version: UInt64)] {
        final class Box { var items: [(variant: [UInt8], version: UInt64)] = [] }
        let box = Box()
        let result: Result<Void, CacheError> = key.withUnsafeBytes { k in
            var detail = suc_error()
            let rc = suc_list_variants(
                handle, k.baseAddress, k.count,
                { ctx, bytes, len, version in
                    let box = Unmanaged<Box>.fromOpaque(ctx!).takeUnretainedValue()
                    let variant = len == 0 ? [] : Array(UnsafeBufferPointer(start: bytes, count: len))
                    box.items.append((variant, version))
                    return 0
                }, Unmanaged.passUnretained(box).toOpaque(), &detail)
            return rc == SUC_OK ? .success(()) : .failure(CacheError(core: rc, detail))
        }
        try result.get()
        return box.items
    }

    // MARK: Removing

    /// Removes one variant, or every variant of `key` when `variant` is `nil`.
    /// - Returns: how many entries were removed.
    /// The corresponding C function is `suc_remove`.
    @discardableResult
    public func remove(key: [UInt8], variant: [UInt8]? = nil) throws(CacheError) -> Int {
        try keyOperation(suc_remove, key: key, variant: variant)
    }

    /// The signature `suc_remove` and `suc_invalidate` share.
    typealias KeyOperation = (
        OpaquePointer?, UnsafeRawPointer?, Int, UnsafeRawPointer?, Int, UnsafeMutablePointer<UInt64>?,
        UnsafeMutablePointer<suc_error>?
    ) -> Int32

    /// Runs `operation` on one variant, or every variant of `key` when `variant` is `nil`;
    /// returns the count it reports.
    func keyOperation(_ operation: KeyOperation, key: [UInt8], variant: [UInt8]?) throws(CacheError) -> Int {
        let result: Result<Int, CacheError> = key.withUnsafeBytes { k in
            var detail = suc_error()
            var count: UInt64 = 0
            let rc: Int32
            if let variant {
                rc = variant.withUnsafeBytes { v in
                    // A non-NULL pointer selects exactly this variant, even an empty one.
                    withUnsafeBytes(of: UInt8(0)) { empty in
                        operation(
                            handle, k.baseAddress, k.count, v.baseAddress ?? empty.baseAddress, v.count, &count, &detail
                        )
                    }
                }
            } else {
                rc = operation(handle, k.baseAddress, k.count, nil, 0, &count, &detail)
            }
            return rc == SUC_OK ? .success(Int(count)) : .failure(CacheError(core: rc, detail))
        }
        return try result.get()
    }

    /// Removes every entry stored at or after `date`, through the store-time index.
    /// The corresponding C function is `suc_remove_since`.
    @discardableResult
    public func removeAll(storedSince date: Date) throws(CacheError) -> Int {
        var detail = suc_error()
        var removed: UInt64 = 0
        let rc = suc_remove_since(handle, Self.milliseconds(date), &removed, &detail)
        guard rc == SUC_OK else { throw CacheError(core: rc, detail) }
        return Int(removed)
    }

    /// Removes every entry.
    /// The corresponding C function is `suc_remove_all`.
    @discardableResult
    public func removeAll() throws(CacheError) -> Int {
        var detail = suc_error()
        var removed: UInt64 = 0
        let rc = suc_remove_all(handle, &removed, &detail)
        guard rc == SUC_OK else { throw CacheError(core: rc, detail) }
        return Int(removed)
    }

    // MARK: Counters and housekeeping

    /// The directory's counters, exact as of the last commit.
    /// The corresponding C function is `suc_cache_stats`.
    public func statistics() throws(CacheError) -> StoreStatistics {
        var detail = suc_error()
        var stats = suc_stats()
        let rc = suc_cache_stats(handle, &stats, &detail)
        guard rc == SUC_OK else { throw CacheError(core: rc, detail) }
        return StoreStatistics(
            entries: Int(stats.entries), bodyBytes: Int(stats.body_bytes), storedBytes: Int(stats.stored_bytes),
            recordBytes: Int(stats.record_bytes), indexMapBytes: Int(stats.map_size),
            indexUsedBytes: Int(stats.map_used), readerSlotsUsed: Int(stats.readers_used),
            readerSlotsMax: Int(stats.readers_max), evictions: Int(stats.evictions),
            corruptPurges: Int(stats.corrupt_purges), stores: Int(stats.stores), hits: Int(stats.hits),
            misses: Int(stats.misses), directoryFormat: Int(stats.directory_format))
    }

    /// Adds to the directory's shared hit and miss counters (held in this process and written
    /// with its next write or ``flush()``: a lookup never writes).
    /// The corresponding C function is `suc_cache_count_usage`.
    public func countUsage(hits: Int = 0, misses: Int = 0) {
        suc_cache_count_usage(handle, UInt64(max(hits, 0)), UInt64(max(misses, 0)))
    }

    /// Writes pending last-use times (hits never write themselves).
    /// The corresponding C function is `suc_cache_flush`.
    public func flush() throws(CacheError) {
        var detail = suc_error()
        let rc = suc_cache_flush(handle, &detail)
        guard rc == SUC_OK else { throw CacheError(core: rc, detail) }
    }

    /// With `.relaxed` durability: makes every store so far durable now (one sync of the index)
    /// and clears the directory's unsynced marker. A no-op in the other modes (their stores are
    /// synced as they commit). Closing the last handle does the same.
    /// The corresponding C function is `suc_cache_sync`.
    public func sync() throws(CacheError) {
        var detail = suc_error()
        let rc = suc_cache_sync(handle, &detail)
        guard rc == SUC_OK else { throw CacheError(core: rc, detail) }
    }

    /// Whether this open found that the machine had restarted while `.relaxed` stores may have
    /// been unsynced, and so discarded the index of that time: the cache started empty (body
    /// files of that time are swept by the next compaction).
    /// The corresponding C function is `suc_cache_discarded_unsynced_index`.
    public var discardedIndexAfterRestart: Bool { suc_cache_discarded_unsynced_index(handle) != 0 }

    static func milliseconds(_ date: Date) -> Int64 {
        let ms = (date.timeIntervalSince1970 * 1000).rounded(.down)
        return ms.isFinite ? Int64(clamping: Int64(exactly: ms.clamped(to: -9e15...9e15)) ?? 0) : 0
    }
}

extension Duration {
    fileprivate var milliseconds: Int64 { components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000 }
}

extension Double {
    fileprivate func clamped(to range: ClosedRange<Double>) -> Double {
        Swift.min(Swift.max(self, range.lowerBound), range.upperBound)
    }
}

extension RecordDescriptor {
    /// The selector's head, empty unless ``otherVariants`` is `.selectedBy`.
    private var selectorHead: [UInt8] {
        if case .selectedBy(let head, _) = otherVariants { return head }
        return []
    }

    /// The tags as the core takes them: each ended by a newline. A tag with a newline inside
    /// would reach the core as two, so such a list is sent as one empty tag, which the core
    /// refuses (`.invalidInput`) like every other malformed list.
    private var encodedTags: [UInt8] {
        if tags.isEmpty { return [] }
        if tags.contains(where: { $0.utf8.contains(UInt8(ascii: "\n")) }) { return [UInt8(ascii: "\n")] }
        return Array(tags.map { $0 + "\n" }.joined().utf8)
    }

    /// Lends a `suc_put_params` whose pointers are valid only inside `body`; `capacityBytes`
    /// `nil` leaves the handle's hard cap in force.
    func withParams<R>(capacityBytes: Int?, _ body: (inout suc_put_params) -> R) -> R {
        key.withUnsafeBytes { k in
            variant.withUnsafeBytes { v in
                partition.withUnsafeBytes { p in
                    head.withUnsafeBytes { h in
                        userInfo.withUnsafeBytes { u in
                            selectorHead.withUnsafeBytes { s in
                                encodedTags.withUnsafeBytes { t in
                                    var params = suc_put_params()
                                    params.key = k.baseAddress
                                    params.key_len = k.count
                                    params.variant = v.baseAddress
                                    params.variant_len = v.count
                                    params.partition = p.baseAddress
                                    params.partition_len = p.count
                                    params.head = h.baseAddress
                                    params.head_len = h.count
                                    params.user_info = u.baseAddress
                                    params.user_info_len = u.count
                                    params.stored_at_ms = CacheStore.milliseconds(storedAt)
                                    params.app_flags = appFlags
                                    params.flags = storeUncompressed ? UInt32(SUC_PUT_RAW) : 0
                                    params.capacity_bytes = capacityBytes.map { UInt64(max($0, 1)) } ?? 0
                                    switch otherVariants {
                                    case .leave: break
                                    case .remove: params.flags |= UInt32(SUC_PUT_SOLE_VARIANT)
                                    case .selectedBy(_, let flags):
                                        params.flags |= UInt32(SUC_PUT_SELECTOR)
                                        params.selector_head = s.baseAddress
                                        params.selector_head_len = s.count
                                        params.selector_app_flags = flags
                                    }
                                    params.tags = t.baseAddress
                                    params.tags_len = t.count
                                    return body(&params)
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

extension StoredRecord {
    init(_ view: suc_entry_view, includesBody: Bool) {
        func bytes(_ p: UnsafePointer<UInt8>?, _ n: Int) -> [UInt8] {
            guard let p, n > 0 else { return [] }
            return Array(UnsafeBufferPointer(start: p, count: n))
        }
        self.init(
            key: bytes(view.key, view.key_len),
            variant: bytes(view.variant, view.variant_len),
            partition: bytes(view.partition, view.partition_len),
            head: bytes(view.head, view.head_len),
            userInfo: bytes(view.user_info, view.user_info_len),
            body: includesBody ? bytes(view.body, view.body_len) : nil,
            bodySize: Int(view.body_size),
            storedSize: Int(view.stored_size),
            footprintSize: Int(view.footprint_size),
            version: view.version,
            storedAt: Date(timeIntervalSince1970: Double(view.stored_at_ms) / 1000),
            lastUsed: Date(timeIntervalSince1970: Double(view.last_used_ms) / 1000),
            appFlags: view.app_flags,
            isInline: view.flags & UInt32(SUC_ENTRY_INLINE) != 0,
            isCompressed: view.flags & UInt32(SUC_ENTRY_RAW) == 0,
            tags: bytes(view.tags, view.tags_len).split(separator: UInt8(ascii: "\n")).map {
                String(decoding: $0, as: UTF8.self)
            },
            invalidatedAt: view.invalidated_at_ms == 0
                ? nil : Date(timeIntervalSince1970: Double(view.invalidated_at_ms) / 1000))
    }
}
