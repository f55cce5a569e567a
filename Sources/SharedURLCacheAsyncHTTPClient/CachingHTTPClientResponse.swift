import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SharedURLCache

/// A response from a ``CachingHTTPClient``: AsyncHTTPClient's shape (status, headers, a body
/// streamed as `ByteBuffer` chunks) plus how the cache answered.
///
/// ```swift
/// let response = try await client.execute(request, timeout: .seconds(30))
/// print(response.status, response.cacheStatus)        // 200 OK HIT
/// for try await chunk in response.body { consume(chunk) }
/// ```
///
/// The body is AsyncHTTPClient's own `HTTPClientResponse.Body`, so code written against
/// `HTTPClient` (`for try await`, `collect(upTo:)`) reads it unchanged. Today a stored or
/// stored-from-origin body is already in memory and is handed out in 64 KiB chunks; a body
/// larger than ``CachingHTTPClient/Configuration/maximumBodyBytes`` streams from the origin.
/// Iterate it once, as with `HTTPClient`.
public struct CachingHTTPClientResponse: Sendable {
    /// The status (a 304 from revalidation is answered as the stored status, usually 200).
    public var status: HTTPResponseStatus
    /// The header fields; a stored response carries `Age` (RFC 9111 §5.1).
    public var headers: HTTPHeaders
    /// The body as an async sequence of `ByteBuffer` chunks (empty for HEAD).
    public var body: HTTPClientResponse.Body
    /// How the cache answered: HIT, REVALIDATED, STALE, UPDATING, MISS, EXPIRED or BYPASS.
    public var cacheStatus: CacheStatus

    public init(status: HTTPResponseStatus, headers: HTTPHeaders, body: HTTPClientResponse.Body, cacheStatus: CacheStatus) {
        self.status = status
        self.headers = headers
        self.body = body
        self.cacheStatus = cacheStatus
    }
}

/// A buffered body handed out as `ByteBuffer` chunks of at most `chunkBytes`, each copied from
/// `data` only when the consumer asks for it (so a consumer that writes chunks out and drops
/// them holds one chunk more than `data`).
struct DataChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let data: Data
    let chunkBytes: Int

    struct AsyncIterator: AsyncIteratorProtocol {
        let data: Data
        let chunkBytes: Int
        var offset: Int

        mutating func next() async -> ByteBuffer? {
            guard offset < data.endIndex else { return nil }
            let end = Swift.min(offset + chunkBytes, data.endIndex)
            defer { offset = end }
            return ByteBuffer(bytes: data[offset..<end])
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(data: data, chunkBytes: Swift.max(1, chunkBytes), offset: data.startIndex)
    }
}
