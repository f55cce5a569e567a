import CachingProxy
import Foundation
import LoopbackOrigin
import Testing
import TestProcess

/// The proxy's `GET /metrics` (Prometheus text) on a listener of its own.
@Suite(.blockingWaits, .timeLimit(.minutes(10)))
struct ProxyMetricsTests {
    /// The value of the sample whose line starts with `series` followed by a space, or nil.
    static func sample(_ text: String, _ series: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(series + " ") }.flatMap { Double($0.split(separator: " ")[1]) }
    }

    @Test("answers are counted by cache status as the Cache-Status field said, beside the directory's counters")
    func countsAnswers() async throws {
        let fixture = try await ProxyFixture.start(configure: { $0.metricsAddress = ("127.0.0.1", 0) }) { request, _ in
            request.target == "/mine"
                ? LoopbackOrigin.Response(status: 200, headers: [("Cache-Control", "private, max-age=60")], body: "m")
                : LoopbackOrigin.Response(status: 200, headers: [("Cache-Control", "max-age=600")], body: "shared")
        }
        let metricsPort = try #require(fixture.server.metricsPort)
        #expect(try await fixture.send("GET", "/shared").status == 200) // uri-miss, stored
        let hit = try await fixture.send("GET", "/shared")
        #expect(hit.header("Cache-Status")?.hasPrefix("urlcache;hit") == true)
        let mine = try await fixture.send("GET", "/mine") // uri-miss, not stored: private
        #expect(mine.header("Cache-Status")?.contains("detail=private") == true, "\(mine.headers)")

        let metrics = try await RawConnection.open(port: metricsPort)
        defer { metrics.close() }
        let scraped = try await metrics.exchange("GET", "/metrics")
        #expect(scraped.status == 200)
        #expect(scraped.header("Content-Type")?.hasPrefix("text/plain; version=0.0.4") == true)
        let text = scraped.text
        #expect(Self.sample(text, #"urlcache_responses_total{cache="hit"}"#) == 1, "\(text)")
        #expect(Self.sample(text, #"urlcache_responses_total{cache="uri-miss"}"#) == 2)
        #expect(Self.sample(text, #"urlcache_responses_total{cache="stale"}"#) == 0)
        #expect(Self.sample(text, "urlcache_stored_responses_total") == 1)
        #expect(Self.sample(text, #"urlcache_not_stored_total{reason="private"}"#) == 1)
        // The directory's part, as `urlcache stats --prometheus` prints it, from the index.
        let directory = #"{directory="\#(fixture.directory.root)"}"#
        #expect(Self.sample(text, "urlcache_stores_total" + directory) == 1, "\(text)")
        #expect(Self.sample(text, "urlcache_entries" + directory) == 1)

        // Counters only grow; other paths are not metrics.
        #expect(try await fixture.send("GET", "/shared").status == 200)
        let again = try await metrics.exchange("GET", "/metrics?x=1").text
        #expect(Self.sample(again, #"urlcache_responses_total{cache="hit"}"#) == 2)
        #expect(try await metrics.exchange("GET", "/other").status == 404)
        // An answer the proxy makes itself (a target it cannot forward) has no Cache-Status.
        #expect(try await fixture.send("GET", "*").status == 400)
        let generated = try await metrics.exchange("GET", "/metrics").text
        #expect(Self.sample(generated, "urlcache_proxy_generated_responses_total") == 1, "\(generated)")
        try await fixture.stop()
    }

    @Test("no metrics listener unless asked for")
    func offByDefault() async throws {
        let fixture = try await ProxyFixture.start { _, _ in LoopbackOrigin.Response(status: 200, body: "x") }
        #expect(fixture.server.metricsPort == nil)
        try await fixture.stop()
    }
}
