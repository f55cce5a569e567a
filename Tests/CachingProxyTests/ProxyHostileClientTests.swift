import Foundation
import LoopbackOrigin
import Testing
import TestProcess

/// Raw bytes from a hostile client against a real `urlcache proxy` process: the request forms
/// used to smuggle a second request past a proxy or to make it forward something other than
/// what it keyed are refused before anything reaches the origin, and the proxy keeps serving.
@Suite(.blockingWaits, .timeLimit(.minutes(10)))
struct ProxyHostileClientTests {
    /// What came back on a connection that sent `bytes`: the whole text until the proxy closed
    /// (or 30 s passed), and whether it closed.
    static func exchange(port: Int, _ bytes: String) async throws -> (text: String, closed: Bool) {
        try await runBlocking {
            let fd = try LoopbackSocket.connected(to: port, receiveTimeoutSeconds: 30)
            defer { close(fd) }
            let out = Array(bytes.utf8)
            _ = out.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = read(fd, &buffer, buffer.count)
                if n > 0 {
                    received += buffer[0..<n]
                    continue
                }
                if n < 0 && errno == EINTR { continue }
                return (String(decoding: received, as: UTF8.self), n == 0 || errno == ECONNRESET)
            }
        }
    }

    /// The status codes of the responses in `text`, in order.
    static func statuses(_ text: String) -> [Int] {
        text.components(separatedBy: "\r\n").compactMap { line in
            guard line.hasPrefix("HTTP/1.") else { return nil }
            return Int(line.split(separator: " ").dropFirst().first ?? "")
        }
    }

    static let smuggling: [(String, String)] = [
        (
            "Content-Length with Transfer-Encoding",
            "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
        ),
        (
            "two different Content-Lengths",
            "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nContent-Length: 40\r\n\r\nGET /smuggled HTTP/1.1\r\n\r\n"
        ),
        ("a bare CR in a field value", "GET /a HTTP/1.1\r\nHost: x\r\nX-A: one\rGET /smuggled HTTP/1.1\r\n\r\n"),
        ("a space before the colon", "GET /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n"),
        (
            "an invalid chunk size",
            "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n"
        ),
        ("junk after the HTTP version", "GET /a HTTP/1.1 junk\r\nHost: x\r\n\r\n"),
        (
            "a head of 200 KiB",
            "GET /a HTTP/1.1\r\nHost: x\r\nX-Big: " + String(repeating: "b", count: 200 << 10) + "\r\n\r\n"
        ),
    ]

    @Test("request-smuggling and malformed forms get 400 (or a close), and no smuggled request reaches the origin")
    func smugglingFormsRefused() async throws {
        let origin = try LoopbackOrigin { request, _ in
            LoopbackOrigin.Response(status: 200, body: "saw \(request.target)")
        }
        defer { origin.stop() }
        let proxy = try await ProxyProcess.start(upstream: origin.url)
        for (name, bytes) in Self.smuggling {
            let (text, closed) = try await Self.exchange(port: proxy.port, bytes)
            let statuses = Self.statuses(text)
            #expect(closed, "\(name): the connection stayed open")
            #expect(statuses.allSatisfy { (400..<500).contains($0) }, "\(name): \(statuses)")
        }
        // A body streams to the origin as it is read, so the head of a request whose chunked body
        // turns out malformed may have reached it (the upload is then cut off, as with nginx's
        // proxy_request_buffering off); nothing else does, and no smuggled request ever.
        let reached = origin.requests.map { "\($0.method) \($0.target)" }
        #expect(reached.allSatisfy { $0 == "POST /a" } && reached.count <= 1, "\(reached)")
        // Still serving.
        let normal = try await proxy.send("/normal")
        #expect(normal.status == 200 && normal.text == "saw /normal")
        let outcome = try await proxy.stop()
        #expect(outcome.status == 0, "\(outcome.err)")
    }

    @Test("an obs-folded field (RFC 9112 §5.2) is refused, or reaches the origin unfolded, never with its line break")
    func obsFold() async throws {
        let origin = try LoopbackOrigin { _, _ in LoopbackOrigin.Response(status: 200, body: "fine") }
        defer { origin.stop() }
        let proxy = try await ProxyProcess.start(upstream: origin.url)
        let (text, _) = try await Self.exchange(
            port: proxy.port, "GET /fold HTTP/1.1\r\nHost: x\r\nX-A: one\r\n two\r\nConnection: close\r\n\r\n")
        let statuses = Self.statuses(text)
        #expect(statuses.count == 1)
        if let seen = origin.requests.first {
            #expect(statuses == [200])
            #expect(seen.headers.allSatisfy { !$0.value.contains("\r") && !$0.value.contains("\n") })
            #expect(!seen.headers.contains { $0.name.hasPrefix(" ") }, "a folded line became a field of its own")
        } else {
            #expect(statuses.allSatisfy { (400..<500).contains($0) }, "\(statuses)")
        }
        let outcome = try await proxy.stop()
        #expect(outcome.status == 0, "\(outcome.err)")
    }

    @Test("an absolute-form target goes to the upstream, not the host it names; CONNECT is refused and closed")
    func absoluteFormAndConnect() async throws {
        let origin = try LoopbackOrigin { request, _ in
            LoopbackOrigin.Response(status: 200, body: "saw \(request.target) for \(request.header("Host") ?? "")")
        }
        defer { origin.stop() }
        let proxy = try await ProxyProcess.start(upstream: origin.url)
        let (text, _) = try await Self.exchange(
            port: proxy.port, "GET http://evil.test/path?q=1 HTTP/1.1\r\nHost: evil.test\r\nConnection: close\r\n\r\n")
        #expect(text.hasSuffix("saw /path?q=1 for 127.0.0.1:\(origin.port)"), "\(text)")
        let (connect, closed) = try await Self.exchange(
            port: proxy.port, "CONNECT evil.test:443 HTTP/1.1\r\nHost: evil.test:443\r\n\r\n")
        #expect(Self.statuses(connect) == [405] && closed)
        #expect(origin.requestCount == 1)
        let outcome = try await proxy.stop()
        #expect(outcome.status == 0, "\(outcome.err)")
    }

    @Test("a flood of 300 idle connections does not keep a new client from being answered")
    func connectionFlood() async throws {
        let origin = try LoopbackOrigin { _, _ in LoopbackOrigin.Response(status: 200, body: "fine") }
        defer { origin.stop() }
        let proxy = try await ProxyProcess.start(upstream: origin.url)
        let port = proxy.port
        let idle = try await runBlocking { try (0..<300).map { _ in try LoopbackSocket.connected(to: port) } }
        defer { for fd in idle { close(fd) } }
        let answer = try await proxy.send("/through")
        #expect(answer.status == 200 && answer.text == "fine")
        let outcome = try await proxy.stop()
        #expect(outcome.status == 0, "\(outcome.err)")
    }
}
