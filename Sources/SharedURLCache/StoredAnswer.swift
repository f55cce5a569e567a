import Foundation
import HTTPCacheSemantics
import HTTPTypes

/// ``HTTPCachingFlow/storedAnswer(for:)``: what the cache alone answers, in one of two forms.
package enum StoredAnswer: Sendable {
    /// A memory-tier item sent as it is stored.
    case memoryItem(MemoryItemAnswer)
    /// Any other answer, as ``HTTPCachingFlow/storedResponse(for:)`` gives it.
    case response(CachedHTTPResponse)
}

/// A memory-tier item answered as it is stored: its status and fields, `Age`, and its whole body
/// (none goes out for a HEAD). The flow decided everything (freshness, no 304, no range, no
/// passthrough); a renderer only writes it, from scratch (``response``) or from what it kept
/// with the item (``slot``).
package struct MemoryItemAnswer: Sendable {
    /// The stored status.
    package let status: HTTPResponse.Status
    /// The stored fields, without this answer's `Age`.
    package let storedFields: HTTPFields
    /// The whole stored body, also for a HEAD (a rendition kept with the item serves its GETs too).
    package let body: Data
    /// This answer's `Age` in seconds (RFC 9111 §5.1); it replaces the first stored `Age` field in
    /// place and drops the others, or follows the stored fields.
    package let age: Int
    /// The request is a HEAD: the answer has the stored fields and no body (RFC 9110 §9.3.2).
    package let isHead: Bool
    /// HIT, or STALE for a response the request accepted stale.
    package let cacheStatus: CacheStatus
    /// The answer's `Cache-Status` member (RFC 9211): `hit` with `ttl`.
    package let cacheStatusMember: CacheStatusMember
    /// The item, with what a renderer kept with it.
    package let slot: MemoryItemSlot

    /// The answer as ``HTTPCachingFlow/storedResponse(for:)`` gives it, field for field.
    package var response: CachedHTTPResponse {
        CachedHTTPResponse(
            response: HTTPResponse(status: status, headerFields: HTTPCachingFlow.fields(storedFields, age: age)),
            body: isHead ? Data() : body, cacheStatus: cacheStatus, cacheStatusMember: cacheStatusMember)
    }
}
