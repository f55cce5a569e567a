import Foundation
import HTTPCacheSemantics
import HTTPTypes
import LoopbackOrigin
@testable import SharedURLCache
import Testing
import TestProcess

/// The flow's answers carry their `Cache-Status` member (RFC 9211): what the cache did, the
/// origin's status, the remaining freshness, whether the response is stored or why not. The
/// harness's clock stands still, so every `ttl` is exact.
@Suite(.blockingWaits, .timeLimit(.minutes(5)))
struct HTTPCachingFlowCacheStatusTests {
    @Test("a stored miss, then a hit with its remaining freshness")
    func missThenHit() async throws {
        let h = try FlowHarness { _, n in .init(headers: [("Cache-Control", "max-age=60")], body: "n=\(n)") }
        let miss = try await h.send()
        #expect(miss.cacheStatusMember.fieldValue() == "urlcache;fwd=uri-miss;fwd-status=200;ttl=60;stored")
        h.advance(10)
        let hit = try await h.send()
        #expect(hit.cacheStatusMember.fieldValue() == "urlcache;hit;ttl=50")
        h.advance(90)
        let staleHit = try await h.send(headers: ["Cache-Control": "max-stale=600"])
        #expect(staleHit.cacheStatus == .stale && staleHit.cacheStatusMember.fieldValue() == "urlcache;hit;ttl=-40")
        let reload = try await h.send(headers: ["Cache-Control": "no-cache"])
        #expect(reload.cacheStatusMember.fieldValue(cacheName: "c") == "c;fwd=request;fwd-status=200;ttl=60;stored")
    }

    @Test("a revalidation: fwd=stale with the origin's 304; stale-if-error after a 503")
    func revalidation() async throws {
        let h = try FlowHarness { request, n in
            if request.target == "/down" && request.header("If-None-Match") != nil {
                return .init(status: 503, body: "down")
            }
            if request.header("If-None-Match") == "\"v1\"" {
                return .init(status: 304, headers: [("Cache-Control", "max-age=30")])
            }
            return .init(
                headers: [("ETag", "\"v1\""), ("Cache-Control", "max-age=10, stale-if-error=600")], body: "n=\(n)")
        }
        _ = try await h.send()
        h.advance(20)
        let revalidated = try await h.send()
        #expect(revalidated.cacheStatus == .revalidated)
        #expect(revalidated.cacheStatusMember.fieldValue() == "urlcache;fwd=stale;fwd-status=304;ttl=30")
        _ = try await h.send("/down")
        h.advance(60)
        let stale = try await h.send("/down")
        #expect(
            stale.cacheStatus == .stale
                && stale.cacheStatusMember.fieldValue() == "urlcache;fwd=stale;fwd-status=503;ttl=-50")
    }

    @Test("a response RFC 9111 §3 forbids storing says why (detail) and is counted by reason")
    func notStored() async throws {
        let h = try FlowHarness { request, _ in
            .init(
                headers: [("Cache-Control", request.target == "/private" ? "private, max-age=60" : "no-store")],
                body: "x")
        }
        let noStore = try await h.send("/no-store")
        #expect(
            noStore.cacheStatusMember.fieldValue() == "urlcache;fwd=uri-miss;fwd-status=200;detail=response-no-store")
        _ = try await h.send("/no-store")
        let privateAnswer = try await h.send("/private")
        #expect(privateAnswer.cacheStatusMember.detail == "private" && !privateAnswer.cacheStatusMember.stored)
        #expect(h.cache.statistics.notStorable == ["response-no-store": 2, "private": 1])
    }

    @Test("an unsafe method goes forward for its method (RFC 9111 §4.4)")
    func unsafeMethod() async throws {
        let h = try FlowHarness { _, _ in .init(status: 201, body: "made") }
        let post = try await h.send(method: .post, body: Data("x".utf8))
        #expect(
            post.cacheStatus == .bypass && post.cacheStatusMember.fieldValue() == "urlcache;fwd=method;fwd-status=201")
    }

    @Test("CacheStatus alone maps onto the same vocabulary")
    func statusMapping() {
        let expected: [CacheStatus: String] = [
            .hit: "urlcache;hit", .stale: "urlcache;hit", .updating: "urlcache;hit",
            .revalidated: "urlcache;fwd=stale;fwd-status=304", .miss: "urlcache;fwd=uri-miss",
            .expired: "urlcache;fwd=stale", .bypass: "urlcache;fwd=bypass",
        ]
        for status in CacheStatus.allCases { #expect(status.fieldValue() == expected[status], "\(status)") }
        #expect(CacheStatus.hit.fieldValue(cacheName: "api cache") == "\"api cache\";hit")
    }
}
