import Foundation
import LoopbackOrigin
import Synchronization

/// A loopback HTTP/1.1 origin that generates its bodies as it sends them, so a 50 MiB response
/// costs it one 64 KiB chunk of memory (LoopbackOrigin holds whole bodies, and memory figures
/// would then measure the origin). Paths:
/// - `/big…`: `PatternBody` of `bigBytes`, Content-Length, `max-age=600`;
/// - `/chunked…`: the same pattern, `chunkedBytes` long, chunked transfer coding (no length);
/// - `/abort…`: announces `bigBytes`, sends `abortAfterBytes`, then closes the connection.
/// Keep-alive connections serve requests one after another.
final class StreamingOrigin: Sendable {
    let port: Int
    let bigBytes: Int
    let chunkedBytes: Int
    let abortAfterBytes: Int
    private let listener: Int32
    private let counts = Mutex<[String: Int]>([:])
    private let stopped = Atomic<Bool>(false)

    init(bigBytes: Int, chunkedBytes: Int = 3 << 20, abortAfterBytes: Int = 1 << 20) throws {
        self.bigBytes = bigBytes
        self.chunkedBytes = chunkedBytes
        self.abortAfterBytes = abortAfterBytes
        (listener, port) = try LoopbackSocket.listening()
        Thread { [self] in acceptLoop() }.start()
    }

    var url: String { "http://127.0.0.1:\(port)" }

    /// Requests served for paths starting with `prefix`.
    func requests(_ prefix: String) -> Int {
        counts.withLock { $0.filter { $0.key.hasPrefix(prefix) }.values.reduce(0, +) }
    }

    /// Stops accepting; the accept thread closes the socket (exactly once).
    func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        shutdown(listener, Int32(SHUT_RDWR))
    }

    private func acceptLoop() {
        while !stopped.load(ordering: .relaxed) {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                break
            }
            var one: Int32 = 1
            setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            Thread { [self] in serve(client) }.start()
        }
        close(listener)
    }

    private func serve(_ fd: Int32) {
        defer { close(fd) }
        var pending = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        while true {
            // One request head (GETs only: no request bodies).
            var headEnd: Int?
            while headEnd == nil {
                if let range = Self.find([13, 10, 13, 10], in: pending) {
                    headEnd = range
                    break
                }
                let n = read(fd, &buffer, buffer.count)
                if n <= 0 { return }
                pending += buffer[0..<n]
            }
            let head = String(decoding: pending[0..<headEnd!], as: UTF8.self)
            pending.removeFirst(headEnd! + 4)
            let target = head.split(separator: " ").dropFirst().first.map(String.init) ?? "/"
            counts.withLock { $0[target, default: 0] += 1 }
            guard respond(to: target, on: fd) else { return }
        }
    }

    /// Sends the response for `target`; false when the connection must close.
    private func respond(to target: String, on fd: Int32) -> Bool {
        if target.hasPrefix("/chunked") {
            guard send(fd, "HTTP/1.1 200 OK\r\nCache-Control: max-age=600\r\nTransfer-Encoding: chunked\r\n\r\n") else {
                return false
            }
            var offset = 0
            while offset < chunkedBytes {
                let count = min(PatternBody.chunk, chunkedBytes - offset)
                guard send(fd, String(count, radix: 16) + "\r\n"),
                    send(fd, PatternBody.bytes(offset: offset, count: count)),
                    send(fd, "\r\n")
                else { return false }
                offset += count
            }
            return send(fd, "0\r\n\r\n")
        }
        let aborts = target.hasPrefix("/abort")
        guard target.hasPrefix("/big") || aborts else {
            return send(fd, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
        }
        guard send(fd, "HTTP/1.1 200 OK\r\nCache-Control: max-age=600\r\nContent-Length: \(bigBytes)\r\n\r\n") else {
            return false
        }
        let end = aborts ? abortAfterBytes : bigBytes
        var offset = 0
        while offset < end {
            let count = min(PatternBody.chunk, end - offset)
            guard send(fd, PatternBody.bytes(offset: offset, count: count)) else { return false }
            offset += count
        }
        return !aborts // an aborted body ends with the connection
    }

    private func send(_ fd: Int32, _ text: String) -> Bool { send(fd, Array(text.utf8)) }

    private func send(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            sent += n
        }
        return true
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for i in 0...(haystack.count - needle.count)
        where haystack[i] == needle[0] && Array(haystack[i..<(i + needle.count)]) == needle {
            return i
        }
        return nil
    }
}

/// The origin's body, computable at any offset: 64-byte lines, each a hex line number padded
/// with dots and ended by a newline (compressible, and a shifted or lost chunk is caught).
enum PatternBody {
    static let chunk = 64 << 10

    static func bytes(offset: Int, count: Int) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            var line = [UInt8](repeating: UInt8(ascii: "."), count: 64)
            var written = 0
            var position = offset
            while written < count {
                let number = position / 64
                let column = position % 64
                // The line: hex digits of its number, dots, a newline.
                var digits = 1
                while number >> (4 * digits) != 0 { digits += 1 }
                for i in 0..<64 { line[i] = UInt8(ascii: ".") }
                for i in 0..<digits {
                    let nibble = (number >> (4 * (digits - 1 - i))) & 15
                    line[i] = nibble < 10 ? UInt8(ascii: "0") + UInt8(nibble) : UInt8(ascii: "a") + UInt8(nibble - 10)
                }
                line[63] = 10
                let take = Swift.min(64 - column, count - written)
                for i in 0..<take { buffer[written + i] = line[column + i] }
                written += take
                position += take
            }
            initialized = count
        }
    }

    /// Checks a body chunk by chunk without holding it: call `check` per chunk, then `isComplete`.
    struct Verifier {
        let expectedBytes: Int
        var offset = 0
        var equal = true

        mutating func check(_ chunk: some Collection<UInt8>) {
            if equal {
                let expected = PatternBody.bytes(offset: offset, count: chunk.count)
                equal =
                    offset + chunk.count <= expectedBytes
                    && (chunk.withContiguousStorageIfAvailable { got in
                        got.isEmpty
                            || expected.withUnsafeBufferPointer {
                                memcmp($0.baseAddress!, got.baseAddress!, got.count) == 0
                            }
                    } ?? expected.elementsEqual(chunk))
            }
            offset += chunk.count
        }

        var isComplete: Bool { equal && offset == expectedBytes }
    }
}
