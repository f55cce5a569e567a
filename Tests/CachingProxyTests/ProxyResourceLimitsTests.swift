import Foundation
import LoopbackOrigin
import Synchronization
import Testing
import TestProcess

/// A real `urlcache proxy` process meets slow, stalled and numerous clients with bounds: each
/// stage of a connection has a timeout, connections have a maximum, request bodies stream to the
/// origin through a small buffer, and a request waits for another's fetch only so long. Short
/// timeouts are set by flags so that the tests stay fast; what they check is that a stalled
/// connection is closed at all (before these bounds, it stayed open).
@Suite(.blockingWaits, .timeLimit(.minutes(10)))
struct ProxyResourceLimitsTests {
    /// Reads until the peer closes (true) or nothing arrives for `timeoutSeconds` (false), counting bytes.
    static func readUntilClosed(_ fd: Int32) -> (bytes: Int, closed: Bool) {
        var buffer = [UInt8](repeating: 0, count: 65536)
        var total = 0
        while true {
            let n = read(fd, &buffer, buffer.count)
            if n > 0 {
                total += n
                continue
            }
            if n < 0 && errno == EINTR { continue }
            // End of file or a reset: closed. EAGAIN: the receive timeout passed with the connection open.
            return (total, n == 0 || errno == ECONNRESET)
        }
    }

