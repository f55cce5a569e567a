import CachingProxy
import Foundation
import LoopbackOrigin
import Testing
import TestProcess

/// `PURGE <target>` on the proxy, opt-in, from loopback or with a token; by
/// `Surrogate-Key`, and soft (`Soft-Purge: 1`).
@Suite(.blockingWaits, .timeLimit(.minutes(10)))
struct ProxyPurgeTests {
    static func cacheable(_ request: LoopbackOrigin.Request, _ count: Int) -> LoopbackOrigin.Response {
        if request.target.hasPrefix("/vary") {
            return LoopbackOrigin.Response(
                status: 200,
                headers: [
                    ("Cache-Control", "max-age=600"), ("Vary", "Accept-Language"),
                    ("Content-Language", request.header("Accept-Language") ?? "none"),
                ], body: "v\(count)")
        }
        return LoopbackOrigin.Response(status: 200, headers: [("Cache-Control", "max-age=600")], body: "b\(count)")
    }

    @Test("a loopback PURGE removes every variant of the URL (200, then 404), and the next GET goes to the origin")
    func loopbackPurge() async throws {
        let fixture = try await ProxyFixture.start(
            configure: {
                $0.purge = PurgeAccess()
                $0.metricsAddress = ("127.0.0.1", 0)
            }, Self.cacheable)
        #expect(try await fixture.send("GET", "/a").text == "b1")
        #expect(try await fixture.send("GET", "/a").text == "b1") // a hit
        for language in ["en", "de"] {
            _ = try await fixture.send("GET", "/vary", headers: [("Accept-Language", language)])
        }
        #expect(fixture.origin.requestCount == 3)

        let purged = try await fixture.send("PURGE", "/a")
        #expect(purged.status == 200 && purged.text == "{\"purged\":1}\n", "\(purged.status) \(purged.text)")
        #expect(try await fixture.send("PURGE", "/a").status == 404)
        #expect(try await fixture.send("GET", "/a").text == "b4") // from the origin again
        #expect(fixture.origin.requestCount == 4)

        let variants = try await fixture.send("PURGE", "/vary")
        #expect(variants.status == 200 && variants.text != "{\"purged\":1}\n", "both variants: \(variants.text)")
        for language in ["en", "de"] {
            let again = try await fixture.send("GET", "/vary", headers: [("Accept-Language", language)])
            #expect(again.header("Cache-Status")?.contains("fwd=") == true, "\(language): \(again.headers)")
        }
        #expect(fixture.origin.requestCount == 6)
        #expect(!fixture.origin.requests.contains { $0.method == "PURGE" }, "PURGE never reaches the origin")

        let metrics = try await RawConnection.open(port: try #require(fixture.server.metricsPort))
        defer { metrics.close() }
        let text = try await metrics.exchange("GET", "/metrics").text
        #expect(ProxyMetricsTests.sample(text, "urlcache_proxy_purges_total") == 3, "\(text)")
        try await fixture.stop()
    }

    static func tagged(_ request: LoopbackOrigin.Request, _ count: Int) -> LoopbackOrigin.Response {
        let tag = request.target.split(separator: "/").first.map(String.init) ?? "none"
        return LoopbackOrigin.Response(
            status: 200,
            headers: [
                ("Cache-Control", "max-age=600, stale-while-revalidate=60"), ("ETag", "\"e\(count)\""),
                ("Surrogate-Key", "\(tag) all"),
            ], body: "t\(count)")
    }

    @Test("PURGE with Surrogate-Key removes the entries of those tags only; with Soft-Purge: 1 it marks them stale")
    func tagPurge() async throws {
        let fixture = try await ProxyFixture.start(configure: { $0.purge = PurgeAccess() }, Self.tagged)
        for path in ["/red/1", "/red/2", "/blue/1"] { _ = try await fixture.send("GET", path) }
        let purged = try await fixture.send("PURGE", "/", headers: [("Surrogate-Key", "red")])
        #expect(purged.status == 200 && purged.text == "{\"purged\":2}\n", "\(purged.status) \(purged.text)")
        #expect(try await fixture.send("GET", "/blue/1").header("Cache-Status")?.contains("hit") == true)
        #expect(try await fixture.send("GET", "/red/1").text == "t4")
        #expect(fixture.origin.requestCount == 4)

        let soft = try await fixture.send("PURGE", "/", headers: [("Surrogate-Key", "blue red"), ("Soft-Purge", "1")])
        #expect(soft.status == 200 && soft.text == "{\"invalidated\":2}\n", "\(soft.status) \(soft.text)")
        // Stale now, served within stale-while-revalidate while the origin is asked again.
        let stale = try await fixture.send("GET", "/blue/1")
        #expect(stale.text == "t3", "\(stale.headers)")
        #expect(await eventually { fixture.origin.requestCount >= 5 })
        #expect(fixture.origin.requests.last?.header("If-None-Match") == "\"e3\"")
        #expect(try await fixture.send("PURGE", "/", headers: [("Surrogate-Key", "none")]).status == 404)
        try await fixture.stop()
    }

    @Test("with a token: PURGE without it or with another is 403 and removes nothing; with it, 200")
    func tokenPurge() async throws {
        let fixture = try await ProxyFixture.start(
            configure: { $0.purge = PurgeAccess(loopback: false, token: "s3cret") }, Self.cacheable)
        _ = try await fixture.send("GET", "/a")
        #expect(try await fixture.send("PURGE", "/a").status == 403)
        #expect(try await fixture.send("PURGE", "/a", headers: [("Authorization", "Bearer s3cre")]).status == 403)
        #expect(try await fixture.send("PURGE", "/a", headers: [("Authorization", "Basic s3cret")]).status == 403)
        #expect(try await fixture.send("GET", "/a").text == "b1", "still stored")
        #expect(try await fixture.send("PURGE", "/a", headers: [("Authorization", "Bearer s3cret")]).status == 200)
        #expect(try await fixture.send("GET", "/a").text == "b2")
        try await fixture.stop()
    }

    @Test("without purge access configured, PURGE goes to the origin like any other method")
    func purgeForwardedByDefault() async throws {
        let fixture = try await ProxyFixture.start(Self.cacheable)
        _ = try await fixture.send("GET", "/a")
        _ = try await fixture.send("PURGE", "/a")
        #expect(fixture.origin.requests.contains { $0.method == "PURGE" })
        try await fixture.stop()
    }
}
