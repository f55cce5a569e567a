import HTTPCacheSemantics
import HTTPTypes
import NIOHTTP1

/// Which request fields, beyond the hop-by-hop ones, the proxy keeps from the origin (nginx's
/// `proxy_set_header` defaults, stated): fields that some frameworks read to rewrite the
/// target, the method or the host an application believes it serves. Sent by a client through a
/// cache, they change what the origin answers while the key stays the same (cache poisoning), or
/// reach routes the proxy was put in front of to hide. Dropped unless named by `--pass-header`.
struct UpstreamFieldRules: Sendable {
    /// Dropped by default (lowercased): `X-Forwarded-Host` (the proxy sends the upstream's
    /// `Host`), `X-Original-URL` and `X-Rewrite-URL` (IIS, Symfony, Laravel route by them), and
    /// the method-override family (Rails, Express, Symfony honour them on a POST, some on any).
    static let droppedByDefault: Set<String> = [
        "x-forwarded-host", "x-original-url", "x-rewrite-url", "x-http-method-override", "x-http-method",
        "x-method-override",
    ]
    /// Fields the proxy sets on every request it sends upstream, whatever the client sent:
    /// `Host` (AsyncHTTPClient writes the upstream's, as nginx's default `proxy_set_header Host
    /// $proxy_host`), `Content-Length` (AsyncHTTPClient frames the body), `Expect` (the proxy
    /// answered `100-continue` itself) and `X-Forwarded-Proto`.
    private static let setByProxy: Set<String> = ["host", "content-length", "expect", ProxyHeaders.forwardedProto]

    /// Lowercased names never forwarded as the client sent them: the fixed hop-by-hop table, the
    /// proxy's own, and the dropped ones; one set, so that a field costs one lookup.
    let notForwarded: Set<String>

    /// The default rules: every field in ``droppedByDefault`` dropped.
    static let standard = UpstreamFieldRules()

    /// The rules with `passed` (field names, any case) let through.
    init(passing passed: [String] = []) {
        let dropped = Self.droppedByDefault.subtracting(passed.map { $0.lowercased() })
        notForwarded = HopByHopFields.names(in: HTTPFields()).union(Self.setByProxy).union(dropped)
    }
}

/// Header mapping between the client connection and the origin (RFC 9110 §7.6).
///
/// Hop-by-hop fields (the fixed table of ``HopByHopFields`` — Connection, Keep-Alive,
/// Proxy-Connection, TE, Transfer-Encoding, Upgrade, Proxy-Authenticate, Proxy-Authorization,
/// Trailer — plus every name the message's `Connection` lists) describe one connection and are
/// never forwarded, in either direction (RFC 9110 §7.6.1). Everything else is end-to-end and goes
/// through unchanged, in order, unknown names included.
enum ProxyHeaders {
    /// The `Via` the proxy adds to requests it forwards (RFC 9110 §7.6.3: "A proxy MUST send an
    /// appropriate Via header field … in each message that it forwards").
    static let via = "1.1 urlcache"

    /// ``HopByHopFields``' fixed table (a message without `Connection`).
    private static let fixedHopByHopNames = HopByHopFields.names(in: HTTPFields())

    /// The fields that say who the client is and how it connected, which the proxy writes
    /// itself (nginx's usual `proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for` and
    /// `X-Forwarded-Proto $scheme`): the client's `X-Forwarded-For` is kept with the peer's
    /// address appended, its `X-Forwarded-Proto` is replaced by the proxy's (`http`).
    static let forwardedFor = "x-forwarded-for"
    static let forwardedProto = "x-forwarded-proto"

    /// The hop-by-hop names of a message: the table plus what its `Connection` lists.
    static func hopByHopNames(_ headers: HTTPHeaders) -> Set<String> {
        guard headers.contains(name: "connection") else { return fixedHopByHopNames }
        // Whole lines: `HopByHopFields` splits the lists itself (NIO's `canonicalForm` split them
        // into substrings first, a third of a miss's header mapping).
        return HopByHopFields.names(listedIn: headers["connection"])
    }

