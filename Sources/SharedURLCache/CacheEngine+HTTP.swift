import CacheEntryFormat
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPCacheSemantics
import HTTPTypes

/// A stored exchange as the caching flow sees it.
struct HTTPCacheHit: Sendable {
    /// The stored exchange, parsed under the flow's policy configuration.
    var parsed: ParsedStoredResponse
    /// In memory (memory tier, small bodies), or a reader of the stored body (large ones).
    var body: HitBody
    var userInfo: [UInt8]
    /// Served by the memory tier (for the counters of a lookup whose counting was deferred).
    var fromMemory = false
    /// The memory-tier item the response is (when the tier holds it now and its body is in memory).
    var memoryItem: MemoryItemSlot? = nil
    /// The store's version of the response that was read; nil when it lives in memory only.
    var version: UInt64? = nil

    var stored: StoredResponse { parsed.stored }
}

/// A stored exchange parsed for the caching flow (``ParsedStoredResponse``), kept with a memory
/// tier item so that its hits do not parse the stored fields again (that was about a quarter of
/// a proxy's cached answer). Immutable, so sharing is safe.
final class ParsedExchange: Sendable {
    let parsed: ParsedStoredResponse
    init(_ parsed: ParsedStoredResponse) { self.parsed = parsed }
}

/// The HTTP caching flow's access to the cache: entries keyed by the GET request of a URL
/// (a HEAD is answered from it, RFC 9111 §4), carrying the exchange's times.
extension CacheEngine {
    /// The stored exchange for the GET of `url`, through the one lookup (``find(_:delivery:counting:)``).
    /// The stored exchange comes parsed under `policy`: a memory item's parsed exchange when it
    /// was parsed under the same configuration, else parsed now (and kept with the memory item).
    func httpLookup(
        url: String, requestFields: HTTPFields, policy: CachePolicyConfiguration, delivery: BodyDelivery,
        counting: LookupCounting = .now
    ) -> HTTPCacheHit? {
        guard case .success(let key) = httpKey(url: url),
            let found = find(LookupKey(key: key, requestFields: requestFields), delivery: delivery, counting: counting)
        else { return nil }
        let parsed: ParsedStoredResponse
        if let kept = found.exchange?.parsed, kept.configuration == policy {
            parsed = kept
        } else {
            guard var stored = Self.storedResponse(head: found.entry.head, storedAt: found.entry.storedAt) else {
                return nil
            }
            stored.invalidatedAt = found.entry.invalidatedAt
            parsed = ParsedStoredResponse(stored, configuration: policy)
            if let stamp = found.stamp {
                memory.withLock {
                    $0.attach(at: found.memoryKey, stamp: stamp) { $0.exchange = ParsedExchange(parsed) }
                }
            }
        }
        return HTTPCacheHit(
            parsed: parsed, body: found.body, userInfo: found.entry.userInfo, fromMemory: found.fromMemory,
            memoryItem: found.stamp.map {
                MemoryItemSlot(engine: self, memoryKey: found.memoryKey, stamp: $0, rendition: found.rendition)
            }, version: found.version)
    }

    /// The exchange a stored HTTP head describes, or nil for a head that is not an HTTP response.
    static func storedResponse(head: ResponseHead, storedAt: Date) -> StoredResponse? {
        guard head.kind == .http, let status = HTTPResponse.Status(code: head.statusCode) as HTTPResponse.Status? else {
            return nil
        }
        let exchange = head.exchange
        return StoredResponse(
            status: status,
            headerFields: HTTPFields(pairs: head.headerFields.map { (key: $0.name, value: $0.value) }),
            requestMethod: .get,
            varyRequestFields: HTTPFields(pairs: head.varyRequestFields.map { (key: $0.name, value: $0.value) }),
            requestHadAuthorization: exchange?.requestHadAuthorization ?? false,
            requestTime: exchange?.requestTime ?? storedAt,
            responseTime: exchange?.responseTime ?? storedAt)
    }

    /// The head stored for an exchange (its body length is `bodyBytes`).
    static func responseHead(url: String, stored: StoredResponse, bodyBytes: Int) -> ResponseHead {
        var pairs: [ResponseHead.HeaderPair] = []
        // Names as the origin spelled them: a replayed response carries them exactly (a proxy's
        // clients see what the origin sent); every comparison is case-insensitive anyway.
        for field in stored.headerFields { pairs.append(.init(name: field.name.rawName, value: field.value)) }
        return ResponseHead(
            kind: .http, statusCode: stored.status.code, expectedContentLength: Int64(bodyBytes), url: url,
            mimeType: nil, textEncodingName: nil, headerFields: pairs,
            varyRequestFields: stored.varyRequestFields.map { .init(name: $0.name.canonicalName, value: $0.value) },
            exchange: .init(
                requestTime: stored.requestTime, responseTime: stored.responseTime,
                requestHadAuthorization: stored.requestHadAuthorization))
    }

    /// Stores an exchange whose body is in memory; `false` when it was refused (counted and
    /// logged). `now` is the flow's clock.
    @discardableResult
    func httpStore(
        url: String, requestFields: HTTPFields, stored: StoredResponse, body: Data,
        policy: URLCache.StoragePolicy, userInfo: [UInt8], now: Date
    ) -> Bool {
        if policy == .notAllowed { return false }
        guard case .success(let key) = httpKey(url: url),
            let plan = storePlan(
                key: key, url: url, vary: stored.vary, requestFields: requestFields, userInfo: userInfo,
                inMemoryOnly: policy == .allowedInMemoryOnly, now: now, bodyBytes: body.count,
                head: { _ in Self.responseHead(url: url, stored: stored, bodyBytes: body.count) })
        else { return false }
        return commit(plan, .whole(body)).isStored
    }

    /// After a 304: the stored body of `version` under a new head, written as one index record
    /// (``CacheStore/refresh(_:expecting:)``), the body neither read nor written. `memoryBody` is
    /// the body when the hit had it in memory, kept in the memory tier with the new version.
    /// - Returns: `true` when refreshed; `false` when the entry changed since it was read (or has
    ///   no disk tier), so the whole response must be stored; `nil` when the new head may not be
    ///   stored at all (refused, counted and logged).
    func httpRefresh(
        url: String, requestFields: HTTPFields, stored: StoredResponse, bodyBytes: Int, memoryBody: Data?,
        userInfo: [UInt8], expecting version: UInt64, now: Date
    ) -> Bool? {
        guard case .success(let key) = httpKey(url: url),
            let plan = storePlan(
                key: key, url: url, vary: stored.vary, requestFields: requestFields, userInfo: userInfo,
                inMemoryOnly: false, now: now, bodyBytes: bodyBytes,
                head: { _ in Self.responseHead(url: url, stored: stored, bodyBytes: bodyBytes) })
        else { return nil }
        return commit(plan, .refreshed(expecting: version, small: memoryBody)).isStored
    }

    /// Removes every variant stored for the GET of `url` (RFC 9111 §4.4 invalidation).
    func httpInvalidate(url: String) {
        guard case .success(let key) = httpKey(url: url) else { return }
        remove(key: key)
    }
}
