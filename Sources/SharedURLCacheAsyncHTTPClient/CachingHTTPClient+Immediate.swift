import AsyncHTTPClient
import HTTPCacheSemantics
import HTTPTypes
import NIOCore
import NIOHTTP1
import SharedURLCache

extension CachingHTTPClient {
    /// A response the cache gives at once, without the origin, its body in memory.
    public struct ImmediateResponse: Sendable {
        /// The stored status, or 304 when the client's own validators match.
        public var status: HTTPResponseStatus
        /// The stored header fields with `Age` (RFC 9111 §5.1).
        public var headers: HTTPHeaders
        /// The whole body (empty for HEAD and for a 304).
        public var body: ByteBuffer
        /// HIT, or STALE for a response the request accepted stale (`max-stale`).
        public var cacheStatus: CacheStatus
        /// The same as a `Cache-Status` member (RFC 9211): `hit` with `ttl`.
        public var cacheStatusMember: CacheStatusMember

        /// The flow's answer in NIO's types.
        package init(_ answer: CachedHTTPResponse) {
            (status, headers) = CachingHTTPClient.head(of: answer.response)
            body = ByteBuffer(bytes: answer.body)
            cacheStatus = answer.cacheStatus
            cacheStatusMember = answer.cacheStatusMember
        }
    }

    /// An immediate answer in one of two forms (``HTTPCachingFlow/storedAnswer(for:)``).
    package enum ImmediateAnswer: Sendable {
        /// A memory-tier item sent as it is stored: a renderer may answer it from what it kept
        /// with the item (the proxy's prepared head, docs/Proxy.md).
        case memoryItem(MemoryItemAnswer)
        /// Any other answer.
        case response(ImmediateResponse)
    }

    /// The answer to `request` when the cache alone gives it now — a fresh stored response (or
    /// one the request accepts stale) with a body of at most 256 KiB or in the memory tier — else
    /// `nil`; then call ``execute(_:deadline:policy:)``, which looks up again and does the rest
    /// (a `nil` counts nothing, so that lookup counts once).
    ///
    /// It never waits and never reaches the origin: one index read and at most one small body
    /// read on the calling thread. A caller on an event loop (the proxy) answers its hits without
    /// a hop to the cooperative pool and back. Only GET and HEAD without a body, under the
    /// protocol cache policy.
    public func immediateResponse(for request: HTTPClientRequest) -> ImmediateResponse? {
        guard request.body == nil, request.method == .GET || request.method == .HEAD,
            let head = try? Self.httpRequest(from: request)
        else { return nil }
        return immediateResponse(for: head)
    }

    /// ``immediateResponse(for:)-(HTTPClientRequest)`` for a request already in HTTP types (a
    /// GET or HEAD without a body): a caller that has the URL's parts at hand (the proxy) skips
    /// building a URL string and parsing it again.
    public func immediateResponse(for request: HTTPRequest) -> ImmediateResponse? {
        guard request.method == .get || request.method == .head, let answer = flow.storedResponse(for: request)
        else { return nil }
        metrics.record(answer.cacheStatusMember)
        return ImmediateResponse(answer)
    }

    /// ``immediateResponse(for:)-(HTTPRequest)``, with a memory-tier item sent as it is stored told
    /// apart (``ImmediateAnswer/memoryItem(_:)``); counted the same way.
    package func immediateAnswer(for request: HTTPRequest) -> ImmediateAnswer? {
        guard request.method == .get || request.method == .head, let answer = flow.storedAnswer(for: request)
        else { return nil }
        switch answer {
        case .memoryItem(let item):
            metrics.record(item.cacheStatusMember)
            return .memoryItem(item)
        case .response(let response):
            metrics.record(response.cacheStatusMember)
            return .response(ImmediateResponse(response))
        }
    }

    /// ``immediateAnswer(for:)-(HTTPRequest)`` for a request as AsyncHTTPClient's.
    package func immediateAnswer(for request: HTTPClientRequest) -> ImmediateAnswer? {
        guard request.body == nil, request.method == .GET || request.method == .HEAD,
            let head = try? Self.httpRequest(from: request)
        else { return nil }
        return immediateAnswer(for: head)
    }
}
