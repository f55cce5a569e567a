import CachingProxy
import Foundation
import LoopbackOrigin
import Testing
import TestProcess

/// Compressed passthrough through the proxy: `--compressed-passthrough` sends a stored compressed body
/// as it is to a client that accepts gzip.
@Suite(.blockingWaits, .timeLimit(.minutes(5)))
struct ProxyCompressedPassthroughTests {
    static func body(lines: Int) -> String {
        (0..<lines).map { "{\"id\":\($0),\"name\":\"item \($0 % 97)\"}" }.joined(separator: "\n")
    }

    /// 3,000 lines (~90 KiB) take the proxy's synchronous hit path for bodies it would read whole;
    /// 40,000 (~1.3 MiB) the streamed one. No memory tier: a body in memory is already inflated,
    /// and goes out as it is.
    @Test(
        "a hit goes out gzip-encoded from the stored stream; identity clients get the body as before",
        arguments: [3_000, 40_000])
    func gzipHit(lines: Int) async throws {
        let body = Self.body(lines: lines)
        let fixture = try await ProxyFixture.start(
            memoryCapacityBytes: 0, configure: { $0.client.caching.compressedPassthrough = true }
        ) {
            _, _ in
            LoopbackOrigin.Response(status: 200, headers: [("Cache-Control", "max-age=600")], body: body)
        }
        #expect(try await fixture.send("GET", "/big").text == body) // the miss, stored
        let hit = try await fixture.send("GET", "/big", headers: [("Accept-Encoding", "gzip")])
        #expect(hit.status == 200 && hit.header("Content-Encoding") == "gzip", "\(hit.headers)")
        #expect(hit.header("Content-Length") == String(hit.body.count) && hit.body.count < body.utf8.count / 4)
        #expect(hit.header("X-Cache-Status") == "HIT", "\(hit.headers)") // answered from the store
        #expect(try decodedContent(Data(hit.body), coding: "gzip") == Data(body.utf8))
        let identity = try await fixture.send("GET", "/big")
        #expect(identity.header("Content-Encoding") == nil && identity.text == body)
        #expect(fixture.origin.requestCount == 1)
        try await fixture.stop()
    }
}
