import CachingProxy
import Foundation
import LoopbackOrigin
import Testing
import TestProcess

/// The proxy's `Cache-Status` field (RFC 9211), sent by default, with the
/// nginx-style `X-Cache-Status` only when asked for.
@Suite(.blockingWaits, .timeLimit(.minutes(10)))
struct ProxyCacheStatusTests {
    /// The `ttl` parameter of a member (the test clock follows real time: ages move by a second now and then).
    static func ttl(_ value: String?) -> Int? {
        guard let value, let range = value.range(of: "ttl=") else { return nil }
        return Int(value[range.upperBound...].prefix { $0 == "-" || $0.isNumber })
    }

    @Test("defaults: Cache-Status named urlcache, no X-Cache-Status")
    func defaults() {
        let configuration = ProxyConfiguration(mode: .forward)
        #expect(configuration.cacheStatusName == "urlcache" && configuration.cacheStatusHeader == nil)
    }

    @Test("a stored miss, a hit with its ttl, a revalidation with the origin's 304; X-Cache-Status only when asked for")
    func missHitRevalidated() async throws {
        let fixture = try await ProxyFixture.start(configure: { $0.cacheStatusHeader = nil }) { request, _ in
            if request.header("If-None-Match") == "\"v1\"" {
                return LoopbackOrigin.Response(status: 304, headers: [("ETag", "\"v1\"")])
            }
            return LoopbackOrigin.Response(
                status: 200, headers: [("Cache-Control", "max-age=600"), ("ETag", "\"v1\"")], body: "body")
        }
        let miss = try await fixture.send("GET", "/r")
        #expect(
            miss.header("Cache-Status")?.hasPrefix("urlcache;fwd=uri-miss;fwd-status=200;ttl=") == true,
            "\(miss.headers)")
        // 600 s less the miss's own duration: seconds, and more when the whole suite runs in
        // parallel on two cores.
        let missTTL = Self.ttl(miss.header("Cache-Status")) ?? 0
        #expect(miss.header("Cache-Status")?.hasSuffix(";stored") == true && (540...600).contains(missTTL))
        #expect(miss.header("X-Cache-Status") == nil)
        fixture.clock.advance(seconds: 100)
        let hit = try await fixture.send("GET", "/r") // answered on the event loop
        #expect(hit.header("Cache-Status")?.hasPrefix("urlcache;hit;ttl=") == true, "\(hit.headers)")
        // 100 s of the test clock less, and the real time the hit itself took.
        #expect(((missTTL - 160)...(missTTL - 100)).contains(Self.ttl(hit.header("Cache-Status")) ?? 0))
        fixture.clock.advance(seconds: 600)
        let revalidated = try await fixture.send("GET", "/r")
        #expect(revalidated.text == "body")
        #expect(
            revalidated.header("Cache-Status")?.hasPrefix("urlcache;fwd=stale;fwd-status=304;ttl=") == true,
            "\(revalidated.headers)")
        #expect(fixture.origin.requestCount == 2)
        try await fixture.stop()
    }

    @Test("a response not stored says why (detail) and is counted; members of caches nearer the origin are kept")
    func notStoredAndUpstreamMembers() async throws {
        let fixture = try await ProxyFixture.start { _, _ in
            LoopbackOrigin.Response(
                status: 200, headers: [("Cache-Control", "private, max-age=60"), ("Cache-Status", "OriginCache; hit")],
                body: "mine")
        }
        let answer = try await fixture.send("GET", "/private")
        #expect(
            answer.values("Cache-Status") == [
                "OriginCache; hit", "urlcache;fwd=uri-miss;fwd-status=200;detail=private",
            ])
        #expect(fixture.server.client.cache.statistics.notStorable == ["private": 1])
        try await fixture.stop()
    }

    @Test("requests that waited on another's fetch say collapsed (RFC 9211 §2.6)")
    func collapsed() async throws {
        let gate = OriginGate()
        let fixture = try await ProxyFixture.start { _, _ in
            gate.pass() // until the followers wait on this request
            return LoopbackOrigin.Response(status: 200, headers: [("Cache-Control", "max-age=600")], body: "once")
        }
        let leader = Task { try await fixture.send("GET", "/c") }
        try #require(await eventually { fixture.origin.requestCount > 0 }, "the leader reached the origin")
        let followers = (0..<3).map { _ in Task { try await fixture.send("GET", "/c") } }
        let client = fixture.server.client
        #expect(try await gate.open { client.requestsWaitingOnLeaders == 3 })
        let led = try await leader.value
        #expect(led.header("Cache-Status")?.hasSuffix(";stored") == true, "\(led.headers)")
        for follower in followers {
            let answer = try await follower.value
            #expect(answer.text == "once")
            #expect(answer.header("Cache-Status")?.hasPrefix("urlcache;fwd=uri-miss;ttl=") == true, "\(answer.headers)")
            #expect(answer.header("Cache-Status")?.hasSuffix(";collapsed") == true, "\(answer.headers)")
        }
        #expect(fixture.origin.requestCount == 1)
        try await fixture.stop()
    }

    @Test("the cache's name is configurable (a String when it is not a Token), or Cache-Status off")
    func cacheName() async throws {
        let named = try await ProxyFixture.start(
            configure: { $0.cacheStatusName = "edge cache" },
            ProxyCachingTests.fixed([("Cache-Control", "max-age=600")]))
        _ = try await named.send("GET", "/n")
        let hit = try await named.send("GET", "/n")
        #expect(hit.header("Cache-Status")?.hasPrefix("\"edge cache\";hit;ttl=") == true, "\(hit.headers)")
        try await named.stop()
        let off = try await ProxyFixture.start(
            configure: { $0.cacheStatusName = nil }, ProxyCachingTests.fixed([("Cache-Control", "max-age=600")]))
        let quiet = try await off.send("GET", "/n")
        #expect(quiet.header("Cache-Status") == nil && quiet.cacheStatus == "MISS")
        try await off.stop()
    }
}
