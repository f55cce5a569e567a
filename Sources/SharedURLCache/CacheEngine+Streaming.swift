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
    /// A stored body failed while it was read: damaged bodies were purged by the store.
    func storedBodyFailed(_ error: CacheError) {
        if error.code == .corrupt {
            counters.corruptPurges.add(1, ordering: .relaxed)
            logger.error("corrupt cache body purged", metadata: ["error": "\(error.detailedDescription())"])
        } else {
            logger.warning("reading a cached body failed", metadata: ["error": "\(error.detailedDescription())"])
        }
    }

    /// A sink that streams an exchange's body to the disk tier while the caller reads it, and
    /// commits the entry after the last chunk; `nil` when there is no disk tier (the caller then
    /// buffers and uses ``httpStore(url:requestFields:stored:body:policy:userInfo:now:)``) or when
    /// the response is refused up front (counted and logged; `refused` is then true).
    /// - Parameters:
    ///   - maximumBodyBytes: the caller's own cap, besides `maximumEntrySizeBytes`.
    ///   - now: the flow's clock.
    func httpStreamingSink(
        url: String, requestFields: HTTPFields, stored: StoredResponse, userInfo: [UInt8],
        maximumBodyBytes: Int, now: Date
    ) -> (sink: StoreSink?, refused: Bool) {
        guard let store, diskCapacity > 0 else { return (nil, false) }
        guard case .success(let key) = httpKey(url: url) else { return (nil, true) }
        // The head's length is set at commit, once the body's is known.
        guard
            let plan = storePlan(
                key: key, url: url, vary: stored.vary, requestFields: requestFields, userInfo: userInfo,
                inMemoryOnly: false, now: now, bodyBytes: nil,
                head: { _ in Self.responseHead(url: url, stored: stored, bodyBytes: 0) })
        else { return (nil, true) }
        let writer: BodyWriter
        do {
            writer = try store.makeBodyWriter()
        } catch {
            refuse(.storeFailed(error), url: URL(string: url))
            return (nil, true)
        }
        let sink = StoreSink(
            writer: writer, cap: Swift.min(maximumBodyBytes, plan.maximumBodyBytes),
            target: .disk { [self] writer, bytes, small in
                // The committed body, read back by a caller that fell behind its store (TeePump).
                guard case .stored(let version?) = commit(plan, .streamed(writer, bytes: bytes, small: small)) else {
                    return nil
                }
                return StoredBody(
                    size: bytes, reader: nil,
                    reopen: Self.bodyOpener(store: store, memoryKey: plan.memoryKey, version: version),
                    onFailure: { [weak self] error in self?.storedBodyFailed(error) })
            },
            refuse: { [self] bytes, reason in noteStreamRefusal(url: url, bytes: bytes, reason: reason) })
        return (sink, false)
    }
}
