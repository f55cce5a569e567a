import Foundation
import HTTPCacheSemantics
import HTTPTypes
import LoopbackOrigin
@testable import SharedURLCache
import Testing

/// What a 304 leaves in a shared cache (RFC 9111 §3.2, §4.3.4, §7.3): the merged head under the
/// storage rules, and a `Set-Cookie` for the client whose revalidation received it, never for the next.
@Suite(.blockingWaits, .timeLimit(.minutes(5)))
struct HTTPCachingFlowNotModifiedTests {
    /// An origin whose stored response is stale at once and revalidates by `ETag`; a 304 carries
    /// `notModified`, plus `Set-Cookie` when the request had a `Cookie`.
    static func origin(notModified: [(String, String)]) throws -> FlowHarness {
        try FlowHarness { request, _ in
            if request.header("If-None-Match") == "\"v1\"" {
                var headers = [("ETag", "\"v1\"")] + notModified
                if let cookie = request.header("Cookie") { headers.append(("Set-Cookie", "\(cookie); Path=/")) }
                return .init(status: 304, headers: headers)
            }
            return .init(headers: [("ETag", "\"v1\""), ("Cache-Control", "max-age=0")], body: "stored body")
        }
    }

    @Test("a 304's Set-Cookie reaches the client that revalidated, and never a later client of the entry")
    func setCookieGoesToOneClient() async throws {
        let h = try Self.origin(notModified: [("Cache-Control", "max-age=600")])
        _ = try await h.send()
        h.advance(1)
        let victim = try await h.send(headers: ["Cookie": "sid=VICTIM"])
        #expect(victim.cacheStatus == .revalidated && victim.body == Data("stored body".utf8))
        #expect(victim.response.headerFields[.setCookie] == "sid=VICTIM; Path=/")
        let next = try await h.send()
        #expect(next.cacheStatus == .hit, "the refreshed entry is fresh for 600 s")
        #expect(next.body == Data("stored body".utf8))
        #expect(!next.response.headerFields.contains(.setCookie), "\(next.response.headerFields)")
        #expect(h.origin.requestCount == 2)
    }

    @Test(
        "a 304 whose merged head may not be stored removes the entry instead of refreshing it",
        arguments: ["no-store", "private, max-age=600"])
    func refusedRefreshRemoves(cacheControl: String) async throws {
        let h = try Self.origin(notModified: [("Cache-Control", cacheControl)])
        _ = try await h.send()
        h.advance(1)
        let revalidated = try await h.send()
        // This client still gets the stored body under the head the origin just sent.
        #expect(revalidated.cacheStatus == .revalidated && revalidated.body == Data("stored body".utf8))
        #expect(revalidated.response.headerFields[.cacheControl] == cacheControl)
        #expect(revalidated.cacheStatusMember.detail != nil)
        // Nothing is left to serve or revalidate: the next request is a plain miss.
        let next = try await h.send()
        #expect(next.cacheStatus == .miss)
        #expect(h.origin.requests.last?.header("If-None-Match") == nil)
        #expect(h.origin.requestCount == 3)
    }
}
