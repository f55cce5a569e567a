@testable import CachingProxy
import HTTPTypes
import LoopbackOrigin
import NIOHTTP1
import Testing

/// The request fields the proxy sends upstream and looks up with (``ProxyHeaders``): hop-by-hop
/// fields (RFC 9110 §7.6.1) and those the proxy sets itself never go, whatever their case; every
/// other field goes as the client spelled it, in order, with `Via` last. Both forms (NIO's, for a
/// request to the origin, and HTTP types', for a hit's lookup) come from one filter, and are
/// checked alike here.
@Suite struct ProxyHeadersTests {
    /// The fields of both forms as (name as spelled, value), which must agree.
    /// (The lookup's form leaves out the `X-Forwarded-*` fields the proxy writes.)
    private func forwarded(
        _ fields: [(String, String)], rules: UpstreamFieldRules = .standard, peer: String? = nil
    ) -> [(name: String, value: String)] {
        let headers = HTTPHeaders(fields)
        let nio = ProxyHeaders.upstreamRequest(headers, rules: rules, peer: peer).map {
            (name: $0.name, value: $0.value)
        }
        let types = ProxyHeaders.upstreamRequestFields(headers, rules: rules).map {
            (name: $0.name.rawName, value: $0.value)
        }
        let compared = nio.filter { !["x-forwarded-for", "x-forwarded-proto"].contains($0.name.lowercased()) }
        #expect(compared.map(\.name) == types.map(\.name) && compared.map(\.value) == types.map(\.value))
        return nio
    }

    @Test("without Connection: the fixed hop-by-hop table and Host, Content-Length, Expect go, in any case")
    func noConnectionField() {
        let result = forwarded([
            ("HOST", "client.test"), ("Accept", "*/*"), ("keep-ALIVE", "timeout=5"), ("te", "trailers"),
            ("Transfer-Encoding", "chunked"), ("UPGRADE", "h2c"), ("Proxy-Authorization", "Basic Zm9v"),
            ("proxy-connection", "keep-alive"), ("Trailer", "X-T"), ("Proxy-Authenticate", "Basic"),
            ("content-length", "3"), ("EXPECT", "100-continue"), ("X-Custom", "one"), ("x-CUSTOM", "two"),
        ])
        #expect(result.map(\.name) == ["Accept", "X-Custom", "x-CUSTOM", "X-Forwarded-Proto", "Via"])
        #expect(result.map(\.value) == ["*/*", "one", "two", "http", ProxyHeaders.via])
    }

    @Test("the names Connection lists go too, matched without regard to case, over several lines")
    func namesListedInConnection() {
        let result = forwarded([
            ("X-Hop", "secret"), ("connection", "Keep-Alive, x-HOP"), ("Accept", "text/plain"),
            ("X-Other-Hop", "1"), ("CONNECTION", " X-Other-hop ,"), ("X-Kept", "k"),
        ])
        #expect(result.map(\.name) == ["Accept", "X-Kept", "X-Forwarded-Proto", "Via"])
    }

    @Test("an HTTP/1.0 client's Connection: keep-alive and a Connection: close are not forwarded")
    func connectionOptions() {
        #expect(
            forwarded([("Connection", "keep-alive"), ("Accept", "*/*")]).map(\.name) == [
                "Accept", "X-Forwarded-Proto", "Via",
            ])
        #expect(
            forwarded([("Connection", "close"), ("Cookie", "a=b")]).map(\.name) == [
                "Cookie", "X-Forwarded-Proto", "Via",
            ])
    }

    @Test("a request with nothing but hop-by-hop fields goes with the proxy's own fields alone")
    func onlyHopByHop() {
        #expect(forwarded([("Host", "x"), ("Connection", "close")]).map(\.name) == ["X-Forwarded-Proto", "Via"])
    }

    @Test(
        "X-Forwarded-Host, X-Original-URL, X-Rewrite-URL and the method-override family never reach the origin, in any case"
    )
    func rewritingFieldsDropped() {
        let result = forwarded([
            ("X-Forwarded-Host", "evil.test"), ("x-original-url", "/admin"), ("X-Rewrite-URL", "/admin"),
            ("X-HTTP-Method-Override", "DELETE"), ("X-HTTP-Method", "PUT"), ("X-Method-Override", "PATCH"),
            ("Accept", "*/*"),
        ])
        #expect(result.map(\.name) == ["Accept", "X-Forwarded-Proto", "Via"])
    }

    @Test("--pass-header lets one of them through, matched without regard to case; the others still go")
    func passedField() {
        let result = forwarded(
            [("X-Original-URL", "/legacy"), ("X-Rewrite-URL", "/admin")],
            rules: UpstreamFieldRules(passing: ["x-original-url"]))
        #expect(result.map(\.name) == ["X-Original-URL", "X-Forwarded-Proto", "Via"])
        #expect(result.first?.value == "/legacy")
    }

    @Test("X-Forwarded-For gets the peer appended to the client's list; X-Forwarded-Proto is the proxy's")
    func forwardedFields() {
        let result = forwarded(
            [("X-Forwarded-For", "203.0.113.7"), ("X-Forwarded-Proto", "https"), ("x-forwarded-for", "10.0.0.1")],
            peer: "127.0.0.1")
        #expect(result.map(\.name) == ["X-Forwarded-For", "X-Forwarded-Proto", "Via"])
        #expect(result.map(\.value) == ["203.0.113.7, 10.0.0.1, 127.0.0.1", "http", ProxyHeaders.via])
        #expect(forwarded([], peer: "::1").first?.value == "::1")
    }
}

/// The same filter on a hit answered on the event loop: a field named in `Connection` is not part
/// of the lookup, so a response that varies on it is found again (the miss that stored it did not
/// forward the field either).
@Suite(.blockingWaits, .timeLimit(.minutes(10)))
struct ProxyHitRequestFieldsTests {
    @Test("a memory hit's lookup leaves out the fields Connection names, in any case")
    func hopByHopFieldLeftOutOfTheLookup() async throws {
        let fixture = try await ProxyFixture.start { request, _ in
            // The origin would answer a request with X-Hop differently: it must never see one.
            let hop = request.header("X-Hop") ?? "none"
            return LoopbackOrigin.Response(
                status: 200, headers: [("Cache-Control", "max-age=600"), ("Vary", "X-Hop")], body: "hop=\(hop)")
        }
        let connection = try await fixture.connect()
        defer { connection.close() }
        let miss = try await connection.exchange("GET", "/v", headers: [("Connection", "X-Hop"), ("X-Hop", "a")])
        #expect(miss.cacheStatus == "MISS" && String(decoding: miss.body, as: UTF8.self) == "hop=none")
        let listing: [[(String, String)]] = [
            [("connection", "x-hop"), ("X-HOP", "b")], [("X-Hop", "c"), ("Connection", "keep-alive, X-hop")],
        ]
        for headers in listing {
            let hit = try await connection.exchange("GET", "/v", headers: headers)
            #expect(hit.cacheStatus == "HIT" && String(decoding: hit.body, as: UTF8.self) == "hop=none")
        }
        // Sent without Connection, the field is end-to-end: another variant.
        let other = try await connection.exchange("GET", "/v", headers: [("X-Hop", "d")])
        #expect(other.cacheStatus == "MISS" && String(decoding: other.body, as: UTF8.self) == "hop=d")
        #expect(fixture.origin.requestCount == 2)
        try await fixture.stop()
    }
}