    static func send(_ fd: Int32, _ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    @Test("50 connections that declare a 10-byte body and send none are closed after --request-body-timeout")
    func stalledBodiesAreClosed() async throws {
        let origin = try LoopbackOrigin { _, _ in LoopbackOrigin.Response(status: 200, body: "fine") }
        defer { origin.stop() }
        let proxy = try await ProxyProcess.start(upstream: origin.url, ["--request-body-timeout", "1"])
        let port = proxy.port
        let outcomes = try await runBlocking { () -> [(bytes: Int, closed: Bool)] in
            let fds = try (0..<50).map { _ in try LoopbackSocket.connected(to: port, receiveTimeoutSeconds: 60) }
            defer { for fd in fds { close(fd) } }
            for fd in fds { Self.send(fd, "POST /upload HTTP/1.1\r\nHost: proxy.test\r\nContent-Length: 10\r\n\r\n") }
            return fds.map { Self.readUntilClosed($0) }
        }
        #expect(outcomes.allSatisfy { $0.closed }, "\(outcomes.filter { !$0.closed }.count) of 50 still open")
        let normal = try await proxy.send("/after")
        #expect(normal.status == 200 && normal.text == "fine")
        let outcome = try await proxy.stop()
        #expect(outcome.status == 0, "\(outcome.err)")
    }

    @Test("a connection that sends half a request head is closed after --request-head-timeout")
    func stalledHeadIsClosed() async throws {
        let origin = try LoopbackOrigin { _, _ in LoopbackOrigin.Response(status: 200, body: "fine") }
        defer { origin.stop() }
        let proxy = try await ProxyProcess.start(upstream: origin.url, ["--request-head-timeout", "1"])
        let port = proxy.port
        let (_, closed) = try await runBlocking { () -> (Int, Bool) in
            let fd = try LoopbackSocket.connected(to: port, receiveTimeoutSeconds: 60)
            defer { close(fd) }
            Self.send(fd, "GET /half HTTP/1.1\r\nHost: proxy.test\r\nX-Slow: ")
            return Self.readUntilClosed(fd)
        }
        #expect(closed, "the idle timeout (75 s) is not what closed it: the read waited 60 s at most")
        #expect(origin.requestCount == 0)
        let outcome = try await proxy.stop()
        #expect(outcome.status == 0, "\(outcome.err)")
    }

    @Test("a client that stops reading a 32 MiB answer is cut off after --send-timeout")
    func stalledReaderIsClosed() async throws {
        let size = 32 << 20
        let origin = try LoopbackOrigin { _, _ in
            var response = LoopbackOrigin.Response(status: 200, headers: [("Cache-Control", "no-store")])
            response.body = [UInt8](repeating: UInt8(ascii: "y"), count: size)
            return response
        }
        defer { origin.stop() }
        let proxy = try await ProxyProcess.start(upstream: origin.url, ["--send-timeout", "1"])
        let port = proxy.port
        let (bytes, closed) = try await runBlocking { () -> (Int, Bool) in
            let fd = try LoopbackSocket.connected(to: port, receiveTimeoutSeconds: 60)
            defer { close(fd) }
            Self.send(fd, "GET /large HTTP/1.1\r\nHost: proxy.test\r\n\r\n")
            // Reads nothing until the bytes waiting in the socket stop growing for 3 s (the
            // buffers are full and the proxy's writes no longer complete, however long the proxy
            // took to get there on a loaded machine), then 3 s more (the timeout is 1 s).
            var waiting: Int32 = 0
            var still = 0
            while still < 6 {
                var now: Int32 = 0
                _ = ioctl(fd, UInt(FIONREAD), &now)
                still = now > 0 && now == waiting ? still + 1 : 0
                waiting = now
                usleep(500_000)
            }
            sleep(3) // the stalled client under test, past the 1 s timeout
            return Self.readUntilClosed(fd)
        }
        #expect(closed)
        #expect(bytes < size, "the whole answer came through: nothing was cut")
        let outcome = try await proxy.stop()
        #expect(outcome.status == 0, "\(outcome.err)")
    }

    @Test("past --max-connections a new connection is answered 503 at once; once one closes, a new one is served")
    func connectionLimit() async throws {
        let origin = try LoopbackOrigin { _, _ in LoopbackOrigin.Response(status: 200, body: "fine") }
        defer { origin.stop() }
        let proxy = try await ProxyProcess.start(upstream: origin.url, ["--max-connections", "3"])
        let held = try await (0..<3).asyncMap { _ in try await proxy.connect() }
        #expect(try await held[0].exchange("GET", "/one").status == 200)

        let refused = try await proxy.send("/four")
        #expect(refused.status == 503, "\(refused.status) \(refused.headers)")
        #expect(origin.requestCount == 1)

        held[0].close()
        var served: RawResponse?
        _ = try await eventually {
            served = try await proxy.send("/again")
            return served?.status == 200
        }
        #expect(served?.status == 200 && served?.text == "fine")
        for connection in held.dropFirst() { connection.close() }
        let outcome = try await proxy.stop()
        #expect(outcome.status == 0, "\(outcome.err)")
    }

    @Test("a body declared larger than --max-request-body gets 413 at once, without 100 Continue")
    func oversizedBodyRefusedBeforeContinue() async throws {
        let origin = try LoopbackOrigin { _, _ in LoopbackOrigin.Response(status: 200, body: "fine") }
        defer { origin.stop() }
        let proxy = try await ProxyProcess.start(upstream: origin.url, ["--max-request-body", "1KiB"])
        let connection = try await proxy.connect()
        defer { connection.close() }
        try await connection.write(
            "POST /upload HTTP/1.1\r\nHost: proxy.test\r\nContent-Length: 4096\r\nExpect: 100-continue\r\n\r\n")
        #expect(try await connection.readStatus() == 413)
        let small = try await proxy.send("/upload", method: "POST", body: Array(repeating: 1, count: 512))
        #expect(small.status == 200)
        #expect(origin.requests.map(\.body.count) == [512])
        let outcome = try await proxy.stop()
        #expect(outcome.status == 0, "\(outcome.err)")
    }

    @Test("a request collapsed behind a leader stuck at the origin goes to the origin itself after --lock-timeout")
    func lockTimeout() async throws {
        let release = DispatchSemaphore(value: 0)
        let origin = try LoopbackOrigin { _, index in
            if index == 1 { _ = release.wait(timeout: .now() + 120) } // the leader's fetch hangs
            return LoopbackOrigin.Response(status: 200, headers: [("Cache-Control", "max-age=600")], body: "n=\(index)")
        }
        defer { origin.stop() }
        let proxy = try await ProxyProcess.start(upstream: origin.url, ["--lock-timeout", "1"])
        let leader = Task { try await proxy.send("/slow") }
        try #require(await eventually { origin.requestCount > 0 }, "the leader reached the origin")
        let follower = Task { try await proxy.send("/slow") }
        _ = await eventually { origin.requestCount >= 2 }
        #expect(origin.requestCount == 2, "the follower is still waiting for the leader")
        let followed = try await follower.value
        #expect(followed.status == 200 && followed.text == "n=2")
        release.signal()
        #expect(try await leader.value.text == "n=1")
        let outcome = try await proxy.stop()
        #expect(outcome.status == 0, "\(outcome.err)")
    }
}

extension Sequence {
    /// `map` with an async transform, one element after the other.
    fileprivate func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}
