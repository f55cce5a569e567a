import CachingProxy
import Foundation
import LoopbackOrigin
import Testing
import TestProcess

/// Range requests for a stored 200 are answered 206 by the proxy from the cache
/// (RFC 9110 §14), with one origin request in all.
@Suite(.blockingWaits, .timeLimit(.minutes(5)))
struct ProxyRangeTests {
    static let body: [UInt8] = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 11) }

    @Test("bytes=1000-1999 and bytes=-500 of a cached 100 KB body: 206, Content-Range, exact bytes")
    func ranges() async throws {
        let fixture = try await ProxyFixture.start { _, _ in
            var response = LoopbackOrigin.Response(
                status: 200, headers: [("Cache-Control", "max-age=600"), ("ETag", "\"r1\"")])
            response.body = Self.body
            return response
        }
        let whole = try await fixture.send("GET", "/file")
        #expect(whole.status == 200 && whole.body == Self.body)

        let middle = try await fixture.send("GET", "/file", headers: [("Range", "bytes=1000-1999")])
        #expect(middle.status == 206)
        #expect(middle.header("Content-Range") == "bytes 1000-1999/100000")
        #expect(middle.header("Content-Length") == "1000")
        #expect(middle.body == Array(Self.body[1000...1999]))
        #expect(middle.cacheStatus == "HIT")

        let suffix = try await fixture.send("GET", "/file", headers: [("Range", "bytes=-500"), ("If-Range", "\"r1\"")])
        #expect(suffix.status == 206)
        #expect(suffix.header("Content-Range") == "bytes 99500-99999/100000")
        #expect(suffix.header("Content-Length") == "500")
        #expect(suffix.body == Array(Self.body[99500...]))

        let past = try await fixture.send("GET", "/file", headers: [("Range", "bytes=100000-")])
        #expect(past.status == 416 && past.header("Content-Range") == "bytes */100000" && past.body.isEmpty)

        #expect(fixture.origin.requestCount == 1)
        try await fixture.stop()
    }
}
