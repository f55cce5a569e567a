import AsyncHTTPClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPCacheSemantics
import HTTPTypes
import NIOCore
import NIOHTTP1
import SharedURLCache
import SharedURLCacheAsyncHTTPClient

/// What the proxy sends back for one request: the caching client's answer, or an error the
/// proxy produced itself (400, 502, 504).
struct ProxyAnswer: Sendable {
    var status: HTTPResponseStatus
    var headers: HTTPHeaders
    /// The body as the caching client hands it out (a stored or buffered body in chunks, or the
    /// origin's stream when it was too large to buffer).
    var body: HTTPClientResponse.Body
    /// How the cache answered; `nil` for an answer the proxy made up.
    var cacheStatus: CacheStatus?
    /// The same as a `Cache-Status` member (RFC 9211); `nil` for an answer the proxy made up
    /// (§2: an intermediary does not add one to a response it generates).
    var cacheStatusMember: CacheStatusMember?
    /// The head comes from the store, which keeps no hop-by-hop fields (RFC 9111 §3.1), so it
    /// goes to the client as it is.
    var isStored = false
    /// The stored head prepared for the memory item that answers (``PreparedStoredHead``), with
    /// this answer's `Age`: then `headers` is empty and gets only the per-request fields.
    var preparedHead: PreparedHeadUse? = nil
    /// What the body stores as it is read (a miss): once it has been read whole before the head
    /// goes out, its member may say `stored` if the entry was committed.
    var storeSettlement: StoreSettlement = .nothingStored

    static func error(_ status: HTTPResponseStatus) -> ProxyAnswer {
        ProxyAnswer(
            status: status, headers: ["Content-Length": "0"], body: HTTPClientResponse.Body(), cacheStatus: nil,
            cacheStatusMember: nil)
    }
}

/// Turns a client request into a ``CachingHTTPClient`` request — the same caching flow, store and
/// partition rules as every Swift service on the library — and its failures into gateway errors.
struct ProxyForwarder: Sendable {
    let client: CachingHTTPClient
    let mode: ProxyConfiguration.Mode
    let upstreamTimeout: TimeAmount
    /// Counts the answers the proxy makes itself and its purges, when it serves `/metrics`.
    let metrics: ProxyMetrics?
    /// Who may `PURGE`; nil forwards `PURGE` like any method.
    let purge: PurgeAccess?
    /// The request fields dropped on the way upstream (``UpstreamFieldRules``).
    var fieldRules: UpstreamFieldRules = .standard
    /// Internal destinations a forward proxy may reach (``ProxyConfiguration/forwardAllowed``).
    var forwardAllowed: AddressRanges?

    /// Answers one request; never throws (origin failures become 502 / 504).
    /// - Parameters:
    ///   - head: the client's request head; its target is forwarded byte for byte.
    ///   - body: the whole request body, or nil when the client declared none or it streams.
    ///   - streamedBody: the request body as it is read from the client (``RequestBodyStream``).
    ///   - clientAddress: the client's address (who may `PURGE`).
    ///   - peer: the client's address, appended to `X-Forwarded-For`.
    func answer(
        _ head: HTTPRequestHead, body: ByteBuffer?, streamedBody: HTTPClientRequest.Body? = nil,
        clientAddress: SocketAddress?,
        peer: String? = nil
    ) async -> ProxyAnswer {
        if head.method == .PURGE, let purge {
            return await purgeAnswer(head, access: purge, clientAddress: clientAddress)
        }
        let answer = await uncountedAnswer(head, body: body, streamedBody: streamedBody, peer: peer)
        // The caching client counted its own answers; these are the proxy's.
        if answer.cacheStatusMember == nil { metrics?.recordGenerated() }
        return answer
    }

    /// `PURGE <target>`: removes every variant the proxy stored for the target's upstream URL, in
    /// the proxy's partition (what a GET of the target would be answered from). With
    /// `Surrogate-Key: a b`, removes every entry tagged `a` or `b` instead (the target is then
    /// not used); with `Soft-Purge: 1`, marks the entries stale instead of removing them.
    private func purgeAnswer(
        _ head: HTTPRequestHead, access: PurgeAccess, clientAddress: SocketAddress?
    ) async -> ProxyAnswer {
        guard access.allows(peer: clientAddress, authorization: head.headers.first(name: "authorization"))
        else { return .error(.forbidden) }
        let soft = head.headers.first(name: "soft-purge") == "1"
        let tags = head.headers["surrogate-key"].flatMap { $0.split(whereSeparator: { $0 == " " || $0 == "," }) }
        let cache = client.cache
        var count = 0
        if !tags.isEmpty {
            for tag in Set(tags.map(String.init)) {
                count +=
                    soft
                    ? await cache.invalidateCachedResponses(taggedWith: tag)
                    : await cache.removeCachedResponses(taggedWith: tag)
            }
        } else {
            guard let url = upstreamURL(target: head.uri).flatMap(URL.init(string:)) else { return .error(.badRequest) }
            let request = URLRequest(url: url)
            // Parents first: a miss between the two would store a parent's old copy here again.
            if access.sendsToParents, !soft { _ = try? await client.purgeParents(of: url.absoluteString) }
            count =
                soft
                ? await cache.invalidateCachedResponse(for: request) : await cache.purgeCachedResponses(for: request)
        }
        metrics?.recordPurge(removedEntries: count)
        var body = ByteBuffer()
        body.writeString("{\"\(soft ? "invalidated" : "purged")\":\(count)}\n")
        return ProxyAnswer(
            status: count > 0 ? .ok : .notFound,
            headers: ["Content-Type": "application/json", "Content-Length": String(body.readableBytes)],
            body: .bytes(body), cacheStatus: nil, cacheStatusMember: nil)
    }

