/// The origin both client integration suites (AsyncHTTPClient, URLSession) run against, so the
/// two clients are tested on the same answers: the path says what to send.
extension LoopbackOrigin {
    /// A JSON body of about 600 bytes that says which request of the origin it answered.
    public static func numberedBody(_ n: Int) -> String {
        "{\"n\":\(n),\"items\":[" + String(repeating: "1,", count: 300) + "1]}"
    }

    /// A response tagged `etag`: a 304 when the request's If-None-Match is that tag, else a 200 with
    /// `body`; both carry the tag (RFC 9111 §4.3.4: the 304 repeats the validator it matched) and
    /// `cacheControl`.
    public static func tagged(_ etag: String, cacheControl: String, request: Request, body: String) -> Response {
        let headers = [("ETag", etag), ("Cache-Control", cacheControl)]
        if request.header("If-None-Match") == etag { return .init(status: 304, headers: headers) }
        return .init(headers: headers, body: body)
    }

    /// The answer to the `n`th request: /etag… and /lastmod… revalidate (a 304 to the matching
    /// condition), /nostore… is not stored, /vary… varies on Accept-Language, /stale… may be served
    /// stale on error, /error… is a 500 without freshness, a POST elsewhere is a 204, and any other
    /// GET is fresh for ten minutes.
    public static func clientIntegrationResponse(_ request: Request, _ n: Int) -> Response {
        let path = request.target
        if path.hasPrefix("/etag") {
            return tagged("\"v1\"", cacheControl: "max-age=0", request: request, body: numberedBody(n))
        }
        if path.hasPrefix("/lastmod") {
            let lm = "Sun, 06 Nov 1994 08:49:37 GMT"
            if request.header("If-Modified-Since") == lm {
                return .init(status: 304, headers: [("Cache-Control", "no-cache"), ("Last-Modified", lm)])
            }
            return .init(headers: [("Last-Modified", lm), ("Cache-Control", "no-cache")], body: numberedBody(n))
        }
        if path.hasPrefix("/nostore") { return .init(headers: [("Cache-Control", "no-store")], body: numberedBody(n)) }
        if path.hasPrefix("/vary") {
            return .init(
                headers: [("Cache-Control", "max-age=600"), ("Vary", "Accept-Language")],
                body: "lang=" + (request.header("Accept-Language") ?? "-"))
        }
        if path.hasPrefix("/stale") {
            return .init(headers: [("Cache-Control", "max-age=1, stale-if-error=600")], body: numberedBody(n))
        }
        // no freshness: not stored (an explicitly fresh 5xx is, RFC 9111 §3)
        if path.hasPrefix("/error") { return .init(status: 500, body: "oops") }
        if request.method == "POST" { return .init(status: 204) }
        return .init(
            headers: [("Cache-Control", "max-age=600"), ("Content-Type", "application/json")], body: numberedBody(n))
    }
}
