import Foundation
import LoopbackOrigin
import TestProcess

/// A response as read off the wire.
struct RawResponse: Sendable {
    var status: Int
    /// Header lines in order, names as sent.
    var headers: [(name: String, value: String)]
    var body: [UInt8]
    /// Interim (1xx) statuses received before this response.
    var interim: [Int] = []

    func header(_ name: String) -> String? { headers.first { $0.name.lowercased() == name.lowercased() }?.value }
    func values(_ name: String) -> [String] {
        headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
    }
    var text: String { String(decoding: body, as: UTF8.self) }
    var cacheStatus: String? { header("X-Cache-Status") }
}

struct RawConnectionError: Error, CustomStringConvertible {
    var description: String
}

/// A blocking HTTP/1.1 client on one TCP connection (keep-alive), for byte-exact checks. Its
/// blocking reads run on TestProcess's `runBlocking` threads, never on Swift's global executor,
/// which runs the proxy's tasks (nor on a dispatch queue, which shares that executor's threads); a receive timeout bounds every read so a broken proxy fails a test, not the run.
final class RawConnection: @unchecked Sendable {
    private let fd: Int32
    private var pending: [UInt8] = []

    private init(fd: Int32) { self.fd = fd }

    static func open(port: Int) async throws -> RawConnection {
        try await runBlocking {
            do {
                // Reads wait up to 240 s (see ProxyFixture: a loaded run can be slow).
                return RawConnection(fd: try LoopbackSocket.connected(to: port, receiveTimeoutSeconds: 240))
            } catch {
                throw RawConnectionError(description: "connect to \(port): \(error)")
            }
        }
    }

    func close() { _ = Foundation.close(fd) }

    /// Sends raw bytes.
    func write(_ bytes: [UInt8]) async throws {
        try await runBlocking { [self] in
            var offset = 0
            while offset < bytes.count {
                let n = bytes[offset...].withUnsafeBytes { Foundation.write(fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue } // a signal (SIGCHLD of another test's child)
                guard n > 0 else { throw RawConnectionError(description: "write: errno \(errno)") }
                offset += n
            }
        }
    }

    func write(_ text: String) async throws { try await write(Array(text.utf8)) }

    /// Sends one request (Content-Length framing when there is a body) and reads its response.
    func exchange(_ method: String, _ target: String, headers: [(String, String)] = [], body: [UInt8]? = nil)
        async throws -> RawResponse
    {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: proxy.test\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if let body { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        try await write(Array(head.utf8) + (body ?? []))
        return try await readResponse(method: method)
    }

    /// Reads one response (after any 1xx); `method` says whether a body follows (HEAD: none).
    func readResponse(method: String = "GET") async throws -> RawResponse {
        try await runBlocking { [self] in try readResponseBlocking(method: method) }
    }

    /// Reads one response head and returns its status (for an interim 1xx the client waits for).
    func readStatus() async throws -> Int {
        try await runBlocking { [self] in
            let head = try readHead()
            let line = head.prefix { $0 != "\r" }
            let parts = line.split(separator: " ")
            guard parts.count >= 2, let status = Int(parts[1]) else {
                throw RawConnectionError(description: "bad status line: \(line)")
            }
            return status
        }
    }

    /// True when the peer has closed the connection (a read returns end of file).
    func isClosedByPeer() async throws -> Bool {
        try await runBlocking { [self] in
            if !pending.isEmpty { return false }
            var buffer = [UInt8](repeating: 0, count: 1024)
            let n = read(fd, &buffer, buffer.count)
            if n > 0 { pending += buffer[0..<n] }
            return n == 0
        }
    }

    private func readResponseBlocking(method: String) throws -> RawResponse {
        var interim: [Int] = []
        while true {
            let head = try readHead()
            let lines = head.components(separatedBy: "\r\n")
            let statusParts = lines[0].split(separator: " ", maxSplits: 2)
            guard statusParts.count >= 2, let status = Int(statusParts[1]) else {
                throw RawConnectionError(description: "bad status line: \(lines[0])")
            }
            let headers = lines.dropFirst().compactMap { line -> (name: String, value: String)? in
                guard let colon = line.firstIndex(of: ":") else { return nil }
                return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
            }
            if (100..<200).contains(status) {
                interim.append(status)
                continue
            }
            var response = RawResponse(status: status, headers: headers, body: [], interim: interim)
            if method == "HEAD" || status == 204 || status == 304 { return response }
            if let length = response.header("Content-Length").flatMap({ Int($0) }) {
                response.body = try readExactly(length)
            } else if response.header("Transfer-Encoding")?.lowercased().contains("chunked") == true {
                response.body = try readChunked()
            } else {
                response.body = try readToEnd()
            }
            return response
        }
    }

    private func fill() throws -> Bool {
        var buffer = [UInt8](repeating: 0, count: 65536)
        var n: Int
        // EINTR: a signal arrived (the SIGCHLD of another test's child, in a parallel run); read again.
        repeat { n = read(fd, &buffer, buffer.count) } while n < 0 && errno == EINTR
        if n < 0 { throw RawConnectionError(description: "read: errno \(errno)") }
        if n == 0 { return false }
        pending += buffer[0..<n]
        return true
    }

    private func readHead() throws -> String {
        while true {
            if let end = pending.firstRange(of: [13, 10, 13, 10]) {
                let head = String(decoding: pending[..<end.lowerBound], as: UTF8.self)
                pending.removeSubrange(..<end.upperBound)
                return head
            }
            guard try fill() else { throw RawConnectionError(description: "connection closed before a response head") }
        }
    }

    private func readLine() throws -> String {
        while true {
            if let end = pending.firstRange(of: [13, 10]) {
                let line = String(decoding: pending[..<end.lowerBound], as: UTF8.self)
                pending.removeSubrange(..<end.upperBound)
                return line
            }
            guard try fill() else { throw RawConnectionError(description: "connection closed in a chunk") }
        }
    }

    private func readExactly(_ count: Int) throws -> [UInt8] {
        while pending.count < count {
            guard try fill() else { throw RawConnectionError(description: "connection closed in a body") }
        }
        let bytes = Array(pending[..<count])
        pending.removeSubrange(..<count)
        return bytes
    }

    private func readChunked() throws -> [UInt8] {
        var body: [UInt8] = []
        while true {
            let sizeLine = try readLine()
            guard let size = Int(sizeLine.split(separator: ";")[0], radix: 16) else {
                throw RawConnectionError(description: "bad chunk size \(sizeLine)")
            }
            if size == 0 {
                while try !readLine().isEmpty {} // trailers
                return body
            }
            body += try readExactly(size)
            _ = try readLine()
        }
    }

    private func readToEnd() throws -> [UInt8] {
        while try fill() {}
        defer { pending = [] }
        return pending
    }

}