    private func uncountedAnswer(
        _ head: HTTPRequestHead, body: ByteBuffer?, streamedBody: HTTPClientRequest.Body?, peer: String?
    ) async -> ProxyAnswer {
        if head.method == .CONNECT { return .error(.methodNotAllowed) } // no tunnels
        if case .forward = mode, !forwardDestinationAllowed(head.uri) { return .error(.forbidden) }
        guard var request = upstreamRequest(for: head, peer: peer) else { return .error(.badRequest) }
        if let streamedBody {
            request.body = streamedBody
        } else if let body {
            // A GET or HEAD body makes CachingHTTPClient bypass the cache, so an empty one is
            // dropped; an unsafe method keeps even an empty body (Content-Length: 0 upstream).
            if body.readableBytes > 0 || (head.method != .GET && head.method != .HEAD) { request.body = .bytes(body) }
        }
        do {
            let response = try await client.execute(request, timeout: upstreamTimeout)
            var answer = ProxyAnswer(
                status: response.status, headers: response.headers, body: response.body,
                cacheStatus: response.cacheStatus, cacheStatusMember: response.cacheStatusMember)
            answer.storeSettlement = response.storeSettlement
            return answer
        } catch is RequestBodyTooLarge {
            return .error(.payloadTooLarge)
        } catch is CancellationError {
            return .error(.badGateway) // the client went away; nobody reads this
        } catch let error as CachingHTTPClientError {
            switch error {
            case .invalidRequest: return .error(.badRequest)
            default: return .error(.badGateway)
            }
        } catch let error as HTTPCachingError {
            switch error {
            case .invalidRequest: return .error(.badRequest)
            case .notCached: return .error(.gatewayTimeout)
            }
        } catch let error as HTTPClientError {
            if [HTTPClientError.invalidURL, .emptyHost, .emptyScheme].contains(error) { return .error(.badRequest) }
            if [HTTPClientError.deadlineExceeded, .readTimeout, .connectTimeout, .writeTimeout].contains(error) {
                return .error(.gatewayTimeout)
            }
            return .error(.badGateway)
        } catch {
            return .error(.badGateway)
        }
    }

    /// The answer to a GET or HEAD without a body when the cache gives it at once (a fresh hit
    /// with its body in memory), with that body; nil otherwise (then ``answer(_:body:)``).
    /// Synchronous: see ``CachingHTTPClient/immediateResponse(for:)``.
    /// - Parameter cacheStatusHeader: the name of the nginx-style cache status field the proxy
    ///   sends, which a prepared head leaves out of the stored fields.
    func storedAnswer(_ head: HTTPRequestHead, cacheStatusHeader: String?) -> (ProxyAnswer, ByteBuffer)? {
        guard head.method == .GET || head.method == .HEAD else { return nil }
        let stored: CachingHTTPClient.ImmediateAnswer?
        if case .reverse(let upstream) = mode, head.uri.hasPrefix("/"), !head.uri.utf8.contains(UInt8(ascii: "#")) {
            // A target that cannot be proxied is answered 400 by the general path.
            guard let target = OriginFormTarget.normalized(head.uri) else { return nil }
            // The usual target: the request in HTTP types from its parts, with no URL string
            // built and parsed again (that was an eighth of a hit's instructions).
            stored = client.immediateAnswer(
                for: HTTPRequest(
                    method: head.method == .GET ? .get : .head, scheme: upstream.scheme,
                    authority: upstream.authority, path: upstream.basePath + target,
                    headerFields: ProxyHeaders.upstreamRequestFields(head.headers, rules: fieldRules)))
        } else {
            if case .forward = mode, !forwardDestinationAllowed(head.uri) { return nil } // answered 403
            guard let request = upstreamRequest(for: head) else { return nil }
            stored = client.immediateAnswer(for: request)
        }
        switch stored {
        case nil: return nil
        case .memoryItem(let item)?: return Self.storedAnswer(item, cacheStatusHeader: cacheStatusHeader)
        case .response(let response)?: return Self.storedAnswer(response)
        }
    }

