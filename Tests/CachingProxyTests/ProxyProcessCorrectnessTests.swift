import Foundation
import LoopbackOrigin
import Testing
import TestProcess

/// Small correctness points of a real `urlcache proxy` process: `Cache-Status` says `stored` only
/// for a committed entry, an HTTP/1.0 answer delimited by the connection's close says so, and a
/// signalled proxy exits within its grace period whatever hangs.
@Suite(.blockingWaits, .timeLimit(.minutes(10)))
struct ProxyProcessCorrectnessTests {
    @Test("Cache-Status says stored for a committed entry, and not for one the store refused")
    func storedOnlyWhenCommitted() async throws {
        let origin = try LoopbackOrigin { request, _ in
            LoopbackOrigin.Response(
                status: 200, headers: [("Cache-Control", "max-age=600")],
                body: request.target == "/large" ? String(repeating: "x", count: 16 << 10) : "small")
        }
        defer { origin.stop() }
        // Entries up to 4 KiB: the 16 KiB body is refused while it streams into the store.
        let proxy = try await ProxyProcess.start(upstream: origin.url, ["--max-entry-size", "4KiB"])

        let refused = try await proxy.send("/large")
        #expect(refused.status == 200 && refused.body.count == 16 << 10)
        #expect(refused.header("Cache-Status")?.contains(";stored") == false, "\(refused.headers)")
        let again = try await proxy.send("/large")
        #expect(again.cacheStatus == "MISS", "nothing was stored")

        let stored = try await proxy.send("/small")
        #expect(stored.header("Cache-Status")?.hasSuffix(";stored") == true, "\(stored.headers)")
        let hit = try await proxy.send("/small")
        #expect(hit.cacheStatus == "HIT")
        #expect(origin.requestCount == 3)
        let outcome = try await proxy.stop()
        #expect(outcome.status == 0, "\(outcome.err)")
    }

    @Test("an HTTP/1.0 keep-alive request whose answer has no known length gets Connection: close, then the close")
    func http10UnknownLengthCloses() async throws {
        let origin = try LoopbackOrigin { _, _ in
            // Chunked and larger than what the proxy gathers before the head: its length is not
            // known when the head goes out.
            var response = LoopbackOrigin.Response(status: 200, headers: [("Cache-Control", "no-store")])
            response.body = Array(repeating: UInt8(ascii: "z"), count: 1 << 20)
            response.chunked = true
            return response
        }
        defer { origin.stop() }
        let proxy = try await ProxyProcess.start(upstream: origin.url)
        let port = proxy.port
        let (received, endedByClose) = try await runBlocking { () -> ([UInt8], Bool) in
            let fd = try LoopbackSocket.connected(to: port, receiveTimeoutSeconds: 60)
            defer { close(fd) }
            let request = Array("GET /stream HTTP/1.0\r\nHost: proxy.test\r\nConnection: keep-alive\r\n\r\n".utf8)
            _ = request.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = read(fd, &buffer, buffer.count)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return (received, n == 0) } // 0: the proxy closed; -1: the receive timeout
                received += buffer[0..<n]
            }
        }
        let text = String(decoding: received.prefix(4096), as: UTF8.self)
        let head = text.components(separatedBy: "\r\n\r\n").first ?? ""
        #expect(head.lowercased().contains("\r\nconnection: close"), "\(head)")
        #expect(endedByClose, "the answer's end is the connection's close")
        #expect(received.count > 1 << 20, "the whole body came before the close")
        let outcome = try await proxy.stop()
        #expect(outcome.status == 0, "\(outcome.err)")
    }

    @Test("SIGTERM with a request hung at the origin: the proxy exits after its grace period")
    func sigtermGracePeriodIsBounded() async throws {
        let release = DispatchSemaphore(value: 0)
        let origin = try LoopbackOrigin { _, _ in
            _ = release.wait(timeout: .now() + 300)
            return LoopbackOrigin.Response(status: 200, body: "late")
        }
        defer {
            release.signal()
            origin.stop()
        }
        let proxy = try await ProxyProcess.start(
            upstream: origin.url, ["--shutdown-grace", "1", "--upstream-timeout", "600"])
        let hung = Task { try? await proxy.send("/hang") }
        try #require(await eventually { origin.requestCount > 0 }, "the request reached the origin")

        kill(proxy.child.pid, SIGTERM)
        // Far more than the grace period: a proxy that waits for the origin is killed here and
        // its status says signal 9.
        let child = proxy.child
        let outcome = try await runBlocking { child.finish(deadline: 60) }
        #expect(outcome.status == 0, "\(outcome.err)")
        #expect(outcome.err.contains("grace period"), "\(outcome.err)")
        hung.cancel()
    }
}
