import CachingProxy
import Foundation
import LoopbackOrigin
import Testing
import TestProcess

/// Issue 20 item 4 through the proxy: `--compressed-passthrough` sends a stored compressed body
/// as it is to a client that accepts gzip.
@Suite(.blockingWaits, .timeLimit(.minutes(5)))
struct ProxyCompressedPassthroughTests {
    static let body = (0..<40_000).map { "{\"id\":\($0),\"name\":\"item \($0 % 97)\"}" }.joined(separator: "\n")

    @Test("a hit goes out gzip-encoded from the stored stream; identity clients get the body as before")
    func gzipHit() async throws {
        let fixture = try await ProxyFixture.start(configure: { $0.client.caching.compressedPassthrough = true }) {
            _, _ in
            LoopbackOrigin.Response(status: 200, headers: [("Cache-Control", "max-age=600")], body: Self.body)
        }
        #expect(try await fixture.send("GET", "/big").text == Self.body) // the miss, stored
        let hit = try await fixture.send("GET", "/big", headers: [("Accept-Encoding", "gzip")])
        #expect(hit.status == 200 && hit.header("Content-Encoding") == "gzip", "\(hit.headers)")
        #expect(hit.header("Content-Length") == String(hit.body.count) && hit.body.count < Self.body.utf8.count / 4)
        #expect(hit.header("X-Cache-Status") == "HIT", "\(hit.headers)") // answered from the store
        #expect(try decodedContent(Data(hit.body), coding: "gzip") == Data(Self.body.utf8))
        let identity = try await fixture.send("GET", "/big")
        #expect(identity.header("Content-Encoding") == nil && identity.text == Self.body)
        #expect(fixture.origin.requestCount == 1)
        try await fixture.stop()
    }
}
