import Foundation
import HTTPCacheSemantics
import HTTPTypes
import LoopbackOrigin
@testable import SharedURLCache
import Testing
import TestProcess

/// `storedResponse(for:)`: the synchronous answer from the cache alone, which callers on an event
/// loop use for their hits. It must decide exactly as the full flow does and count once.
@Suite(.blockingWaits, .timeLimit(.minutes(5)))
struct HTTPCachingFlowStoredTests {
    static let body = "{\"payload\":\"" + String(repeating: "z", count: 300) + "\"}"

    func request(_ h: FlowHarness, _ method: HTTPRequest.Method = .get, headers: [(String, String)] = []) -> HTTPRequest
    {
        var fields = HTTPFields()
        for (name, value) in headers { fields[HTTPField.Name(name)!] = value }
        return HTTPRequest(
            method: method, scheme: "http", authority: "127.0.0.1:\(h.origin.port)", path: "/r", headerFields: fields)
    }

    @Test("a fresh hit is answered at once with Age, counted as one hit; HEAD gets no body")
    func freshHit() async throws {
        let h = try FlowHarness { _, _ in
            .init(headers: [("Cache-Control", "max-age=60"), ("ETag", "\"v1\"")], body: Self.body)
        }
        #expect(h.flow.storedResponse(for: request(h)) == nil) // nothing stored yet
        _ = try await h.send()
        let before = h.cache.statistics
        h.advance(4)
        let hit = try #require(h.flow.storedResponse(for: request(h)))
        #expect(hit.cacheStatus == .hit && hit.response.status == .ok)
        #expect(hit.body == Data(Self.body.utf8) && hit.response.headerFields[.age] == "4")
        let head = try #require(h.flow.storedResponse(for: request(h, .head)))
        #expect(head.body.isEmpty && head.response.status == .ok)
        let conditional = try #require(h.flow.storedResponse(for: request(h, headers: [("If-None-Match", "\"v1\"")])))
        #expect(conditional.response.status == .notModified && conditional.body.isEmpty)
        #expect(h.cache.statistics.hits == before.hits + 3 && h.cache.statistics.misses == before.misses)
        #expect(h.origin.requestCount == 1)
    }

    @Test(
        "anything that needs the origin is declined and counts nothing: a miss, a stale entry, a request asking to revalidate"
    )
    func declines() async throws {
        let h = try FlowHarness { _, _ in
            .init(headers: [("Cache-Control", "max-age=10"), ("ETag", "\"v1\"")], body: Self.body)
        }
        _ = try await h.send()
        let before = h.cache.statistics
        #expect(h.flow.storedResponse(for: request(h, headers: [("Cache-Control", "no-cache")])) == nil)
        #expect(h.flow.storedResponse(for: request(h, .post)) == nil)
        var other = request(h)
        other.path = "/never-stored"
        #expect(h.flow.storedResponse(for: other) == nil)
        h.advance(30)
        #expect(h.flow.storedResponse(for: request(h)) == nil) // stale: revalidation is the full flow's
        let stale = try #require(h.flow.storedResponse(for: request(h, headers: [("Cache-Control", "max-stale=60")])))
        #expect(stale.cacheStatus == .stale && stale.body == Data(Self.body.utf8))
        let after = h.cache.statistics
        #expect(after.hits == before.hits + 1 && after.misses == before.misses)
        #expect(h.origin.requestCount == 1)
    }
}
