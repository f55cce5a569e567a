import Foundation
import LoopbackOrigin
import Synchronization
import Testing
import TestProcess

/// Request bodies stream through a real `urlcache proxy` process to the origin: 16 concurrent
/// uploads of 32 MiB add less than 64 MiB to its resident memory (buffered whole, they added
/// over 300 MiB). The origin here reads and drops what it receives, so that the test process
/// does not hold half a gigabyte either.
@Suite(.blockingWaits, .serialized, .timeLimit(.minutes(10)))
struct ProxyUploadMemoryTests {
    /// An origin that reads each request's `Content-Length` bytes, counts them, drops them and
    /// answers `200 received N`. One thread per connection.
    final class DiscardingOrigin: Sendable {
        let port: Int
        private let listener: Int32
        let received = Mutex<[Int]>([])

        init() throws {
            (listener, port) = try LoopbackSocket.listening(backlog: 64)
            let thread = Thread { [self] in
                while true {
                    let fd = accept(listener, nil, nil)
                    if fd < 0 {
                        if errno == EINTR || errno == ECONNABORTED { continue }
                        return
                    }
                    Thread { [self] in serve(fd) }.start()
                }
            }
            thread.start()
        }

        func stop() { shutdown(listener, Int32(SHUT_RDWR)) }

        private func serve(_ fd: Int32) {
            defer { close(fd) }
            var head = [UInt8]()
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            var bodyStart = 0
            while true {
                let n = read(fd, &buffer, buffer.count)
                if n <= 0 { return }
                head += buffer[0..<n]
                if let end = Self.headEnd(head) {
                    bodyStart = end
                    break
                }
            }
            let text = String(decoding: head[0..<bodyStart], as: UTF8.self).lowercased()
            let length =
                text.components(separatedBy: "\r\n").first { $0.hasPrefix("content-length:") }
                .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
            var got = head.count - bodyStart
            while got < length {
                let n = read(fd, &buffer, buffer.count)
                if n <= 0 { return }
                got += n
            }
            received.withLock { $0.append(got) }
            let body = "received \(got)"
            let answer = "HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
            _ = Array(answer.utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        }

        private static func headEnd(_ bytes: [UInt8]) -> Int? {
            guard bytes.count >= 4 else { return nil }
            for i in 0...(bytes.count - 4)
            where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
                return i + 4
            }
            return nil
        }
    }

    /// A process's resident memory and its peak so far, in bytes (`/proc/PID/status`).
    static func residentBytes(of pid: pid_t) -> (now: Int, peak: Int) {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        func kilobytes(_ field: String) -> Int {
            let line = status.components(separatedBy: "\n").first { $0.hasPrefix(field + ":") } ?? ""
            return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
        }
        return (kilobytes("VmRSS"), kilobytes("VmHWM"))
    }

    @Test("16 concurrent POSTs of 32 MiB stream to the origin and add less than 64 MiB of resident memory")
    func uploadsStream() async throws {
        let origin = try DiscardingOrigin()
        defer { origin.stop() }
        let proxy = try await ProxyProcess.start(upstream: "http://127.0.0.1:\(origin.port)")
        // A request first, so that the baseline includes what any first request sets up.
        _ = try await proxy.send("/warm", method: "POST", body: Array(repeating: 7, count: 1024))
        let before = Self.residentBytes(of: proxy.child.pid)

        let size = 32 << 20
        let port = proxy.port
        let answers = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<16 {
                group.addTask {
                    try await runBlocking {
                        let fd = try LoopbackSocket.connected(to: port, receiveTimeoutSeconds: 240)
                        defer { close(fd) }
                        let head = "POST /upload HTTP/1.1\r\nHost: proxy.test\r\nContent-Length: \(size)\r\n\r\n"
                        var pending = Array(head.utf8)
                        let chunk = [UInt8](repeating: UInt8(ascii: "u"), count: 1 << 20)
                        for _ in 0..<32 {
                            pending += chunk
                            var offset = 0
                            while offset < pending.count {
                                let n = pending[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                                if n < 0 && errno == EINTR { continue }
                                guard n > 0 else { return "write failed: errno \(errno)" }
                                offset += n
                            }
                            pending = []
                        }
                        var response = [UInt8]()
                        var buffer = [UInt8](repeating: 0, count: 4096)
                        while true {
                            let n = read(fd, &buffer, buffer.count)
                            if n <= 0 { break }
                            response += buffer[0..<n]
                            if String(decoding: response, as: UTF8.self).contains("received") { break }
                        }
                        return String(decoding: response, as: UTF8.self)
                    }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let after = Self.residentBytes(of: proxy.child.pid)
        #expect(answers.allSatisfy { $0.hasPrefix("HTTP/1.1 200") && $0.hasSuffix("received \(size)") }, "\(answers)")
        #expect(origin.received.withLock { $0.filter { $0 == size }.count } == 16)
        let added = after.peak - before.now
        #expect(added < 64 << 20, "resident memory grew by \(added >> 20) MiB (peak \(after.peak >> 20) MiB)")
        let outcome = try await proxy.stop()
        #expect(outcome.status == 0, "\(outcome.err)")
    }
}
