import AsyncHTTPClient
import Foundation
import LoopbackOrigin
import MetricsTestKit
import SharedURLCache
import SharedURLCacheAsyncHTTPClient
import Testing
import TestProcess

/// CachingHTTPClient counts its answers through swift-metrics, by the
/// `Cache-Status` member the caller gets.
@Suite(.blockingWaits, .timeLimit(.minutes(5)))
struct AsyncHTTPClientMetricsTests {
    @Test("a miss, a hit, an uncacheable answer and an immediate hit are counted into the configured factory")
    func countsAnswers() async throws {
        let root = AHCTest.makeDirectory("suc-ahc-metrics")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let origin = try LoopbackOrigin { request, _ in
            request.target == "/private"
                ? .init(headers: [("Cache-Control", "private, max-age=60")], body: "mine")
                : .init(headers: [("Cache-Control", "max-age=600")], body: "shared")
        }
        defer { origin.stop() }
        let metrics = TestMetrics()
        var configuration = CachingHTTPClient.Configuration()
        configuration.metricsFactory = metrics
        let client = try CachingHTTPClient(
            cache: try AHCTest.cache(root), httpClient: AHCTest.httpClient, configuration: configuration)

        let miss = try await AHCTest.get(client, origin.url + "/shared")
        // A streamed miss's member cannot say `stored` when its head goes out; its settlement,
        // once the body was read, says the entry was committed (and the counter counts it then).
        #expect(miss.text == "shared" && !miss.response.cacheStatusMember.stored)
        #expect(miss.response.storeSettlement.isCommitted)
        // The entry is committed once its body has been read; a nil immediate answer counts nothing.
        var immediate: CachingHTTPClient.ImmediateResponse?
        _ = await eventually {
            immediate = client.immediateResponse(for: HTTPClientRequest(url: origin.url + "/shared"))
            return immediate != nil
        }
        #expect(immediate?.cacheStatusMember.hit == true)
        let hit = try await AHCTest.get(client, origin.url + "/shared")
        #expect(hit.response.cacheStatusMember.hit, "\(hit.response.cacheStatusMember)")
        let mine = try await AHCTest.get(client, origin.url + "/private") // not stored: private
        #expect(mine.response.cacheStatusMember.detail == "private")

        func total(_ label: String, _ dimensions: [(String, String)] = []) throws -> Int64 {
            try metrics.expectCounter(label, dimensions).totalValue
        }
        #expect(try total("urlcache_responses_total", [("cache", "hit")]) == 2)
        #expect(try total("urlcache_responses_total", [("cache", "uri-miss")]) == 2)
        #expect(try total("urlcache_responses_total", [("cache", "stale")]) == 0)
        #expect(try total("urlcache_stored_responses_total") == 1)
        #expect(try total("urlcache_not_stored_total", [("reason", "private")]) == 1)
        #expect(try total("urlcache_collapsed_total", [("reused", "true")]) == 0)
    }
}
