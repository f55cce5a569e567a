import AsyncHTTPClient
import CachingProxy
import Foundation
import LoopbackOrigin
import NIOCore
import SharedURLCache
import SharedURLCacheAsyncHTTPClient
import Synchronization
import Testing
import TestProcess

/// Shared-cache semantics through the proxy, the cache status
/// header, and entries shared with Swift services on the library.
@Suite(.blockingWaits, .timeLimit(.minutes(10)))
struct ProxyCachingTests {
    static func fixed(_ headers: [(String, String)], body: String = "body")
        -> @Sendable (LoopbackOrigin.Request, Int) -> LoopbackOrigin.Response
    {
        { _, _ in LoopbackOrigin.Response(status: 200, headers: headers, body: body) }
    }

    /// Two GETs; returns the second response and the origin's request count.
    func twice(_ headers: [(String, String)], requestHeaders: [(String, String)] = []) async throws -> (
        RawResponse, Int
    ) {
        let fixture = try await ProxyFixture.start(Self.fixed(headers))
        _ = try await fixture.send("GET", "/twice", headers: requestHeaders)
        let second = try await fixture.send("GET", "/twice", headers: requestHeaders)
        let count = fixture.origin.requestCount
        try await fixture.stop()
        return (second, count)
    }

    @Test("shared cache: s-maxage overrides max-age (RFC 9111 §5.2.2.10)")
    func sharedMaxAge() async throws {
        let (reused, reusedCount) = try await twice([("Cache-Control", "max-age=0, s-maxage=600")])
        #expect(reused.cacheStatus == "HIT" && reusedCount == 1)
        let (stale, _) = try await twice([("Cache-Control", "max-age=600, s-maxage=0"), ("ETag", "\"e\"")])
        #expect(stale.cacheStatus != "HIT")
    }

    @Test("shared cache: private responses are not stored (RFC 9111 §5.2.2.7)")
    func privateNotStored() async throws {
        let (second, count) = try await twice([("Cache-Control", "private, max-age=600")])
        #expect(second.cacheStatus == "MISS" && count == 2)
    }

    @Test(
        "shared cache: answers to Authorization are stored only when public, s-maxage or must-revalidate (RFC 9111 §3.5)"
    )
    func authorization() async throws {
        let auth = [("Authorization", "Bearer secret")]
        let (plain, plainCount) = try await twice([("Cache-Control", "max-age=600")], requestHeaders: auth)
        #expect(plain.cacheStatus == "MISS" && plainCount == 2)
        let (publicOne, publicCount) = try await twice([("Cache-Control", "public, max-age=600")], requestHeaders: auth)
        #expect(publicOne.cacheStatus == "HIT" && publicCount == 1)
        let (shared, sharedCount) = try await twice([("Cache-Control", "s-maxage=600")], requestHeaders: auth)
        #expect(shared.cacheStatus == "HIT" && sharedCount == 1)
    }

    @Test("CDN-Cache-Control replaces Cache-Control and Expires for the proxy (RFC 9213), and is forwarded")
    func cdnCacheControl() async throws {
        let (refused, refusedCount) = try await twice([
            ("Cache-Control", "max-age=600"), ("CDN-Cache-Control", "no-store"),
        ])
        #expect(refused.cacheStatus == "MISS" && refusedCount == 2)
        #expect(refused.header("CDN-Cache-Control") == "no-store")
        let (stored, storedCount) = try await twice([
            ("Cache-Control", "no-store"), ("CDN-Cache-Control", "max-age=600"),
        ])
        #expect(stored.cacheStatus == "HIT" && storedCount == 1)
        let (invalid, invalidCount) = try await twice([
            ("Cache-Control", "no-store"), ("CDN-Cache-Control", "max-age=\"600\""),
        ])
        // an invalid field is ignored: Cache-Control applies
        #expect(invalid.cacheStatus == "MISS" && invalidCount == 2)
    }

    @Test("shared cache: responses with Set-Cookie are not stored")
    func setCookie() async throws {
        let (second, count) = try await twice([("Cache-Control", "max-age=600"), ("Set-Cookie", "session=1")])
        #expect(second.cacheStatus == "MISS" && count == 2)
    }

