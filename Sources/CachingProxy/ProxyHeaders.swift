import HTTPCacheSemantics
import HTTPTypes
import NIOHTTP1

/// Header mapping between the client connection and the origin (RFC 9110 §7.6).
///
/// Hop-by-hop fields (the fixed table of ``HopByHopFields`` — Connection, Keep-Alive,
/// Proxy-Connection, TE, Transfer-Encoding, Upgrade, Proxy-Authenticate, Proxy-Authorization,
/// Trailer — plus every name the message's `Connection` lists) describe one connection and are
/// never forwarded, in either direction (RFC 9110 §7.6.1). Everything else is end-to-end and goes
/// through unchanged, in order, unknown names included.
enum ProxyHeaders {
    /// Fields the proxy sets itself on the upstream request: `Host` (AsyncHTTPClient writes the
    /// upstream's, as nginx's default `proxy_set_header Host $proxy_host`), `Content-Length`
    /// (AsyncHTTPClient frames the buffered body), `Expect` (the proxy answered `100-continue`
    /// itself and has the whole body).
    private static let setByProxyOnRequest: Set<String> = ["host", "content-length", "expect"]

    /// The `Via` the proxy adds to requests it forwards (RFC 9110 §7.6.3: "A proxy MUST send an
    /// appropriate Via header field … in each message that it forwards").
    static let via = "1.1 urlcache"

    /// ``HopByHopFields``' fixed table (a message without `Connection`).
    private static let fixedHopByHopNames = HopByHopFields.names(in: HTTPFields())

    /// The lowercased names never sent upstream whatever the request lists: the fixed hop-by-hop
    /// table and `setByProxyOnRequest`, in one set so that a field costs one lookup.
    private static let notForwardedUpstream = fixedHopByHopNames.union(setByProxyOnRequest)

    /// The hop-by-hop names of a message: the table plus what its `Connection` lists.
    static func hopByHopNames(_ headers: HTTPHeaders) -> Set<String> {
        guard headers.contains(name: "connection") else { return fixedHopByHopNames }
        // Whole lines: `HopByHopFields` splits the lists itself (NIO's `canonicalForm` split them
        // into substrings first, a third of a miss's header mapping).
        return HopByHopFields.names(listedIn: headers["connection"])
    }

    /// The client's request headers as sent upstream: hop-by-hop fields and those in
    /// `setByProxyOnRequest` removed, `Via` appended. Names and values as the client sent them.
    static func upstreamRequest(_ headers: HTTPHeaders) -> HTTPHeaders {
        var fields: [(String, String)] = []
        fields.reserveCapacity(headers.count + 1)
        forEachUpstreamField(of: headers) { _, name, value in fields.append((name, value)) }
        // All at once: `HTTPHeaders.add` checks each name for non-ASCII bytes and for `Connection`
        // (the names came from NIO's parser, and the filter took `Connection` out).
        return HTTPHeaders(fields)
    }

    /// The same fields as ``upstreamRequest(_:)``, in HTTP types (for the cache lookup of a
    /// request answered on the event loop); a name that is not a valid field name is left out,
    /// as CachingHTTPClient leaves it out of its own lookup.
    static func upstreamRequestFields(_ headers: HTTPHeaders) -> HTTPFields {
        var result = HTTPFields()
        result.reserveCapacity(headers.count + 1)
        forEachUpstreamField(of: headers) { fieldName, _, value in
            if let fieldName { result.append(HTTPField(name: fieldName, value: value)) }
        }
        return result
    }

    /// Calls `body` with each field of a client request that goes upstream, in order, then `Via`:
    /// its name in HTTP types (nil when it is not a valid field name) and as the client spelled it,
    /// and its value.
    private static func forEachUpstreamField(
        of headers: HTTPHeaders, _ body: (HTTPField.Name?, String, String) -> Void
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
            if notForwardedUpstream.contains(canonical) || listed?.contains(canonical) == true { continue }
            body(fieldName, name, value)
        }
        body(.via, "Via", via)
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
