import CachingProxy
import Foundation
import LoopbackOrigin
import Testing
import TestProcess

/// Storable statuses, validation and Vary end to end through the proxy against a loopback origin. Whether an
/// answer came from the cache is read from the origin's request count, not from the cache status
/// header (whose format is another item of that issue).
@Suite(.blockingWaits, .timeLimit(.minutes(10)))
struct ProxyStatusAndValidationTests {
    @Test(
        "an origin that omits ETag from its 304s is asked once per revalidation (RFC 9111 §4.3.4)",
        arguments: [
            ("/must-revalidate", [("ETag", "\"abcd\""), ("Cache-Control", "max-age=2, must-revalidate")]),
            ("/no-cache", [("ETag", "\"abcd\""), ("Cache-Control", "no-cache")]),
            ("/last-modified", [("Last-Modified", "Mon, 01 Jan 2024 00:00:00 GMT"), ("Cache-Control", "max-age=2")]),
            ("/vary", [("ETag", "\"abcd\""), ("Cache-Control", "max-age=2"), ("Vary", "Accept-Encoding")]),
        ])
    func notModifiedWithoutValidator(path: String, headers: [(String, String)]) async throws {
        let fixture = try await ProxyFixture.start { request, _ in
            if request.header("If-None-Match") != nil || request.header("If-Modified-Since") != nil {
                return LoopbackOrigin.Response(status: 304, headers: [("Content-Type", "text/plain; charset=utf-8")])
            }
            return LoopbackOrigin.Response(
                status: 200, headers: headers + [("Content-Type", "text/plain")], body: "stored body")
        }
        let requestHeaders = [("Accept-Encoding", "gzip")]
        _ = try await fixture.send("GET", path, headers: requestHeaders)
        #expect(fixture.origin.requestCount == 1)
        for round in 2...3 {
            fixture.clock.advance(seconds: 10)
            let answer = try await fixture.send("GET", path, headers: requestHeaders)
            #expect(fixture.origin.requestCount == round, "one origin request per client request")
            #expect(answer.status == 200 && answer.text == "stored body")
            #expect(answer.header("Content-Type") == "text/plain; charset=utf-8")
        }
        let conditional = fixture.origin.requests.last
        #expect(conditional?.header("If-None-Match") != nil || conditional?.header("If-Modified-Since") != nil)
        try await fixture.stop()
    }

    @Test("status codes: an explicitly fresh 503 and a heuristically fresh 404 are served from the cache (RFC 9111 §3)")
    func cacheableStatuses() async throws {
        let fixture = try await ProxyFixture.start { request, index in
            switch request.target {
            case "/busy":
                LoopbackOrigin.Response(status: 503, headers: [("Cache-Control", "max-age=60")], body: "busy \(index)")
            case "/gone":
                LoopbackOrigin.Response(
                    status: 404, headers: [("Last-Modified", "Mon, 01 Jan 2024 00:00:00 GMT")],
                    body: "missing \(index)")
            default:
                LoopbackOrigin.Response(status: 400, headers: [("Cache-Control", "max-age=600")], body: "bad \(index)")
            }
        }
        _ = try await fixture.send("GET", "/busy")
        let busy = try await fixture.send("GET", "/busy")
        #expect(busy.status == 503 && busy.text == "busy 1" && fixture.origin.requestCount == 1)
        _ = try await fixture.send("GET", "/gone")
        let gone = try await fixture.send("GET", "/gone")
        #expect(gone.status == 404 && gone.text == "missing 2" && fixture.origin.requestCount == 2)
        // RFC 9111 §7.1: a 400 with a blanket max-age is not stored in a shared cache.
        _ = try await fixture.send("GET", "/bad", headers: [("X-Junk", String(repeating: "j", count: 2000))])
        let bad = try await fixture.send("GET", "/bad")
        #expect(bad.status == 400 && bad.text == "bad 4" && fixture.origin.requestCount == 4)
        try await fixture.stop()
    }

    @Test("Vary: Accept-Encoding matches whatever the order and spacing of the codings (RFC 9111 §4.1)")
    func varyNormalised() async throws {
        let fixture = try await ProxyFixture.start { _, index in
            LoopbackOrigin.Response(
                status: 200, headers: [("Cache-Control", "max-age=60"), ("Vary", "Accept-Encoding")],
                body: "variant \(index)")
        }
        _ = try await fixture.send("GET", "/v", headers: [("Accept-Encoding", "gzip, deflate, br")])
        let reordered = try await fixture.send("GET", "/v", headers: [("Accept-Encoding", "br,gzip ,deflate")])
        #expect(reordered.text == "variant 1" && fixture.origin.requestCount == 1)
        let other = try await fixture.send("GET", "/v", headers: [("Accept-Encoding", "gzip")])
        #expect(other.text == "variant 2" && fixture.origin.requestCount == 2)
        try await fixture.stop()
    }
}
