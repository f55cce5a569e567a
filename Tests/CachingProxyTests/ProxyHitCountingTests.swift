import Foundation
import LoopbackOrigin
import SharedURLCache
import Testing
import TestProcess

/// The proxy's counters under concurrency: a URL requested once is a miss and a store, never a
/// hit, however many connections run at once (as wrk drives it).
@Suite(.blockingWaits, .timeLimit(.minutes(10)))
struct ProxyHitCountingTests {
    @Test("16 keep-alive connections of unique URLs: as many misses and stores as requests, no hit")
    func uniqueURLsCountNoHits() async throws {
        let fixture = try await ProxyFixture.start { request, _ in
            LoopbackOrigin.Response(
                status: 200, headers: [("Cache-Control", "max-age=3600")], body: String(repeating: "b", count: 1024))
        }
        let connections = 16, perConnection = 25
        try await withThrowingTaskGroup(of: Void.self) { group in
            for c in 0..<connections {
                group.addTask {
                    let connection = try await fixture.connect()
                    defer { connection.close() }
                    for r in 0..<perConnection {
                        let answer = try await connection.exchange("GET", "/unique/\(c)/\(r)")
                        #expect(answer.status == 200 && answer.cacheStatus == "MISS", "/unique/\(c)/\(r)")
                    }
                }
            }
            try await group.waitForAll()
        }
        let requests = connections * perConnection
        let statistics = fixture.server.client.cache.statistics
        try await fixture.stop()

        #expect(fixture.origin.requestCount == requests)
        #expect(statistics.hits == 0)
        #expect(statistics.misses == requests)
        #expect(statistics.stores == requests)
        #expect(statistics.directoryHits == 0)
    }
}
