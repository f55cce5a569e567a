import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPCacheSemantics
import HTTPTypes
import LoopbackOrigin
@testable import SharedURLCache
import Testing
import TestProcess

/// Purge by tag and soft purge through the caching flow, against a real loopback origin.
@Suite(.blockingWaits, .timeLimit(.minutes(5)))
struct TagPurgeFlowTests {
    static func body(_ n: Int) -> String { "{\"n\":\(n)}" }

    /// An origin whose `/p/<tag>/<name>` responses are tagged `<tag>` and `all`.
    static func harness(cacheControl: String = "max-age=600") throws -> FlowHarness {
        try FlowHarness { request, n in
            let tag = request.target.split(separator: "/").dropFirst().first.map(String.init) ?? "none"
            return .init(
                headers: [("Cache-Control", cacheControl), ("ETag", "\"e\(n)\""), ("Surrogate-Key", "\(tag) all")],
                body: Self.body(n))
        }
    }

    @Test("a purge by tag removes the responses stored with it, and only those")
    func hardPurge() async throws {
        let h = try Self.harness()
        for path in ["/p/red/1", "/p/red/2", "/p/blue/1"] { _ = try await h.send(path) }
        #expect(await h.cache.removeCachedResponses(taggedWith: "red") == 2)
        #expect(try await h.send("/p/blue/1").cacheStatus == .hit)
        #expect(try await h.send("/p/red/1").cacheStatus == .miss)
        #expect(h.origin.requestCount == 4)
        #expect(await h.cache.removeCachedResponses(taggedWith: "all") == 2)
        #expect(try await h.send("/p/blue/1").cacheStatus == .miss)
    }

    @Test("after a soft purge the next request revalidates with the stored validator")
    func softPurgeRevalidates() async throws {
        let h = try Self.harness()
        _ = try await h.send("/p/red/1")
        #expect(try await h.send("/p/red/1").cacheStatus == .hit)
        #expect(await h.cache.invalidateCachedResponses(taggedWith: "red") == 1)
        // Still there for URLCache's API: a soft purge keeps the entry.
        #expect(await h.cache.cachedResponse(for: URLRequest(url: URL(string: "\(h.origin.url)/p/red/1")!)) != nil)
        _ = try await h.send("/p/red/1")
        #expect(h.origin.requestCount == 2)
        #expect(h.origin.requests.last?.header("If-None-Match") == "\"e1\"")
    }

    @Test("a soft-purged response is served stale within stale-while-revalidate while it is refreshed")
    func softPurgeWithStaleWhileRevalidate() async throws {
        let h = try Self.harness(cacheControl: "max-age=600, stale-while-revalidate=60")
        let first = try await h.send("/p/red/1")
        #expect(
            await h.cache.invalidateCachedResponse(for: URLRequest(url: URL(string: "\(h.origin.url)/p/red/1")!)) == 1)
        let updating = try await h.send("/p/red/1")
        #expect(updating.cacheStatus == .updating && updating.body == first.body)
        #expect(await eventually { h.origin.requestCount >= 2 })
        #expect(h.origin.requestCount == 2, "one background revalidation")
    }

    @Test("tag fields are configurable; an empty list stores no tags")
    func configuredFields() async throws {
        let h = try Self.harness()
        var configuration = SharedCacheConfiguration(directory: h.cache.configuration.directory)
        configuration.tagFieldNames = []
        let untagged = try SharedCache(configuration: configuration)
        let flow = HTTPCachingFlow(cache: untagged, configuration: HTTPCachingConfiguration())
        _ = try await h.send("/p/green/1", through: flow)
        #expect(await untagged.removeCachedResponses(taggedWith: "green") == 0)
        #expect(try await h.send("/p/green/1", through: flow).cacheStatus == .hit)
    }
}
