import Foundation
import LoopbackOrigin
import Testing

/// `ProxyConfiguration.idleTimeout`: a keep-alive connection with nothing to answer is closed once
/// the timeout has passed since its last answer went out; an answer that takes longer than the
/// timeout is never cut.
@Suite(.blockingWaits, .timeLimit(.minutes(10)))
struct ProxyIdleConnectionTests {
    @Test("An idle keep-alive connection is closed after the timeout, never during a slow answer")
    func idleTimeout() async throws {
        let fixture = try await ProxyFixture.start(configure: { $0.idleTimeout = .seconds(1) }) { request, _ in
            if request.target == "/slow" { Thread.sleep(forTimeInterval: 2.5) } // longer than the timeout
            return LoopbackOrigin.Response(headers: [("Cache-Control", "no-store")], body: request.target)
        }
        let connection = try await fixture.connect()
        defer { connection.close() }
        // Kept alive between answers that follow each other.
        #expect(try await connection.exchange("GET", "/a").text == "/a")
        #expect(try await connection.exchange("GET", "/b").text == "/b")
        // An answer that runs past the timeout arrives whole, on the same connection.
        let slow = try await connection.exchange("GET", "/slow")
        #expect(slow.status == 200)
        #expect(slow.text == "/slow")
        // Then, with nothing more asked, the proxy closes it, and not before the timeout.
        let answered = ContinuousClock.now
        #expect(try await connection.isClosedByPeer())
        // (The proxy counts from when its last bytes left, a little before the client read them.)
        #expect(ContinuousClock.now - answered >= .milliseconds(250))
        try await fixture.stop()
    }
}