    @Test(
        "a response with neither freshness nor a validator is never reused; Last-Modified alone allows a heuristic (RFC 9111 §4.2.2)"
    )
    func neitherFreshnessNorValidator() async throws {
        let (bare, bareCount) = try await twice([("Content-Type", "text/plain")])
        #expect(bare.cacheStatus == "MISS" && bareCount == 2)
        let (heuristic, heuristicCount) = try await twice([("Last-Modified", "Mon, 01 Jan 2024 00:00:00 GMT")])
        #expect(heuristic.cacheStatus == "HIT" && heuristicCount == 1)
    }

    @Test(
        "unsafe methods invalidate the target URI, Location and Content-Location (RFC 9111 §4.4)",
        arguments: ["POST", "PUT", "DELETE", "PATCH", "PURGE"])
    func invalidation(method: String) async throws {
        let fixture = try await ProxyFixture.start { request, _ in
            if request.method != "GET" {
                return LoopbackOrigin.Response(
                    status: 200, headers: [("Location", "/other"), ("Content-Location", "/third")])
            }
            return LoopbackOrigin.Response(
                status: 200, headers: [("Cache-Control", "max-age=600")], body: request.target)
        }
        for path in ["/item", "/other", "/third", "/unrelated"] { _ = try await fixture.send("GET", path) }
        for path in ["/item", "/other", "/third", "/unrelated"] {
            #expect(try await fixture.send("GET", path).cacheStatus == "HIT")
        }
        let unsafe = try await fixture.send(method, "/item", body: Array("change".utf8))
        #expect(unsafe.status == 200 && unsafe.cacheStatus == "BYPASS")
        for path in ["/item", "/other", "/third"] {
            #expect(try await fixture.send("GET", path).cacheStatus == "MISS", "\(path)")
        }
        #expect(try await fixture.send("GET", "/unrelated").cacheStatus == "HIT")
        try await fixture.stop()
    }

    @Test("an error answer to an unsafe method invalidates nothing")
    func failedUnsafeMethod() async throws {
        let fixture = try await ProxyFixture.start { request, _ in
            if request.method == "POST" { return LoopbackOrigin.Response(status: 500) }
            return LoopbackOrigin.Response(status: 200, headers: [("Cache-Control", "max-age=600")], body: "kept")
        }
        _ = try await fixture.send("GET", "/kept")
        _ = try await fixture.send("POST", "/kept", body: [])
        #expect(try await fixture.send("GET", "/kept").cacheStatus == "HIT")
        try await fixture.stop()
    }

