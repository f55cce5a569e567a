import AsyncHTTPClient
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import SharedURLCache

/// The caching flow's transport: swift-http-types requests in, AsyncHTTPClient on the wire,
/// the body collected under the cap.
extension CachingHTTPClient {
    /// The fetch closure the flow calls for every origin exchange of one `execute`.
    /// - Parameters:
    ///   - deadline: the `execute`'s deadline, shared by all its exchanges.
    ///   - body: the caller's request body, sent with unsafe methods (the flow calls fetch once
    ///     for those, so a one-shot streaming body is fine).
    func originFetch(deadline: NIODeadline, body: HTTPClientRequest.Body?) -> HTTPCachingFlow.Fetch {
        let httpClient = self.httpClient
        let cap = configuration.maximumBodyBytes
        return { request, _ in
            guard let url = request.absoluteURL else { throw CachingHTTPClientError.invalidRequest("no absolute URL") }
            var outbound = HTTPClientRequest(url: url)
            outbound.method = HTTPMethod(rawValue: request.method.rawValue)
            for field in request.headerFields { outbound.headers.add(name: field.name.rawName, value: field.value) }
            if request.method != .get && request.method != .head { outbound.body = body }
            let response = try await httpClient.execute(outbound, deadline: deadline)

            var fields = HTTPFields()
            for header in response.headers {
                guard let name = HTTPField.Name(header.name) else { continue } // unrepresentable: dropped
                fields.append(HTTPField(name: name, value: header.value))
            }
            let head = HTTPResponse(status: .init(code: Int(response.status.code), reasonPhrase: response.status.reasonPhrase),
                                    headerFields: fields)
            let hasBody = request.method != .head && response.status != .notModified && response.status != .noContent
            guard hasBody else { return (head, Data()) }
            let declaredLength = response.headers.first(name: "content-length").flatMap { Int($0) }
            if let declaredLength, declaredLength > cap {
                // Announced too large to buffer: the caller gets the origin's stream; nothing is stored.
                throw OriginPassThrough(response: response)
            }
            var data = Data()
            if let declaredLength { data.reserveCapacity(declaredLength) } // one allocation, no regrowth copies
            for try await chunk in response.body {
                guard data.count + chunk.readableBytes <= cap else { throw CachingHTTPClientError.bodyTooLarge(limitBytes: cap) }
                data.append(contentsOf: chunk.readableBytesView)
            }
            return (head, data)
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

extension HTTPRequest {
    /// `scheme://authority/path?query`, or nil without scheme or authority.
    var absoluteURL: String? {
        guard let scheme, let authority, !authority.isEmpty else { return nil }
        return scheme + "://" + authority + (path ?? "/")
    }
}
