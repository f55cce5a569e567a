import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPTypes
import SharedURLCache

/// Real HTTP caching for URLSession on Linux: a `URLProtocol` that answers http(s) requests
/// through ``HTTPCachingFlow`` (RFC 9111, the six cache policies, offline mode) and reaches the
/// origin with an inner URLSession of its own.
///
/// ```swift
/// let configuration = URLSessionConfiguration.default
/// configuration.useSharedURLCache(try SharedCache(memoryCapacity: 8 << 20, diskCapacity: 1 << 30))
/// let session = URLSession(configuration: configuration)
/// ```
///
/// Why a protocol and not `configuration.urlCache`: on Linux the built-in HTTP protocol never
/// stores anything in a URLCache and ignores most cache policies (docs/Design.md, URLSession on Linux).
/// The flow is process-wide (URLSession instantiates protocol classes itself, with no way to
/// hand them an instance), set by ``URLSessionConfiguration/useSharedURLCache(_:configuration:)``.
public final class SharedURLCacheProtocol: URLProtocol {
    private static let flowLock = Locked<HTTPCachingFlow?>(nil)
    /// The inner session that reaches the origin: no cache, no protocol of ours, redirects
    /// followed by Foundation (reporting redirects from a URLProtocol is fatal in corelibs).
    private static let originSession: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        return URLSession(configuration: configuration)
    }()

    /// The flow every instance uses.
    public static var flow: HTTPCachingFlow? {
        get { flowLock.withLock { $0 } }
        set { flowLock.withLock { $0 = newValue } }
    }

    private let work = Locked<Task<Void, Never>?>(nil)

    /// Takes http and https requests while a flow is installed (``flow``).
    public override class func canInit(with request: URLRequest) -> Bool {
        guard flow != nil, let scheme = request.url?.scheme?.lowercased() else { return false }
        return scheme == "http" || scheme == "https"
    }

    /// The request as it is: the cache keys on the URL and the request's own fields.
    public override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

    /// Answers through the installed flow: from the cache, or from the origin and stored.
    public override func startLoading() {
        guard let flow = Self.flow else {
            client?.urlProtocol(self, didFailWithError: URLError(.unsupportedURL))
            return
        }
        let request = self.request
        // URLProtocol is not Sendable, but its client may be called from any thread (corelibs
        // hops to the session's queue itself); the instance crosses into the task only to
        // deliver through that client.
        let this = UncheckedSendableBox(self)
        // startLoading runs on the session's work queue, which feeds a serial queue shared by
        // every URLSession: starting a task synchronously from here would deadlock. Hop off.
        let task = Task.detached {
            let protocolInstance = this.value
            await protocolInstance.load(request, flow: flow)
        }
        work.withLock { $0 = task }
    }

    private func load(_ request: URLRequest, flow: HTTPCachingFlow) async {
        do {
            let (head, body) = try Self.httpRequest(from: request)
            let answer = try await flow.response(
                for: head, body: body, policy: RequestCachePolicy(request.cachePolicy), fetch: Self.fetch)
            guard !Task.isCancelled else { return }
            deliver(answer, for: request)
        } catch HTTPCachingError.notCached {
            // Foundation's answer for returnCacheDataDontLoad with nothing cached.
            client?.urlProtocol(self, didFailWithError: URLError(.resourceUnavailable))
        } catch let error as URLError {
            client?.urlProtocol(self, didFailWithError: error)
        } catch {
            client?.urlProtocol(
                self, didFailWithError: URLError(.cannotLoadFromNetwork, userInfo: [NSUnderlyingErrorKey: error]))
        }
    }

    /// Cancels the request's work (an origin request in flight is dropped).
    public override func stopLoading() {
        work.withLock { $0?.cancel() }
    }

    private func deliver(_ answer: CachedHTTPResponse, for request: URLRequest) {
        guard let url = request.url else { return }
        var fields: [String: String] = [:]
        for field in answer.response.headerFields {
            fields[field.name.canonicalName] =
                fields[field.name.canonicalName].map { $0 + ", " + field.value } ?? field.value
        }
        fields["X-Cache-Status"] = answer.cacheStatus.rawValue
        guard
            let response = HTTPURLResponse(
                url: url, statusCode: answer.response.status.code, httpVersion: "HTTP/1.1", headerFields: fields)
        else {
            client?.urlProtocol(self, didFailWithError: URLError(.badServerResponse))
            return
        }
        // We store through the flow; URLSession must not cache on its own.
        client?.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
        // Completion-handler and async callers see only the last chunk: deliver it whole.
        if !answer.body.isEmpty { client?.urlProtocol(self, didLoad: answer.body) }
        client?.urlProtocolDidFinishLoading(self)
    }

    /// The request as swift-http-types sees it, plus its body (httpBody or a drained stream).
    static func httpRequest(from request: URLRequest) throws -> (HTTPRequest, Data?) {
        guard let url = request.url, let scheme = url.scheme, let host = url.host else { throw URLError(.badURL) }
        let authority = url.port.map { "\(host):\($0)" } ?? host
        var path = url.path.isEmpty ? "/" : url.path
        if let query = url.query { path += "?" + query }
        var fields = HTTPFields()
        for (name, value) in request.allHTTPHeaderFields ?? [:] {
            if let fieldName = HTTPField.Name(name) { fields.append(HTTPField(name: fieldName, value: value)) }
        }
        let method = HTTPRequest.Method(request.httpMethod ?? "GET") ?? .get
        var body = request.httpBody
        if body == nil, let stream = request.httpBodyStream { body = drain(stream) }
        return (
            HTTPRequest(
                method: method, scheme: scheme.lowercased(), authority: authority, path: path, headerFields: fields),
            body
        )
    }

    private static func drain(_ stream: InputStream) -> Data {
        var data = Data()
        stream.open()
        defer { stream.close() }
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = stream.read(&buffer, maxLength: buffer.count)
            if n <= 0 { break }
            data.append(buffer, count: n)
        }
        return data
    }

    /// The origin, through the inner session.
    static let fetch: HTTPCachingFlow.Fetch = { request, body in
        guard let urlString = request.url?.absoluteString, let url = URL(string: urlString) else {
            throw URLError(.badURL)
        }
        var urlRequest = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData)
        urlRequest.httpMethod = request.method.rawValue
        for field in request.headerFields { urlRequest.addValue(field.value, forHTTPHeaderField: field.name.rawName) }
        urlRequest.httpBody = body
        let (data, response) = try await originSession.data(for: urlRequest)
        guard let http = response as? HTTPURLResponse else { throw URLError(.badServerResponse) }
        var fields = HTTPFields()
        for (name, value) in http.allHeaderFields {
            guard let name = name as? String, let value = value as? String, let fieldName = HTTPField.Name(name) else {
                continue
            }
            // The inner session already decoded the body; its framing fields no longer apply.
            if fieldName == .contentLength || fieldName == .transferEncoding || fieldName == .contentEncoding {
                continue
            }
            fields.append(HTTPField(name: fieldName, value: value))
        }
        return (HTTPResponse(status: .init(code: http.statusCode), headerFields: fields), data)
    }
}

/// Carries a non-Sendable reference into a task where the code that uses it is thread-safe.
struct UncheckedSendableBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

extension URLSessionConfiguration {
    /// Gives sessions made from this configuration real HTTP caching on `cache` (two lines:
    /// this and `URLSession(configuration:)`). Process-wide: the last call sets the cache every
    /// such session uses.
    public func useSharedURLCache(_ cache: SharedCache, configuration: HTTPCachingConfiguration = .init()) {
        SharedURLCacheProtocol.flow = HTTPCachingFlow(cache: cache, configuration: configuration)
        protocolClasses =
            [SharedURLCacheProtocol.self] + (protocolClasses ?? []).filter { $0 != SharedURLCacheProtocol.self }
        urlCache = nil // the built-in layer must not serve or drop entries on its own
    }
}