    @Test("Vary keeps one variant per selecting header value (RFC 9111 §4.1)")
    func vary() async throws {
        let fixture = try await ProxyFixture.start { request, _ in
            LoopbackOrigin.Response(
                status: 200, headers: [("Cache-Control", "max-age=600"), ("Vary", "Accept-Language")],
                body: "lang=\(request.header("Accept-Language") ?? "none")")
        }
        func get(_ language: String?) async throws -> RawResponse {
            try await fixture.send("GET", "/v", headers: language.map { [("Accept-Language", $0)] } ?? [])
        }
        let en1 = try await get("en")
        let fr1 = try await get("fr")
        let en2 = try await get("en")
        let fr2 = try await get("fr")
        let none = try await get(nil)
        #expect(
            [en1.cacheStatus, fr1.cacheStatus, en2.cacheStatus, fr2.cacheStatus] == ["MISS", "MISS", "HIT", "HIT"])
        #expect(en2.text == "lang=en" && fr2.text == "lang=fr" && none.text == "lang=none")
        #expect(fixture.origin.requestCount == 3)
        try await fixture.stop()
    }

    @Test(
        "a stale response is revalidated with If-None-Match; a 304 refreshes its headers, never its body (RFC 9111 §4.3)"
    )
    func revalidationWithETag() async throws {
        let fixture = try await ProxyFixture.start { request, index in
            if request.header("If-None-Match") == "\"v1\"" {
                return LoopbackOrigin.Response(
                    status: 304,
                    headers: [("ETag", "\"v1\""), ("Cache-Control", "max-age=60"), ("X-Refreshed", "\(index)")])
            }
            return LoopbackOrigin.Response(
                status: 200, headers: [("Cache-Control", "max-age=60"), ("ETag", "\"v1\""), ("X-Refreshed", "no")],
                body: "original body")
        }
        _ = try await fixture.send("GET", "/etag")
        fixture.clock.advance(seconds: 120)
        let revalidated = try await fixture.send("GET", "/etag")
        #expect(revalidated.status == 200)
        #expect(revalidated.cacheStatus == "REVALIDATED")
        #expect(revalidated.text == "original body")
        #expect(revalidated.header("X-Refreshed") == "2")
        #expect(fixture.origin.requests.last?.header("If-None-Match") == "\"v1\"")
        let hit = try await fixture.send("GET", "/etag")
        #expect(hit.cacheStatus == "HIT" && hit.header("X-Refreshed") == "2" && hit.text == "original body")
        try await fixture.stop()
    }

    @Test("Last-Modified validators are sent as If-Modified-Since; no-cache responses are always revalidated")
    func revalidationWithLastModified() async throws {
        let lastModified = "Mon, 01 Jan 2024 00:00:00 GMT"
        let fixture = try await ProxyFixture.start { request, _ in
            if request.header("If-Modified-Since") == lastModified {
                // RFC 9111 §4.3.4: the 304 names the validator that selects the stored response.
                return LoopbackOrigin.Response(status: 304, headers: [("Last-Modified", lastModified)])
            }
            return LoopbackOrigin.Response(
                status: 200, headers: [("Cache-Control", "no-cache"), ("Last-Modified", lastModified)],
                body: "lm body")
        }
        _ = try await fixture.send("GET", "/lm")
        let second = try await fixture.send("GET", "/lm")
        #expect(second.cacheStatus == "REVALIDATED" && second.text == "lm body")
        #expect(fixture.origin.requests.last?.header("If-Modified-Since") == lastModified)
        try await fixture.stop()
    }

    @Test("stale-while-revalidate: the stale response is served at once and refreshed in the background (RFC 5861 §3)")
    func staleWhileRevalidate() async throws {
        let fixture = try await ProxyFixture.start { _, index in
            LoopbackOrigin.Response(
                status: 200,
                headers: [("Cache-Control", "max-age=10, stale-while-revalidate=600"), ("ETag", "\"\(index)\"")],
                body: "version \(index)")
        }
        _ = try await fixture.send("GET", "/swr")
        fixture.clock.advance(seconds: 60)
        let stale = try await fixture.send("GET", "/swr")
        #expect(stale.cacheStatus == "UPDATING")
        #expect(stale.text == "version 1")
        try #require(await eventually { fixture.origin.requestCount >= 2 }, "the background revalidation ran")
        // The background revalidation stores version 2; wait until a request sees it.
        var fresh = try await fixture.send("GET", "/swr")
        try #require(
            try await eventually {
                if fresh.text != "version 2" { fresh = try await fixture.send("GET", "/swr") }
                return fresh.text == "version 2"
            })
        #expect(fresh.cacheStatus == "HIT")
        try await fixture.stop()
    }

    @Test("stale-if-error: a stale response is served when the origin fails (RFC 5861 §4); must-revalidate gets 504")
    func staleIfError() async throws {
        let fixture = try await ProxyFixture.start { request, index in
            if index > 2 { return LoopbackOrigin.Response(status: 503, body: "down") }
            let control = request.target == "/sie" ? "max-age=10, stale-if-error=600" : "max-age=10, must-revalidate"
            return LoopbackOrigin.Response(
                status: 200, headers: [("Cache-Control", control)], body: "good \(request.target)")
        }
        _ = try await fixture.send("GET", "/sie")
        _ = try await fixture.send("GET", "/mr")
        fixture.clock.advance(seconds: 60)
        let stale = try await fixture.send("GET", "/sie")
        #expect(stale.status == 200 && stale.cacheStatus == "STALE" && stale.text == "good /sie")
        let mustRevalidate = try await fixture.send("GET", "/mr")
        #expect(mustRevalidate.status == 503 || mustRevalidate.status == 504)
        // The origin gone entirely: stale-if-error still serves.
        fixture.origin.stop()
        let offline = try await fixture.send("GET", "/sie")
        #expect(offline.status == 200 && offline.text == "good /sie")
        try await fixture.server.shutdown()
    }

    @Test("HEAD is answered from a stored GET, without a body")
    func headFromGet() async throws {
        let fixture = try await ProxyFixture.start(Self.fixed([("Cache-Control", "max-age=600")], body: "twelve bytes"))
        _ = try await fixture.send("GET", "/head")
        let connection = try await fixture.connect()
        defer { connection.close() }
        let head = try await connection.exchange("HEAD", "/head")
        #expect(head.cacheStatus == "HIT" && head.body.isEmpty && head.header("Content-Length") == "12")
        let after = try await connection.exchange("GET", "/head") // the connection is still in sync
        #expect(after.text == "twelve bytes")
        try await fixture.stop()
    }

    @Test("a client's If-None-Match / If-Modified-Since on a fresh hit gets 304 from the cache (RFC 9111 §4.3.2)")
    func clientConditionalOnFreshHit() async throws {
        let lastModified = "Mon, 01 Jan 2024 00:00:00 GMT"
        let fixture = try await ProxyFixture.start(
            Self.fixed(
                [("Cache-Control", "max-age=600"), ("ETag", "\"v1\""), ("Last-Modified", lastModified)],
                body: "twelve bytes"))
        _ = try await fixture.send("GET", "/conditional")
        let connection = try await fixture.connect()
        defer { connection.close() }
        let byTag = try await connection.exchange("GET", "/conditional", headers: [("If-None-Match", "W/\"v1\"")])
        #expect(byTag.status == 304 && byTag.cacheStatus == "HIT")
        #expect(
            byTag.header("ETag") == "\"v1\"" && byTag.header("Cache-Control") == "max-age=600"
                && byTag.header("Age") != nil)
        let byDate = try await connection.exchange(
            "GET", "/conditional", headers: [("If-Modified-Since", lastModified)])
        #expect(byDate.status == 304 && byDate.header("Last-Modified") == lastModified)
        let changed = try await connection.exchange("GET", "/conditional", headers: [("If-None-Match", "\"v2\"")])
        #expect(changed.status == 200 && changed.text == "twelve bytes") // the connection is still in sync
        #expect(fixture.origin.requestCount == 1)
        try await fixture.stop()
    }

    @Test("the cache status header's name is configurable, or off")
    func cacheStatusHeaderName() async throws {
        let renamed = try await ProxyFixture.start(
            configure: { $0.cacheStatusHeader = "X-Proxy-Cache" },
            Self.fixed([("Cache-Control", "max-age=600")]))
        _ = try await renamed.send("GET", "/n")
        let hit = try await renamed.send("GET", "/n")
        #expect(hit.header("X-Proxy-Cache") == "HIT" && hit.header("X-Cache-Status") == nil)
        try await renamed.stop()
        let off = try await ProxyFixture.start(
            configure: { $0.cacheStatusHeader = nil }, Self.fixed([("Cache-Control", "max-age=600")]))
        let quiet = try await off.send("GET", "/n")
        #expect(quiet.header("X-Cache-Status") == nil)
        try await off.stop()
    }

    @Test("the proxy and a Swift service on CachingHTTPClient share entries in the default partition")
    func sharedWithLibrary() async throws {
        let fixture = try await ProxyFixture.start { request, _ in
            LoopbackOrigin.Response(
                status: 200, headers: [("Cache-Control", "max-age=600")], body: "shared \(request.target)")
        }
        // Given: a Swift service with its own SharedCache on the same directory, shared mode, default partition.
        let cache = try SharedCache(
            configuration: SharedCacheConfiguration(
                memoryCapacity: 0, diskCapacity: 64 << 20, directory: URL(fileURLWithPath: fixture.directory.root)))
        let service = CachingHTTPClient(cache: cache)
        // When the proxy stores, the service hits…
        _ = try await fixture.send("GET", "/from-proxy?x=1")
        let served = try await service.execute(
            HTTPClientRequest(url: fixture.origin.url + "/from-proxy?x=1"), timeout: .seconds(30))
        #expect(served.cacheStatus == .hit)
        #expect(String(buffer: try await served.body.collect(upTo: 1 << 20)) == "shared /from-proxy?x=1")
        // …and when the service stores, the proxy hits.
        let stored = try await service.execute(
            HTTPClientRequest(url: fixture.origin.url + "/from-service"), timeout: .seconds(30))
        _ = try await stored.body.collect(upTo: 1 << 20)
        let viaProxy = try await fixture.send("GET", "/from-service")
        #expect(viaProxy.cacheStatus == "HIT" && viaProxy.text == "shared /from-service")
        #expect(fixture.origin.requestCount == 2)
        try await fixture.stop()
    }
}
