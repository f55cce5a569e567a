import CacheEntryFormat
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPCacheSemantics
import HTTPTypes
import SharedURLCacheStore

/// The body of a stored exchange as the flow holds it.
enum HitBody: Sendable {
    /// In memory: from the memory tier, or a small body read whole.
    case data(Data)
    /// In the store, read as it is served.
    case stored(StoredBody)

    var cachedBody: CachedBody {
        switch self {
        case .data(let data): CachedBody(data)
        case .stored(let stored): CachedBody(source: .stored(stored))
        }
    }
}

/// The streaming flow's access to the cache: stores that stream a body into a writer as the
/// caller reads it (lookups hand out a reader with ``BodyDelivery/streamingLarge``).
extension CacheEngine {
    /// Stored bodies up to this size are read whole at lookup (and kept in the memory tier, as
    /// the buffered lookup does); larger ones are streamed from the store and never held whole.
    static let streamedHitBytes = 256 << 10
    /// Compressed bodies above this size are sent as their stored stream when the flow's
    /// compressed passthrough is on and the client accepts it; smaller ones inflate in less
    /// time than the extra framing costs.
    static let passthroughMinimumBytes = 8 << 10

    /// A stored body failed while it was read: damaged bodies were purged by the store.
    func storedBodyFailed(_ error: CacheError) {
        if error.code == .corrupt {
            counters.corruptPurges.add(1, ordering: .relaxed)
            logger.error("corrupt cache body purged", metadata: ["error": "\(error.detailedDescription())"])
        } else {
            logger.warning("reading a cached body failed", metadata: ["error": "\(error.detailedDescription())"])
        }
    }

    /// What a streamed store needs at commit time.
    struct StreamedStore: Sendable {
        var url: String
        var key: [UInt8]
        var variant: [UInt8]
        var vary: VaryFields?
        var stored: StoredResponse
        var userInfo: [UInt8]
        var storedAt: Date
    }

    /// A sink that streams an exchange's body to the disk tier while the caller reads it, and
    /// commits the entry after the last chunk; `nil` when there is no disk tier (the caller then
    /// buffers and uses ``httpStore(url:requestFields:stored:body:policy:userInfo:)``) or when
    /// the response is refused up front (counted and logged; `refused` is then true).
    /// - Parameter maximumBodyBytes: the caller's own cap, besides `maximumEntrySizeBytes`.
    func httpStreamingSink(
        url: String, requestFields: HTTPFields, stored: StoredResponse, userInfo: [UInt8],
        maximumBodyBytes: Int
    ) -> (sink: StoreSink?, refused: Bool) {
        guard let store, diskCapacity > 0 else { return (nil, false) }
        guard case .success(let key) = httpKey(url: url) else { return (nil, true) }
        let vary = stored.vary
        if vary.isWildcard || vary.hasInvalidName {
            refuse(vary.isWildcard ? .varyWildcard : .invalidVary, url: URL(string: url))
            return (nil, true)
        }
        let plan = StreamedStore(
            url: url, key: key, variant: vary.isEmpty ? [] : VaryKey(vary: vary, requestFields: requestFields).encoded,
            vary: vary.isEmpty ? nil : vary, stored: stored, userInfo: userInfo, storedAt: Self.storeTime())
        let writer: BodyWriter
        do {
            writer = try store.makeBodyWriter()
        } catch {
            refuse(.storeFailed(error), url: URL(string: url))
            return (nil, true)
        }
        // The entry limit counts head and userInfo too; the head's size hardly depends on the length.
        let headBytes = Self.responseHead(url: url, stored: stored, bodyBytes: 0).encoded().count
        let limit = configuration.maximumEntrySizeBytes
        let cap = Swift.max(0, Swift.min(maximumBodyBytes, limit - headBytes - userInfo.count))
        let sink = StoreSink(
            writer: writer, cap: cap,
            target: .disk { [self] writer, bytes, small in
                commitStreamed(plan, writer: writer, bodyBytes: bytes, small: small)
            },
            refuse: { [self] bytes, reason in noteStreamRefusal(url: url, bytes: bytes, reason: reason) })
        return (sink, false)
    }

    /// Publishes a streamed body with its head (index commit last, as every store, evicting to
    /// the disk capacity, with the `Vary` bookkeeping in the same commit), then keeps a small
    /// body in the memory tier. What the disk refuses leaves nothing of the key behind
    /// (``dropRefused(key:_:url:)``).
    /// - Returns: the committed body (read back by a caller that fell behind its store), or nil
    ///   when the entry was not committed.
    @discardableResult
    func commitStreamed(
        _ plan: StreamedStore, writer: consuming BodyWriter, bodyBytes: Int, small: Data?
    ) -> StoredBody? {
        let head = Self.responseHead(url: plan.url, stored: plan.stored, bodyBytes: bodyBytes)
        let headBytes = head.encoded()
        let entrySize = bodyBytes + headBytes.count + plan.userInfo.count
        let url = URL(string: plan.url)
        guard entrySize <= configuration.maximumEntrySizeBytes else {
            refuse(.entryTooLarge(bytes: entrySize, limit: configuration.maximumEntrySizeBytes), url: url)
            return nil
        }
        let capacity = storeCapacity
        let version: UInt64
        do {
            version = try writer.commit(
                RecordDescriptor(
                    key: plan.key, variant: plan.variant, partition: Array(configuration.partition.utf8),
                    head: headBytes,
                    userInfo: plan.userInfo, storedAt: plan.storedAt, appFlags: RecordKind.response.rawValue,
                    otherVariants: Self.otherVariants(for: plan.vary), tags: tags(of: head)),
                capacityBytes: capacity)
        } catch {
            dropRefused(key: plan.key, error, url: url)
            return nil
        }
        counters.stores.add(1, ordering: .relaxed)
        let memoryKey = MemoryKey(key: plan.key, variant: plan.variant)
        if let small, small.count == bodyBytes {
            let entry = CacheEntry(
                head: head, body: small, userInfo: plan.userInfo, storedAt: plan.storedAt, inMemoryOnly: false)
            remember(entry, at: memoryKey, version: version, vary: plan.vary)
        } else {
            // What the tier holds for this key is an older version now: drop it at once.
            memory.withLock { $0.removeAll(key: plan.key) }
        }
        guard let store else { preconditionFailure("a streamed store without a disk tier") } // it made the writer
        return StoredBody(
            size: bodyBytes, reader: nil, reopen: Self.bodyOpener(store: store, memoryKey: memoryKey, version: version),
            onFailure: { [weak self] error in self?.storedBodyFailed(error) })
    }
}
