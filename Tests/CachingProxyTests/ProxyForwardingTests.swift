import CachingProxy
import Foundation
import LoopbackOrigin
import Synchronization
import Testing
import TestProcess

/// The proxy as an HTTP/1.1 intermediary — methods and bodies, targets,
/// headers, keep-alive and concurrency, interim responses, broken and slow origins.
@Suite(.blockingWaits, .timeLimit(.minutes(10)))
struct ProxyForwardingTests {
    /// An origin that echoes what it received in headers and returns the request body.
    static let echo: @Sendable (LoopbackOrigin.Request, Int) -> LoopbackOrigin.Response = { request, _ in
        var response = LoopbackOrigin.Response(
            status: 200,
            headers: [
                ("X-Echo-Method", request.method), ("X-Echo-Target", request.target), ("Cache-Control", "no-store"),
            ])
        response.body = request.body
        return response
    }

    @Test(
        "every method passes through with its body, on one keep-alive connection",
        arguments: [
            "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "PURGE", "PROPFIND", "QUERY", "M-SEARCH",
        ])
    func methodsPassThrough(method: String) async throws {
        let fixture = try await ProxyFixture.start(Self.echo)
        let connection = try await fixture.connect()
        defer { connection.close() }
        let body = method == "GET" || method == "HEAD" ? nil : Array("payload of \(method) \u{0}\u{1}\u{FF}".utf8)
        for round in 0..<2 { // the second request reuses the connection
            let response = try await connection.exchange(method, "/m?round=\(round)", body: body)
            #expect(response.status == 200)
            #expect(response.header("X-Echo-Method") == method)
            if method != "HEAD" { #expect(response.body == (body ?? [])) }
        }
        let seen = fixture.origin.requests
        #expect(seen.count == 2)
        #expect(seen.allSatisfy { $0.method == method && $0.body == (body ?? []) })
        try await fixture.stop()
    }

    @Test(
        "a method token NIO's parser does not know gets 501 (RFC 9110 §9.1), a malformed request 400; the proxy keeps serving"
    )
    func unknownMethodAndMalformedRequest() async throws {
        let fixture = try await ProxyFixture.start(Self.echo)
        let unknown = try await fixture.connect()
        defer { unknown.close() }
        try await unknown.write("FROB /m HTTP/1.1\r\nHost: proxy.test\r\n\r\n")
        let refused = try await unknown.readResponse()
        #expect(refused.status == 501 && refused.header("Connection") == "close")
        #expect(try await unknown.isClosedByPeer())
        let malformed = try await fixture.connect()
        defer { malformed.close() }
        try await malformed.write("GET /m HTTP/1.1\r\nHost proxy.test\r\n\r\n") // a field line without a colon
        #expect(try await malformed.readResponse().status == 400)
        #expect(try await fixture.send("GET", "/m").status == 200)
        #expect(fixture.origin.requests.allSatisfy { $0.method == "GET" })
        try await fixture.stop()
    }

    @Test(
        "paths and query strings are forwarded byte for byte, but for their dot-segments (RFC 3986 §5.2.4)",
        arguments: [
            ("/a%2Fb/c%20d?x=1&y=%41%2f&z=a+b;c", "/a%2Fb/c%20d?x=1&y=%41%2f&z=a+b;c"),
            ("/odd/./../dots//double?q=%7E~&empty=&&flag", "/dots//double?q=%7E~&empty=&&flag"),
            ("/%E2%82%AC/caf%C3%A9?utf8=%E2%9C%93", "/%E2%82%AC/caf%C3%A9?utf8=%E2%9C%93"),
            ("/?", "/?"), ("/path;matrix=1?a=b=c", "/path;matrix=1?a=b=c"),
        ])
    func targetsAreByteExact(target: String, forwarded: String) async throws {
        let fixture = try await ProxyFixture.start(Self.echo)
        let response = try await fixture.send("GET", target)
        #expect(response.status == 200)
        #expect(fixture.origin.requests.first?.target == forwarded)
        try await fixture.stop()
    }

    @Test("end-to-end request headers are forwarded; hop-by-hop ones (RFC 9110 §7.6.1) are not")
    func requestHeaders() async throws {
        let fixture = try await ProxyFixture.start(Self.echo)
        _ = try await fixture.send(
            "GET", "/h",
            headers: [
                ("X-Custom", "one"), ("X-Custom", "two"), ("Accept", "text/plain;q=0.9, */*"), ("Cookie", "a=b"),
                ("Connection", "keep-alive, X-Hop"), ("X-Hop", "secret"), ("Keep-Alive", "timeout=5"),
                ("TE", "trailers"),
                ("Upgrade", "h2c"), ("Proxy-Authorization", "Basic Zm9v"), ("X-Odd", "  spaced\tvalue"),
            ])
        let request = try #require(fixture.origin.requests.first)
        let custom = request.headers.filter { $0.name.lowercased() == "x-custom" }.map(\.value)
        #expect(custom == ["one", "two"])
        #expect(request.header("Accept") == "text/plain;q=0.9, */*")
        #expect(request.header("Cookie") == "a=b")
        #expect(request.header("X-Odd") == "spaced\tvalue")
        for hop in ["X-Hop", "Keep-Alive", "TE", "Upgrade", "Proxy-Authorization"] {
            #expect(request.header(hop) == nil, "\(hop) was forwarded")
        }
        #expect(request.header("Connection")?.lowercased().contains("x-hop") != true)
        // Host is the upstream's (as nginx's default proxy_set_header Host $proxy_host); Via is added.
        #expect(request.header("Host") == "127.0.0.1:\(fixture.origin.port)")
        #expect(request.header("Via") == "1.1 urlcache")
        try await fixture.stop()
    }

    @Test("hop-by-hop response headers are dropped; unknown end-to-end ones are replayed on hits")
    func responseHeaders() async throws {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let date = formatter.string(from: Date())
        let fixture = try await ProxyFixture.start { _, _ in
            LoopbackOrigin.Response(
                status: 200,
                headers: [
                    ("Cache-Control", "max-age=600"), ("X-Unknown-Thing", "v1"), ("X-Unknown-Thing", "v2"),
                    ("Link", "</a>; rel=preload"), ("Connection", "X-Per-Hop"), ("X-Per-Hop", "1"),
                    ("Keep-Alive", "timeout=9"),
                    ("Date", date), ("ETag", "\"v1\""),
                ], body: "hello")
        }
        let miss = try await fixture.send("GET", "/r")
        let hit = try await fixture.send("GET", "/r")
        #expect(miss.cacheStatus == "MISS")
        #expect(hit.cacheStatus == "HIT")
        for response in [miss, hit] {
            #expect(response.values("X-Unknown-Thing") == ["v1", "v2"])
            // Names as the origin spelled them, on the hit too.
            #expect(response.headers.filter { $0.name == "X-Unknown-Thing" }.count == 2)
            #expect(response.headers.contains { $0.name == "ETag" })
            #expect(response.header("Link") == "</a>; rel=preload")
            #expect(response.header("ETag") == "\"v1\"")
            #expect(response.header("Date") == date)
            #expect(response.header("X-Per-Hop") == nil)
            #expect(response.header("Keep-Alive") == nil)
            #expect(response.text == "hello")
        }
        // RFC 9111 §5.1: a stored response carries Age.
        #expect(hit.header("Age").flatMap { Int($0) } != nil)
        #expect(fixture.origin.requestCount == 1)
        try await fixture.stop()
    }

    @Test("Age of a hit grows with the time the response spent in the cache (RFC 9111 §4.2.3)")
    func ageHeader() async throws {
        let fixture = try await ProxyFixture.start { _, _ in
            LoopbackOrigin.Response(
                status: 200, headers: [("Cache-Control", "max-age=3600"), ("Age", "100")], body: "aged")
        }
        _ = try await fixture.send("GET", "/age")
        fixture.clock.advance(seconds: 50)
        let hit = try await fixture.send("GET", "/age")
        #expect(hit.cacheStatus == "HIT")
        let age = try #require(hit.header("Age").flatMap { Int($0) })
        #expect(age >= 150 && age < 150 + 60)
        #expect(hit.values("Age").count == 1)
        try await fixture.stop()
    }

    @Test(
        "bodies come back byte for byte, stored compressible, incompressible or empty",
        arguments: [0, 1, 1024, 16 << 10, 300 << 10])
    func bodiesAreByteExact(size: Int) async throws {
        var generator = SystemRandomNumberGenerator()
        let random = (0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let text = Array(String(repeating: "compressible text ", count: size / 18 + 1).utf8.prefix(size))
        let bodies = Mutex([String: [UInt8]]())
        bodies.withLock { $0 = ["/random": random, "/text": text] }
        let fixture = try await ProxyFixture.start { request, _ in
            var response = LoopbackOrigin.Response(status: 200, headers: [("Cache-Control", "max-age=600")])
            response.body = bodies.withLock { $0[request.target] ?? [] }
            return response
        }
        for path in ["/random", "/text"] {
            let expected = bodies.withLock { $0[path]! }
            let miss = try await fixture.send("GET", path)
            let hit = try await fixture.send("GET", path)
            #expect(miss.body == expected)
            #expect(hit.body == expected)
            #expect(hit.cacheStatus == "HIT")
            #expect(hit.header("Content-Length") == String(size))
        }
        try await fixture.stop()
    }

    @Test("many concurrent keep-alive connections, several requests each")
    func concurrentConnections() async throws {
        let fixture = try await ProxyFixture.start { request, _ in
            LoopbackOrigin.Response(
                status: 200, headers: [("Cache-Control", "max-age=600")], body: "body of \(request.target)")
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for client in 0..<24 {
                group.addTask {
                    let connection = try await fixture.connect()
                    defer { connection.close() }
                    for round in 0..<5 {
                        let path = "/c\((client + round) % 6)"
                        let response = try await connection.exchange("GET", path)
                        #expect(response.status == 200)
                        #expect(response.text == "body of \(path)")
                    }
                }
            }
            try await group.waitForAll()
        }
        // Six URLs; concurrent misses of one URL collapse, so at most a few origin requests each.
        #expect(fixture.origin.requestCount >= 6)
        try await fixture.stop()
    }

    @Test("pipelined requests are answered in order on one connection")
    func pipelining() async throws {
        let fixture = try await ProxyFixture.start { request, _ in
            LoopbackOrigin.Response(status: 200, headers: [("Cache-Control", "max-age=600")], body: request.target)
        }
        let connection = try await fixture.connect()
        defer { connection.close() }
        try await connection.write(
            "GET /p1 HTTP/1.1\r\nHost: x\r\n\r\nGET /p2 HTTP/1.1\r\nHost: x\r\n\r\nGET /p1 HTTP/1.1\r\nHost: x\r\n\r\n")
        let first = try await connection.readResponse()
        let second = try await connection.readResponse()
        let third = try await connection.readResponse()
        #expect([first.text, second.text, third.text] == ["/p1", "/p2", "/p1"])
        try await fixture.stop()
    }

    @Test("Connection: close and HTTP/1.0 are honoured")
    func connectionClose() async throws {
        let fixture = try await ProxyFixture.start(Self.echo)
        let connection = try await fixture.connect()
        defer { connection.close() }
        let response = try await connection.exchange("GET", "/close", headers: [("Connection", "close")])
        #expect(response.status == 200)
        #expect(response.header("Connection")?.lowercased() == "close")
        #expect(try await connection.isClosedByPeer())

        let old = try await fixture.connect()
        defer { old.close() }
        try await old.write("GET /ten HTTP/1.0\r\nHost: x\r\n\r\n")
        let tenResponse = try await old.readResponse()
        #expect(tenResponse.status == 200)
        #expect(try await old.isClosedByPeer())
        try await fixture.stop()
    }

    @Test("Expect: 100-continue gets an interim 100 from the proxy; origin 1xx never reach the cache")
    func interimResponses() async throws {
        let fixture = try await ProxyFixture.start { request, _ in
            var response = LoopbackOrigin.Response(
                status: 200, headers: [("Cache-Control", "max-age=600")], body: "final")
            response.interimStatuses = [103]
            if request.method == "POST" { response.body = request.body }
            return response
        }
        let connection = try await fixture.connect()
        defer { connection.close() }
        try await connection.write(
            "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        // The proxy says 100 before the client sends the body (the client waits for it).
        #expect(try await connection.readStatus() == 100)
        try await connection.write("abcde")
        let posted = try await connection.readResponse(method: "POST")
        #expect(posted.status == 200)
        #expect(posted.text == "abcde")
        #expect(fixture.origin.requests.first?.header("Expect") == nil)
        // An origin that sends 103 before its 200: the final response is served and stored, the
        // 103 is not what a later hit replays.
        let miss = try await connection.exchange("GET", "/hints")
        let hit = try await connection.exchange("GET", "/hints")
        #expect(miss.status == 200 && miss.text == "final")
        #expect(hit.status == 200 && hit.text == "final" && hit.interim.isEmpty)
        #expect(hit.cacheStatus == "HIT")
        try await fixture.stop()
    }

    @Test("an origin that disconnects gets 502; the proxy keeps serving")
    func originDisconnects() async throws {
        let fixture = try await ProxyFixture.start { request, _ in
            var response = LoopbackOrigin.Response(status: 200, headers: [("Cache-Control", "max-age=600")], body: "ok")
            response.closesWithoutResponse = request.target == "/crash"
            return response
        }
        let connection = try await fixture.connect()
        defer { connection.close() }
        let crashed = try await connection.exchange("GET", "/crash")
        #expect(crashed.status == 502)
        let fine = try await connection.exchange("GET", "/fine")
        #expect(fine.status == 200 && fine.text == "ok")
        try await fixture.stop()
    }

    @Test("an origin that is down gets 502; one past the upstream timeout gets 504")
    func originDownOrTooSlow() async throws {
        let release = DispatchSemaphore(value: 0)
        let fixture = try await ProxyFixture.start(configure: { $0.upstreamTimeout = .seconds(1) }) { request, _ in
            if request.target == "/slow" { _ = release.wait(timeout: .now() + 30) }
            return LoopbackOrigin.Response(status: 200, headers: [("Cache-Control", "no-store")], body: "late")
        }
        let slow = try await fixture.send("GET", "/slow")
        #expect(slow.status == 504)
        release.signal()
        fixture.origin.stop()
        let down = try await fixture.send("GET", "/down")
        #expect(down.status == 502)
        try await fixture.server.shutdown()
    }

    @Test("a slow origin request does not wedge other connections")
    func slowOriginDoesNotWedge() async throws {
        let release = DispatchSemaphore(value: 0)
        let fixture = try await ProxyFixture.start { request, _ in
            if request.target == "/slow" { _ = release.wait(timeout: .now() + 120) }
            return LoopbackOrigin.Response(
                status: 200, headers: [("Cache-Control", "max-age=600")], body: request.target)
        }
        _ = try await fixture.send("GET", "/cached") // stored before the origin gets stuck
        let slow = Task { try await fixture.send("GET", "/slow") }
        // Wait until the origin holds the slow request.
        try #require(await eventually { fixture.origin.requests.contains { $0.target == "/slow" } })
        // Meanwhile other connections are answered from the cache, on every event loop.
        for _ in 0..<20 {
            let hit = try await fixture.send("GET", "/cached")
            #expect(hit.status == 200 && hit.cacheStatus == "HIT")
        }
        release.signal()
        let late = try await slow.value
        #expect(late.status == 200 && late.text == "/slow")
        try await fixture.stop()
    }

    @Test(
        "request headers that merely look odd do not disable caching",
        arguments: [
            [("Pragma", "foo")], [("Cache-Control", "x-unknown-extension")], [("Cache-Control", "community=\"UCI\"")],
            [("Cache-Control", "max-stale=abc")], [("X-Cache-Control", "no-store")], [("Pragma", "no-cache, x")],
        ] as [[(String, String)]])
    func oddRequestHeaders(headers: [(String, String)]) async throws {
        let fixture = try await ProxyFixture.start { _, _ in
            LoopbackOrigin.Response(status: 200, headers: [("Cache-Control", "max-age=600")], body: "cacheable")
        }
        _ = try await fixture.send("GET", "/odd") // stored by a plain request
        let withOdd = try await fixture.send("GET", "/odd", headers: headers)
        let pragmaNoCache = headers.contains { $0.0 == "Pragma" && $0.1.contains("no-cache") }
        if pragmaNoCache {
            // RFC 9111 §5.4: Pragma: no-cache without Cache-Control means no-cache (a revalidation).
            #expect(withOdd.cacheStatus != "HIT")
        } else {
            #expect(withOdd.cacheStatus == "HIT")
        }
        // And a response first fetched with the odd header is stored.
        _ = try await fixture.send("GET", "/odd-first", headers: headers)
        let later = try await fixture.send("GET", "/odd-first")
        #expect(later.cacheStatus == "HIT")
        try await fixture.stop()
    }

    @Test("forward proxy: absolute-form targets go to the origin they name; CONNECT is refused")
    func forwardMode() async throws {
        let fixture = try await ProxyFixture.start(forward: true) { request, _ in
            LoopbackOrigin.Response(
                status: 200, headers: [("Cache-Control", "max-age=600")], body: "via forward \(request.target)")
        }
        let url = "\(fixture.origin.url)/fwd?a=1"
        let miss = try await fixture.send("GET", url)
        let hit = try await fixture.send("GET", url)
        #expect(miss.text == "via forward /fwd?a=1")
        #expect(hit.cacheStatus == "HIT" && hit.text == miss.text)
        #expect(fixture.origin.requestCount == 1)
        let connect = try await fixture.send("CONNECT", "example.com:443")
        #expect(connect.status == 405)
        let originForm = try await fixture.send("GET", "/relative")
        #expect(originForm.status == 400)
        try await fixture.stop()
    }
}