    /// A memory item's answer from the head prepared for it, kept with the item from its first
    /// such hit on (docs/Proxy.md, "A hit from memory"); as any stored answer when the head
    /// cannot be prepared.
    private static func storedAnswer(_ item: MemoryItemAnswer, cacheStatusHeader: String?)
        -> (ProxyAnswer, ByteBuffer)
    {
        let prepared: PreparedStoredHead
        if let kept = item.slot.rendition as? PreparedStoredHead, kept.cacheStatusHeader == cacheStatusHeader {
            prepared = kept
        } else if let made = PreparedStoredHead(item, cacheStatusHeader: cacheStatusHeader) {
            item.slot.keep(made)
            prepared = made
        } else {
            return storedAnswer(CachingHTTPClient.ImmediateResponse(item.response))
        }
        let answer = ProxyAnswer(
            status: prepared.status, headers: HTTPHeaders(), body: HTTPClientResponse.Body(),
            cacheStatus: item.cacheStatus, cacheStatusMember: item.cacheStatusMember, isStored: true,
            preparedHead: PreparedHeadUse(prepared: prepared, age: String(max(0, item.age))))
        // The body is copied per hit, as on the general path: a copy kept with the item would be
        // memory beyond the tier's capacity.
        return (answer, item.isHead ? ByteBuffer() : ByteBuffer(bytes: item.body))
    }

    private static func storedAnswer(_ stored: CachingHTTPClient.ImmediateResponse) -> (ProxyAnswer, ByteBuffer) {
        let answer = ProxyAnswer(
            status: stored.status, headers: stored.headers, body: HTTPClientResponse.Body(),
            cacheStatus: stored.cacheStatus, cacheStatusMember: stored.cacheStatusMember, isStored: true)
        return (answer, stored.body)
    }

    /// The request to the upstream for a client's request head (no body), or nil when its target
    /// cannot be proxied; `peer` is the client's address, for `X-Forwarded-For`.
    func upstreamRequest(for head: HTTPRequestHead, peer: String? = nil) -> HTTPClientRequest? {
        guard let url = upstreamURL(target: head.uri) else { return nil }
        var request = HTTPClientRequest(url: url)
        request.method = Self.wireMethod(head.method)
        request.headers = ProxyHeaders.upstreamRequest(head.headers, rules: fieldRules, peer: peer)
        return request
    }

    /// Whether a forward proxy may send the absolute-form `target` where it points: not to an
    /// internal address (``AddressRanges/internalNetworks``) or `localhost` unless ``forwardAllowed``
    /// lists it. Names other than `localhost` are not resolved here.
    func forwardDestinationAllowed(_ target: String) -> Bool {
        guard let host = URLComponents(string: target)?.host?.lowercased() else { return true } // 400 later
        if host == "localhost" || host.hasSuffix(".localhost") {
            return forwardAllowed?.contains(literal: "127.0.0.1") == true
        }
        guard AddressRanges.internalNetworks.contains(literal: host) else { return true }
        return forwardAllowed?.contains(literal: host) == true
    }

    /// The method as the client spelled it: NIO parses `M-SEARCH` into a case whose raw value
    /// (and encoding) is `MSEARCH`, which would send the origin another method.
    static func wireMethod(_ method: HTTPMethod) -> HTTPMethod {
        method == .MSEARCH ? .RAW(value: "M-SEARCH") : method
    }

    /// The absolute URL a target goes to, or nil when it cannot be proxied.
    ///
    /// Reverse mode: an origin-form target (`/path?query`) is appended to the upstream URL with
    /// its dot-segments removed (``OriginFormTarget``: nil for one that would climb above the
    /// base path); an absolute-form one (RFC 9112 §3.2.2: servers must accept it) keeps only its
    /// path and query, resolved the same way. Forward mode: the absolute-form target is the URL.
    func upstreamURL(target: String) -> String? {
        switch mode {
        case .reverse(let upstream):
            if target.hasPrefix("/") { return OriginFormTarget.normalized(target).map(upstream.url(for:)) }
            guard let schemeEnd = target.range(of: "://") else { return nil }
            let rest = target[schemeEnd.upperBound...]
            let pathStart = rest.firstIndex { $0 == "/" || $0 == "?" }
            guard let pathStart else { return upstream.url(for: "/") }
            let path = rest[pathStart...]
            return OriginFormTarget.normalized(path.hasPrefix("/") ? String(path) : "/" + path).map(upstream.url(for:))
        case .forward:
            let lowered = target.prefix(8).lowercased()
            guard lowered.hasPrefix("http://") || lowered.hasPrefix("https://") else { return nil }
            return target
        }
    }
}
