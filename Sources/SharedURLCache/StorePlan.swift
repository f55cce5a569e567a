import CacheEntryFormat
import Foundation
import HTTPCacheSemantics
import HTTPTypes
import SharedURLCacheStore

/// A response validated for storing: the one form every store path builds (the URLCache store,
/// the flow's whole-body store and its streamed store) and hands to
/// ``CacheEngine/commit(_:_:)``. Sendable, so the disk work can run on another thread.
struct StorePlan: Sendable {
    var key: [UInt8]
    /// The variant: empty without `Vary`, `VaryKey(...).encoded` with it.
    var variant: [UInt8]
    /// The response's `Vary`, when it names fields.
    var vary: VaryFields?
    /// The head as stored; a streamed store sets its length at commit.
    var head: ResponseHead
    /// `head` encoded. Its size does not depend on the length (a fixed eight bytes), so the size
    /// check made with it holds for a streamed body too.
    var headBytes: [UInt8]
    var userInfo: [UInt8]
    /// The values of the configured tag fields (``SharedCacheConfiguration/tagFieldNames``).
    var tags: [String]
    /// From the caller's configured clock, to the millisecond.
    var storedAt: Date
    var partition: [UInt8]
    var inMemoryOnly: Bool
    /// The most body bytes the entry may have: ``SharedCacheConfiguration/maximumEntrySizeBytes``
    /// less the head and userInfo, which it counts too.
    var maximumBodyBytes: Int

    var memoryKey: MemoryKey { MemoryKey(key: key, variant: variant) }
}

extension CacheEngine {
    /// Validates a response for storing, the one place that does: a `Vary` of `*` or with an
    /// invalid name is refused, and so is an entry larger than
    /// ``SharedCacheConfiguration/maximumEntrySizeBytes`` (counted and logged, then `nil`).
    /// - Parameters:
    ///   - url: the response's URL, for the log.
    ///   - vary: the response's `Vary`.
    ///   - requestFields: the request's fields, which select the variant.
    ///   - now: the caller's configured clock (``SharedCacheConfiguration`` for the URLCache
    ///     store, ``HTTPCachingConfiguration/now`` for the flow's).
    ///   - bodyBytes: the body's size; nil for a body still to be streamed, which the sink caps
    ///     at ``StorePlan/maximumBodyBytes``.
    ///   - makeHead: the head to store, given the `Vary` accepted (nil when it names no field).
    func storePlan(
        key: [UInt8], url: String, vary: VaryFields, requestFields: HTTPFields, userInfo: [UInt8],
        inMemoryOnly: Bool, now: Date, bodyBytes: Int?, head makeHead: (VaryFields?) -> ResponseHead
    ) -> StorePlan? {
        if vary.isWildcard || vary.hasInvalidName {
            refuse(vary.isWildcard ? .varyWildcard : .invalidVary, url: URL(string: url))
            return nil
        }
        let accepted = vary.isEmpty ? nil : vary
        let head = makeHead(accepted)
        let headBytes = head.encoded()
        let limit = configuration.maximumEntrySizeBytes
        let maximumBodyBytes = limit - headBytes.count - userInfo.count
        let body = bodyBytes ?? 0
        guard body <= maximumBodyBytes else {
            refuse(.entryTooLarge(bytes: body + headBytes.count + userInfo.count, limit: limit), url: URL(string: url))
            return nil
        }
        return StorePlan(
            key: key, variant: accepted.map { VaryKey(vary: $0, requestFields: requestFields).encoded } ?? [],
            vary: accepted, head: head, headBytes: headBytes, userInfo: userInfo, tags: tags(of: head),
            storedAt: Self.storeTime(now), partition: Array(configuration.partition.utf8),
            inMemoryOnly: inMemoryOnly, maximumBodyBytes: maximumBodyBytes)
    }

    /// Store times are kept to the millisecond, as the index keeps them, so that
    /// `removeCachedResponses(since:)` treats memory and disk alike.
    static func storeTime(_ now: Date) -> Date {
        Date(timeIntervalSince1970: (now.timeIntervalSince1970 * 1000).rounded(.down) / 1000)
    }

    /// The tags a response is stored with: the values of the configured tag fields
    /// (``SharedCacheConfiguration/tagFieldNames``).
    func tags(of head: ResponseHead) -> [String] {
        CacheTags.tags(
            in: head.headerFields.lazy.map { (name: $0.name, value: $0.value) }, names: configuration.tagFieldNames)
    }
}
