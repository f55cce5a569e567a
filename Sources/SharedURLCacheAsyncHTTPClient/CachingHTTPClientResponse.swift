import AsyncHTTPClient
import Foundation
import HTTPCacheSemantics
import NIOCore
import NIOHTTP1
import SharedURLCache

/// A response from a ``CachingHTTPClient``: AsyncHTTPClient's shape (status, headers, a body
/// streamed as `ByteBuffer` chunks) plus how the cache answered.
///
/// ```swift
/// let response = try await client.execute(request, timeout: .seconds(30))
/// print(response.status, response.cacheStatus)        // 200 OK HIT
/// print(response.cacheStatusMember.fieldValue())      // urlcache;hit;ttl=598 (RFC 9211)
/// for try await chunk in response.body { consume(chunk) }
/// ```
///
/// The body is AsyncHTTPClient's own `HTTPClientResponse.Body`, so code written against
/// `HTTPClient` (`for try await`, `collect(upTo:)`) reads it unchanged. It streams: from the
/// origin (and into the store on the way) for a miss, from the store for a large hit (small
/// ones come from memory), in chunks of at most 64 KiB from the cache. A stored body that
/// fails its checksum fails the read that would end it (`CacheError` `.corrupt`). Iterate it
/// once, as with `HTTPClient`; a miss is stored only if it is read to the end.
public struct CachingHTTPClientResponse: Sendable {
    /// The status (a 304 from revalidation is answered as the stored status, usually 200).
    public var status: HTTPResponseStatus
    /// The header fields; a stored response carries `Age` (RFC 9111 §5.1).
    public var headers: HTTPHeaders
    /// The body as an async sequence of `ByteBuffer` chunks (empty for HEAD).
    public var body: HTTPClientResponse.Body
    /// How the cache answered: HIT, REVALIDATED, STALE, UPDATING, MISS, EXPIRED or BYPASS.
    public var cacheStatus: CacheStatus
    /// How the cache answered as its member of the `Cache-Status` field (RFC 9211): `hit`, `fwd`
    /// and `fwd-status`, `ttl`, `stored`, `collapsed`, and why a response was not stored (`detail`).
    public var cacheStatusMember: CacheStatusMember
    /// What the body stores as it is read (a miss teed into the store): settled once it has been
    /// read to its end or given up, and then whether an entry was committed. A streamed miss's
    /// `cacheStatusMember` leaves `stored` out, since the head goes out before that is known.
    public var storeSettlement: StoreSettlement = .nothingStored

    /// - Parameter cacheStatusMember: defaults to what `cacheStatus` says alone.
    public init(
        status: HTTPResponseStatus, headers: HTTPHeaders, body: HTTPClientResponse.Body, cacheStatus: CacheStatus,
        cacheStatusMember: CacheStatusMember? = nil
    ) {
        self.status = status
        self.headers = headers
        self.body = body
        self.cacheStatus = cacheStatus
        self.cacheStatusMember = cacheStatusMember ?? cacheStatus.cacheStatusMember
    }
}
