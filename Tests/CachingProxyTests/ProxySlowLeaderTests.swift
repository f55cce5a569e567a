import Foundation
import LoopbackOrigin
import Testing
import TestProcess

/// A real `urlcache proxy` process whose collapsing leader's client reads nothing: the leader's
/// fetch and store go on at the origin's pace, so the requests that wait on it are answered from
/// the stored entry as soon as the origin has sent it, not after the lock timeout, and the origin
/// is asked once. The stalled client still gets the whole body when it reads at last, or is cut
/// off by the send timeout without the entry being touched.
@Suite(.blockingWaits, .timeLimit(.minutes(10)))
struct ProxySlowLeaderTests {
    static let size = 16 << 20
    static let body: [UInt8] = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }
    /// How long a follower waits for its leader here: long enough for the leader's store of the
    /// body even in a debug build on a loaded machine (a few MiB/s), so that B, answered within
    /// it, was served by the store and not by giving up on A.
    static let lockTimeout = 30.0

    /// An origin serving the 16 MiB body, cacheable for a minute.
    static func origin() throws -> LoopbackOrigin {
        try LoopbackOrigin { _, _ in
            var response = LoopbackOrigin.Response(status: 200, headers: [("Cache-Control", "max-age=60")])
            response.body = Self.body
            return response
        }
    }

    /// Client A: a connection with a 4 KiB receive buffer that sends `GET target` and reads
    /// nothing, until the origin has been asked (so A leads).
    static func stalledLeader(port: Int, target: String, origin: LoopbackOrigin) async throws -> Int32 {
        let fd = try await runBlocking { () -> Int32 in
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var small: Int32 = 4096
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
            var timeout = timeval(tv_sec: 120, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = UInt16(port).bigEndian
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard connected == 0 else { throw RawConnectionError(description: "connect: errno \(errno)") }
            let request = Array("GET \(target) HTTP/1.1\r\nHost: proxy.test\r\n\r\n".utf8)
            _ = request.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            return fd
        }
        _ = await eventually { origin.requestCount >= 1 }
        #expect(origin.requestCount == 1, "A's request did not reach the origin")
        return fd
    }

    /// Reads one response from `fd` to the end of its `Content-Length` body: its status and
    /// whether the body is ``body``; nil when the connection ended first.
    static func readAll(_ fd: Int32) -> (status: Int, complete: Bool)? {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        func fill() -> Bool {
            let n = read(fd, &buffer, buffer.count)
            if n < 0 && errno == EINTR { return true }
            guard n > 0 else { return false }
            received += buffer[0..<n]
            return true
        }
        var headEnd: Int?
        while headEnd == nil {
            guard fill() else { return nil }
            headEnd = received.indices.dropLast(3).first { received[$0..<$0 + 4] == [13, 10, 13, 10] }
        }
        let head = String(decoding: received[..<headEnd!], as: UTF8.self).lowercased()
        let status = Int(head.split(separator: " ")[1]) ?? 0
        guard let lengthLine = head.components(separatedBy: "\r\n").first(where: { $0.hasPrefix("content-length:") }),
            let length = Int(lengthLine.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces))
        else { return (status, false) }
        let start = headEnd! + 4
        while received.count - start < length {
            guard fill() else { return nil }
        }
        return (status, length == size && received[start...].elementsEqual(body))
    }

    /// B and C, each on a connection of its own: their answers and how long the slower one took.
    static func followers(_ proxy: ProxyProcess, _ target: String) async throws -> ([RawResponse], Duration) {
        let started = ContinuousClock.now
        let answers = try await withThrowingTaskGroup(of: RawResponse.self) { group in
            for _ in 0..<2 { group.addTask { try await proxy.send(target) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        return (answers, ContinuousClock.now - started)
    }

    @Test("a leader whose client reads nothing: B and C get the whole body from the store, one origin fetch")
    func stalledLeaderHoldsNobody() async throws {
        let origin = try Self.origin()
        defer { origin.stop() }
        let proxy = try await ProxyProcess.start(
            upstream: origin.url, ["--lock-timeout", String(Int(Self.lockTimeout))])
        let a = try await Self.stalledLeader(port: proxy.port, target: "/big", origin: origin)
        defer { close(a) }

        let (answers, took) = try await Self.followers(proxy, "/big")
        print("followers of a stalled leader answered in \(took)")
        #expect(answers.allSatisfy { $0.status == 200 && $0.body == Self.body }, "\(answers.map(\.status))")
        #expect(answers.allSatisfy { $0.cacheStatus == "HIT" }, "\(answers.map { $0.cacheStatus ?? "-" })")
        #expect(took < .seconds(Self.lockTimeout * 2 / 3), "B and C waited on A's reading: \(took)")
        #expect(origin.requestCount == 1, "a follower went to the origin itself")

        // A, reading at last, gets the whole body; a later request is a hit.
        let aRead = try await runBlocking { Self.readAll(a) }
        #expect(aRead?.status == 200 && aRead?.complete == true, "A: \(String(describing: aRead))")
        let later = try await proxy.send("/big")
        #expect(later.cacheStatus == "HIT" && later.body == Self.body)
        #expect(origin.requestCount == 1)
        let outcome = try await proxy.stop()
        #expect(outcome.status == 0, "\(outcome.err)")
    }

    @Test("a leader's client cut off by --send-timeout: what it fetched stays stored, the next request is a hit")
    func stalledLeaderCutOffKeepsEntry() async throws {
        let origin = try Self.origin()
        defer { origin.stop() }
        let proxy = try await ProxyProcess.start(
            upstream: origin.url, ["--lock-timeout", String(Int(Self.lockTimeout)), "--send-timeout", "1"])
        let a = try await Self.stalledLeader(port: proxy.port, target: "/cut", origin: origin)
        defer { close(a) }

        // A reads nothing until the proxy has closed it (its writes stalled past the send timeout).
        let aRead = try await runBlocking { () -> (status: Int, complete: Bool)? in
            var waiting: Int32 = 0
            // A stall shows only as bytes that stop growing: sampled every 250 ms.
            for _ in 0..<240 {
                usleep(250_000)
                var now: Int32 = 0
                _ = ioctl(a, UInt(FIONREAD), &now)
                if now > 0 && now == waiting { break } // nothing more arrives: the writes stalled
                waiting = now
            }
            sleep(3) // past the 1 s send timeout: the proxy closes A
            return Self.readAll(a)
        }
        #expect(aRead == nil, "A got the whole answer: the send timeout cut nothing")

        let (answers, took) = try await Self.followers(proxy, "/cut")
        #expect(answers.allSatisfy { $0.status == 200 && $0.body == Self.body }, "\(answers.map(\.status))")
        #expect(answers.allSatisfy { $0.cacheStatus == "HIT" }, "\(answers.map { $0.cacheStatus ?? "-" })")
        #expect(took < .seconds(Self.lockTimeout * 2 / 3), "\(took)")
        #expect(origin.requestCount == 1, "the leader's store was abandoned with its client")
        let outcome = try await proxy.stop()
        #expect(outcome.status == 0, "\(outcome.err)")
    }
}