    /// The client's request headers as sent upstream: hop-by-hop fields, those the proxy sets
    /// itself and those `rules` drop removed, then `X-Forwarded-For` (the client's list with
    /// `peer` appended), `X-Forwarded-Proto: http` and `Via`. Names and values as the client
    /// spelled them.
    static func upstreamRequest(
        _ headers: HTTPHeaders, rules: UpstreamFieldRules = .standard, peer: String? = nil
    ) -> HTTPHeaders {
        var fields: [(String, String)] = []
        fields.reserveCapacity(headers.count + 3)
        var forwardedForValues: [String] = []
        forEachUpstreamField(of: headers, rules: rules) { _, name, canonical, value in
            if canonical == forwardedFor { forwardedForValues.append(value) } else { fields.append((name, value)) }
        }
        if let peer { forwardedForValues.append(peer) }
        if !forwardedForValues.isEmpty {
            fields.append(("X-Forwarded-For", forwardedForValues.joined(separator: ", ")))
        }
        fields.append(("X-Forwarded-Proto", "http"))
        fields.append(("Via", via))
        // All at once: `HTTPHeaders.add` checks each name for non-ASCII bytes and for `Connection`
        // (the names came from NIO's parser, and the filter took `Connection` out).
        return HTTPHeaders(fields)
    }

    /// The fields of ``upstreamRequest(_:rules:peer:)`` that a cache lookup compares (a request
    /// answered on the event loop), in HTTP types: the client's, filtered alike, then `Via`.
    /// `X-Forwarded-For` and `X-Forwarded-Proto` are left out, which spares every hit building
    /// them: a response that varies on them is then not answered on the event loop but by the
    /// caching client, which compares the fields sent. A name that is not a valid field name is
    /// left out, as CachingHTTPClient leaves it out of its own lookup.
    static func upstreamRequestFields(_ headers: HTTPHeaders, rules: UpstreamFieldRules = .standard)
        -> HTTPFields
    {
        var result = HTTPFields()
        result.reserveCapacity(headers.count + 1)
        forEachUpstreamField(of: headers, rules: rules) { fieldName, _, canonical, value in
            if let fieldName, canonical != forwardedFor { result.append(HTTPField(name: fieldName, value: value)) }
        }
        result.append(HTTPField(name: .via, value: via))
        return result
    }

    /// Calls `body` with each field of a client request that goes upstream as the client sent it,
    /// in order (`X-Forwarded-For` included, for the caller to extend): its name in HTTP types
    /// (nil when it is not a valid field name), as the client spelled it and in canonical
    /// (lowercase) form, and its value.
    private static func forEachUpstreamField(
        of headers: HTTPHeaders, rules: UpstreamFieldRules, _ body: (HTTPField.Name?, String, String, String) -> Void
    ) {
        // The usual request has no `Connection` (HTTP/1.1 keeps the connection by default): then
        // the fixed set decides alone and no set is built for the request.
        let listed: Set<String>? = headers.contains(name: "connection") ? hopByHopNames(headers) : nil
        for (name, value) in headers {
            // Each name is converted once and compared by its canonical (lowercase) form, in one
            // set: a lowered copy for the filter, a second lookup and the conversion's own
            // lowering after it cost a hit about 800 instructions.
            let fieldName = HTTPField.Name(name)
            let canonical = fieldName?.canonicalName ?? name.lowercased()
            if rules.notForwarded.contains(canonical) || listed?.contains(canonical) == true { continue }
            body(fieldName, name, canonical, value)
        }
    }

    /// The origin's (or the cache's) response headers as sent to the client: hop-by-hop fields
    /// removed (NIO frames the body: Content-Length when known, else chunked).
    static func downstreamResponse(_ headers: HTTPHeaders) -> HTTPHeaders {
        // Stored heads carry none already (RFC 9111 §3.1); origin heads on a miss may.
        let excluded = hopByHopNames(headers)
        var fields: [(String, String)] = []
        fields.reserveCapacity(headers.count + 3)
        for (name, value) in headers where !excluded.contains(name.lowercased()) {
            fields.append((name, value))
        }
        // All at once, as in `upstreamRequest(_:)` (`add` cost a miss about 3,800 instructions).
        return HTTPHeaders(fields)
    }
}
