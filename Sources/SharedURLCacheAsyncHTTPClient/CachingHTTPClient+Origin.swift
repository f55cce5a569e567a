import AsyncHTTPClient
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import SharedURLCache

/// The caching flow's transport: swift-http-types requests in, AsyncHTTPClient on the wire,
/// the response body handed to the flow as a stream (the flow tees it into the store).
extension CachingHTTPClient {
    /// The fetch closure the flow calls for every origin exchange of one `execute`.
    /// - Parameters:
    ///   - deadline: the `execute`'s deadline, shared by all its exchanges.
    ///   - body: the caller's request body, sent with unsafe methods (the flow calls fetch once
    ///     for those, so a one-shot streaming body is fine).
    ///   - trace: told when the parent tier could not answer an exchange.
    func originFetch(
        deadline: NIODeadline, body: HTTPClientRequest.Body?, trace: ParentRouter.Trace?
    ) -> HTTPCachingFlow.StreamingFetch {
        let httpClient = self.httpClient
        let parentRouter = self.parentRouter
        let originExchange = configuration.originExchange
        return { request, _ in
            guard let url = request.absoluteURL else { throw CachingHTTPClientError.invalidRequest("no absolute URL") }
            var outbound = HTTPClientRequest(url: url)
            outbound.method = HTTPMethod(rawValue: request.method.rawValue)
            for field in request.headerFields { outbound.headers.add(name: field.name.rawName, value: field.value) }
            if request.method != .get && request.method != .head { outbound.body = body }
            let response: HTTPClientResponse
            if let parentRouter, let trace, request.method == .get || request.method == .head,
                let authority = request.authority,
                let scheme = request.scheme
            {
                response = try await parentRouter.execute(
                    outbound, url: url, authority: authority, target: request.path ?? "/", scheme: scheme,
                    httpClient: httpClient, deadline: deadline, trace: trace)
            } else if let originExchange {
                response = try await originExchange(outbound, deadline)
            } else {
                response = try await httpClient.execute(outbound, deadline: deadline)
            }

            var fields = HTTPFields()
            for header in response.headers {
                guard let name = HTTPField.Name(header.name) else { continue } // unrepresentable: dropped
                fields.append(HTTPField(name: name, value: header.value))
            }
            let head = HTTPResponse(
                status: .init(code: Int(response.status.code), reasonPhrase: response.status.reasonPhrase),
                headerFields: fields)
            let hasBody = request.method != .head && response.status != .notModified && response.status != .noContent
            guard hasBody else { return (head, .empty) }
            return (head, OriginBody(OriginChunks(body: response.body)))
        }
    }

    /// `request` as swift-http-types sees it. The path and query keep their percent-encoding
    /// (`/a%2Fb` is not `/a/b`).
    static func httpRequest(from request: HTTPClientRequest) throws -> HTTPRequest {
        guard let components = URLComponents(string: request.url), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = components.percentEncodedHost, !host.isEmpty
        else { throw CachingHTTPClientError.invalidRequest("not an absolute http(s) URL: \(request.url)") }
        let authority = components.port.map { "\(host):\($0)" } ?? host
        var path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        if let query = components.percentEncodedQuery { path += "?" + query }
        var fields = HTTPFields()
        for header in request.headers {
            guard let name = HTTPField.Name(header.name) else { continue }
            fields.append(HTTPField(name: name, value: header.value))
        }
        guard let method = HTTPRequest.Method(request.method.rawValue) else {
            throw CachingHTTPClientError.invalidRequest("not a method token: \(request.method.rawValue)")
        }
        return HTTPRequest(method: method, scheme: scheme, authority: authority, path: path, headerFields: fields)
    }
}

/// AsyncHTTPClient's response body as the flow reads it: one `Data` per `ByteBuffer`.
struct OriginChunks: AsyncSequence, Sendable {
    typealias Element = Data
    let body: HTTPClientResponse.Body

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: HTTPClientResponse.Body.AsyncIterator
        mutating func next() async throws -> Data? {
            guard let buffer = try await base.next() else { return nil }
            return Data(buffer.readableBytesView)
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: body.makeAsyncIterator()) }
}

/// The flow's body as AsyncHTTPClient's callers read it: one `ByteBuffer` per chunk.
struct ByteBufferChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let body: CachedBody

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: CachedBody.AsyncIterator
        mutating func next() async throws -> ByteBuffer? {
            guard let data = try await base.next() else { return nil }
            return ByteBuffer(bytes: data)
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: body.makeAsyncIterator()) }
}

extension HTTPRequest {
    /// `scheme://authority/path?query`, or nil without scheme or authority.
    var absoluteURL: String? {
        guard let scheme, let authority, !authority.isEmpty else { return nil }
        return scheme + "://" + authority + (path ?? "/")
    }
}
