import CachingProxy
import Foundation
import LoopbackOrigin
import Synchronization
import Testing
import TestProcess

/// An origin that refuses the connection, closes it or resets it without a
/// response is answered at once: a stored stale response where its and the request's directives
/// allow (RFC 5861 §4), 504 where they forbid it (RFC 9111 §5.2.2.2, §5.2.2.8, §5.2.2.10,
/// §5.2.2.4), 502 on a miss. The time bound is generous (a loaded CI machine): before, a refused
/// connect was retried until the connect timeout (then 10 s) ran out.
@Suite(.blockingWaits, .timeLimit(.minutes(10)))
struct ProxyDeadOriginTests {
    enum Failure: String, CaseIterable, Sendable {
        case refused, closed, reset
    }

    /// Path → the stored response's Cache-Control.
    static let stored: [String: String] = [
        "/sie": "max-age=10, stale-if-error=600",
        "/plain": "max-age=10",
        "/must-revalidate": "max-age=10, must-revalidate, stale-if-error=600",
        "/proxy-revalidate": "max-age=10, proxy-revalidate, stale-if-error=600",
        "/s-maxage": "s-maxage=10, stale-if-error=600",
        "/no-cache": "no-cache, max-age=600, stale-if-error=600",
    ]

    @Test(
        "a dead origin: stale where allowed, 504 where forbidden, 502 on a miss, at once", arguments: Failure.allCases)
    func deadOrigin(failure: Failure) async throws {
        let down = Atomic(false)
        // A long connect timeout: what is timed is that a refused connect is not retried until it.
        let fixture = try await ProxyFixture.start(configure: { $0.connectTimeout = .seconds(30) }) { request, _ in
            var response = LoopbackOrigin.Response(
                status: 200, headers: [("Cache-Control", Self.stored[request.target] ?? "no-store")],
                body: "stored \(request.target)")
            if down.load(ordering: .relaxed) {
                response.closesWithoutResponse = failure == .closed
                response.resetsWithoutResponse = failure == .reset
            }
            return response
        }
        for path in Self.stored.keys.sorted() { _ = try await fixture.send("GET", path) }
        let primed = fixture.origin.requestCount
        fixture.clock.advance(seconds: 60) // every entry is stale by 50 s
        if failure == .refused { fixture.origin.stop() } else { down.store(true, ordering: .relaxed) }

        func timed(_ target: String, headers: [(String, String)] = []) async throws -> (RawResponse, Duration) {
            let started = ContinuousClock.now
            let answer = try await fixture.send("GET", target, headers: headers)
            return (answer, ContinuousClock.now - started)
        }
        // The response allows stale on error, or the request does.
        for (target, headers) in [("/sie", []), ("/plain", [("Cache-Control", "stale-if-error=600")])] {
            let (answer, elapsed) = try await timed(target, headers: headers)
            #expect(answer.status == 200 && answer.text == "stored \(target)", "\(target)")
            #expect(answer.cacheStatus == "STALE", "\(target)")
            // Forwarded because stale, no status came back, served 50 s (and a moment) past its freshness.
            #expect(answer.header("Cache-Status")?.hasPrefix("urlcache;fwd=stale;ttl=-5") == true, "\(target)")
            #expect(elapsed < .seconds(3), "\(target) took \(elapsed)")
        }
        // The response forbids stale (must-revalidate; in a shared cache proxy-revalidate and
        // s-maxage; no-cache), whatever stale-if-error says; or nothing allows it.
        for target in ["/must-revalidate", "/proxy-revalidate", "/s-maxage", "/no-cache", "/plain"] {
            let (answer, elapsed) = try await timed(target)
            #expect(answer.status == 504, "\(target)")
            #expect(answer.header("Cache-Status") == "urlcache;fwd=stale", "\(target)")
            #expect(elapsed < .seconds(3), "\(target) took \(elapsed)")
        }
        let (miss, elapsed) = try await timed("/never-stored")
        #expect(
            miss.status == 502 && miss.header("Cache-Status") == nil, "an answer the proxy made itself (RFC 9211 §2)")
        #expect(elapsed < .seconds(3), "the miss took \(elapsed)")
        if failure != .refused {
            #expect(fixture.origin.requestCount == primed + 8, "every request reached the origin")
        }
        try await fixture.stop()
    }
}
