import Foundation
import HTTPTypes
import Synchronization

/// Test support: a small HTTP/1.1 origin on 127.0.0.1 that the tests start: it counts requests, records what
/// it received, and answers with a handler. One request per connection (`Connection: close`).
public final class LoopbackOrigin: Sendable {
    public struct Request: Sendable {
        public var method: String
        public var target: String
        public var headers: [(name: String, value: String)]
        /// The request body (read up to its Content-Length).
        public var body: [UInt8] = []
        /// When its head had been read: a test can time what happened between two servers' requests
        /// without counting how long its own task waited for a thread.
        public var received = ContinuousClock.now
        public func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }
    }

    public struct Response: Sendable {
        public var status: Int = 200
        public var headers: [(String, String)] = []
        public var body: [UInt8] = []
        /// Interim (1xx) status codes sent, each as a bare head, before the final response.
        public var interimStatuses: [Int] = []
        /// Close the connection after reading the request, without answering (an origin crash).
        public var closesWithoutResponse = false
        /// Reset the connection (RST) after reading the request, without answering.
        public var resetsWithoutResponse = false
        /// Send the body in chunks of 64 KiB (`Transfer-Encoding: chunked`, no `Content-Length`):
        /// a response whose length the receiver learns only at its end.
        public var chunked = false
        public init(status: Int = 200, headers: [(String, String)] = [], body: String = "") {
            self.status = status
            self.headers = headers
            self.body = Array(body.utf8)
        }
    }

    public let port: Int
    private let listener: Int32
    private let state = Mutex<(requests: [Request], handler: @Sendable (Request, Int) -> Response)>(
        ([], { _, _ in Response() }))
    private let stopped = Mutex(false)

    public init(_ handler: @escaping @Sendable (Request, Int) -> Response) throws {
        (listener, port) = try LoopbackSocket.listening()
        state.withLock { $0.handler = handler }
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    public var url: String { "http://127.0.0.1:\(port)" }
    public var requestCount: Int { state.withLock { $0.requests.count } }
    public var requests: [Request] { state.withLock { $0.requests } }

    /// Stops accepting: later connections are refused (the origin is "down"). Safe to call more
    /// than once. Only the accept thread closes the listening socket, after its last accept():
    /// closing it here would free the descriptor number while that thread may still use it, and
    /// a second stop() would close whatever another test opened under the same number.
    public func stop() {
        let first = stopped.withLock { wasStopped in
            defer { wasStopped = true }
            return !wasStopped
        }
        if first { shutdown(listener, Int32(SHUT_RDWR)) }
    }

    private func acceptLoop() {
        defer { close(listener) }
        while true {
            let client = accept(listener, nil, nil)
            if client >= 0 {
                // Each connection on a thread of its own: a client may open a connection and send
                // nothing on it for a while (AsyncHTTPClient's pool opens one per waiting request
                // and can leave a spare idle until its idle timeout, 60 s). Served one at a time,
                // such a connection held up every later one: in a parallel `swift test` the
                // collapsing tests then ran into their 30 s deadlines.
                let connection = Thread { [self] in serve(client) }
                connection.start()
            } else if stopped.withLock({ $0 }) || (errno != EINTR && errno != ECONNABORTED) {
                return
            }
        }
    }

    private func serve(_ fd: Int32) {
        defer { close(fd) }
        var data = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while !data.containsHeaderEnd {
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 { return }
            data += buffer[0..<n]
        }
        let headEnd = data.headerEnd!
        let lines = String(decoding: data[0..<headEnd], as: UTF8.self).components(separatedBy: "\r\n")
        let parts = lines[0].split(separator: " ")
        guard parts.count >= 2 else { return }
        let headers = lines.dropFirst().compactMap { line -> (name: String, value: String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        var request = Request(method: String(parts[0]), target: String(parts[1]), headers: headers)
        let contentLength = Int(request.header("Content-Length") ?? "0") ?? 0
        var body = Array(data[(headEnd + 4)...])
        while body.count < contentLength {
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 { break }
            body += buffer[0..<n]
        }
        request.headers = headers
        request.body = Array(body.prefix(contentLength))
        let (handler, index) = state.withLock { state -> (@Sendable (Request, Int) -> Response, Int) in
            state.requests.append(request)
            return (state.handler, state.requests.count)
        }
        let response = handler(request, index)
        if response.closesWithoutResponse { return }
        if response.resetsWithoutResponse {
            // SO_LINGER with a zero timeout: close(2) sends RST instead of FIN.
            var abort = linger(l_onoff: 1, l_linger: 0)
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort, socklen_t(MemoryLayout<linger>.size))
            return
        }
        for interim in response.interimStatuses {
            let line = Array("HTTP/1.1 \(interim) Interim\r\n\r\n".utf8)
            _ = line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        }
        var head = "HTTP/1.1 \(response.status) Status\r\n"
        for (name, value) in response.headers { head += "\(name): \(value)\r\n" }
        let hasBody = request.method != "HEAD" && response.status != 304 && response.status != 204
        if response.chunked {
            head += "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        } else {
            head += "Content-Length: \(hasBody ? response.body.count : 0)\r\nConnection: close\r\n\r\n"
        }
        var out = Array(head.utf8)
        if hasBody && response.chunked {
            var start = 0
            while start < response.body.count {
                let end = min(start + 65536, response.body.count)
                out += Array("\(String(end - start, radix: 16))\r\n".utf8) + response.body[start..<end] + [13, 10]
                start = end
            }
            out += Array("0\r\n\r\n".utf8)
        } else if hasBody {
            out += response.body
        }
        _ = out.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }
}

extension [UInt8] {
    fileprivate var headerEnd: Int? {
        guard count >= 4 else { return nil }
        for i in 0...(count - 4) where self[i] == 13 && self[i + 1] == 10 && self[i + 2] == 13 && self[i + 3] == 10 {
            return i
        }
        return nil
    }
    fileprivate var containsHeaderEnd: Bool { headerEnd != nil }
}

/// The tests' transport: one blocking HTTP/1.1 exchange per call over a fresh connection.
public enum LoopbackClient {
    public struct ConnectionRefused: Error {}

    public static func send(_ request: HTTPRequest, body: Data?) throws -> (HTTPResponse, Data) {
        let authority = request.authority ?? ""
        let port = Int(authority.split(separator: ":").last ?? "80") ?? 80
        guard let fd = try? LoopbackSocket.connected(to: port) else { throw ConnectionRefused() }
        defer { close(fd) }
        var head = "\(request.method.rawValue) \(request.path ?? "/") HTTP/1.1\r\nHost: \(authority)\r\n"
        for field in request.headerFields { head += "\(field.name.rawName): \(field.value)\r\n" }
        head += "Content-Length: \(body?.count ?? 0)\r\n\r\n"
        var out = Array(head.utf8)
        if let body { out += body }
        _ = out.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        var data = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 { break }
            data += buffer[0..<n]
        }
        guard let headEnd = data.headerEnd else { throw ConnectionRefused() }
        let lines = String(decoding: data[0..<headEnd], as: UTF8.self).components(separatedBy: "\r\n")
        let status = Int(lines[0].split(separator: " ")[1]) ?? 500
        var fields = HTTPFields()
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":"), let name = HTTPField.Name(String(line[..<colon])) else {
                continue
            }
            if name == .contentLength || name == .connection { continue }
            fields.append(
                HTTPField(name: name, value: line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        return (HTTPResponse(status: .init(code: status), headerFields: fields), Data(data[(headEnd + 4)...]))
    }
}
