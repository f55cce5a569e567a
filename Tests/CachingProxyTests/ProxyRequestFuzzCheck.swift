import AsyncHTTPClient
import Foundation
import NIOCore
import NIOEmbedded
import NIOHTTP1
import SharedURLCache
import Synchronization
@_spi(Testing) import CachingProxy
@_spi(Testing) import SharedURLCacheAsyncHTTPClient

/// The proxy's request path from raw client bytes (docs/Reliability.md T12): the fuzz target
/// FuzzProxyRequest in Fuzz/ compiles this very file (a symlink), and ProxyRequestFuzzReplayTests
/// runs Fuzz/FailCases/proxy-request and Fuzz/Seeds/proxy-request through it.
///
/// The bytes arrive on an in-memory channel (NIOAsyncTestingChannel) carrying the handlers a
/// `ProxyServer` gives every connection (``ProxyConnection``: NIO's decoder and pipelining
/// handler, the proxy's encoder and ProxyHandler), in front of a real CachingHTTPClient and
/// cache whose origin is a stand-in (``CachingHTTPClient/Configuration/originExchange``): no
/// socket is opened. A check returns normally or traps. Checked beyond "no crash":
///
/// - every request reaching the origin has a target under the upstream's base path with no
///   dot-segment (plain or percent-encoded), no hop-by-hop field, none of the fields the proxy
///   sets itself or drops (`Host`, `Content-Length`, `Expect`, `X-Forwarded-Host`,
///   `X-Original-URL`, `X-Rewrite-URL`, the method-override family), one `X-Forwarded-Proto: http`,
///   its own `Via` last, and (for a single request) none of the names its `Connection` listed;
///   its body is never larger than the proxy's limit;
/// - the bytes written back are a sequence of HTTP/1.0 or HTTP/1.1 responses, each framed
///   (Content-Length, chunked, or closed after), no more final responses than requests plus one,
///   nothing after a `Connection: close` response, and no hop-by-hop field of the origin's.
public enum ProxyRequestFuzzCheck {
    /// The proxy's request body limit in this check: small, so that 413 is reached.
    static let maximumRequestBodyBytes = 2048
    /// The hop-by-hop names, those the proxy sets and those it drops by default.
    static let neverUpstream: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "te", "transfer-encoding", "upgrade", "proxy-authenticate",
        "proxy-authorization", "trailer", "host", "content-length", "expect", "x-forwarded-host", "x-original-url",
        "x-rewrite-url", "x-http-method-override", "x-http-method", "x-method-override",
    ]

    /// What one input's run shares with the stand-in origin.
    struct Run {
        var authority = ""
        var connectionListed: Set<String> = []
        var exchanges = 0
        /// Origin exchanges waiting for more of a request body.
        var awaitingBody = 0
        /// Bumped by every step the origin takes.
        var progress = 0
    }

    static let run = Mutex(Run())

    struct Fixture: Sendable {
        let cache: SharedCache
        let client: CachingHTTPClient
    }

    nonisolated(unsafe) static var fixture: Fixture?
    static let inputs = Atomic<Int>(0)

    /// One cache per process, in a temporary directory (on /dev/shm when there is one) removed
    /// at exit; every input uses a host of its own, so no input sees another's entries.
    static func setUp() -> Fixture {
        if let fixture { return fixture }
        let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
        let dir = base + "/suc-proxyfuzz-\(getpid())"
        try? FileManager.default.removeItem(atPath: dir)
        atexit {
            let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
            try? FileManager.default.removeItem(atPath: base + "/suc-proxyfuzz-\(getpid())")
        }
        let cache = try! SharedCache(
            memoryCapacity: 4 << 20, diskCapacity: 16 << 20, directory: URL(fileURLWithPath: dir))
        var configuration = ProxyConfiguration(mode: .forward).client
        configuration.originExchange = { request, _ in try await origin(request) }
        let client = try! CachingHTTPClient(cache: cache, configuration: configuration)
        fixture = Fixture(cache: cache, client: client)
        return fixture!
    }

    // MARK: The input

    /// Runs `data` as the bytes a client sent on one connection, then closes it. One input at a
    /// time: the stand-in origin is shared by the process.
    public static func check(_ data: [UInt8]) async {
        let fixture = setUp()
        let n = inputs.add(1, ordering: .relaxed).newValue
        let authority = "o\(n).test"
        let requests = ObservedRequests(data)
        run.withLock {
            $0 = Run(authority: authority)
            if requests.heads.count == 1 { $0.connectionListed = requests.connectionListed }
        }
        var configuration = ProxyConfiguration(mode: .reverse(try! .init("http://\(authority)/base")))
        configuration.accessLog = false
        configuration.maximumRequestBodyBytes = maximumRequestBodyBytes
        configuration.cacheStatusName = "fuzz"
        configuration.cacheStatusHeader = "X-Cache-Status"
        let connection = ProxyConnection(configuration: configuration, client: fixture.client)
        let channel = NIOAsyncTestingChannel()
        try! await channel.testingEventLoop.executeInContext {
            try connection.addHandlers(to: channel)
            try channel.pipeline.syncOperations.addHandler(SocketWrites(), position: .first)
        }
        try! await channel.connect(to: SocketAddress(ipAddress: "192.0.2.1", port: 40000)).get()

        // How the bytes arrive: whole, in 16-byte reads, or in 100-byte reads with the answers
        // to what was read so far settled in between (the input's length picks one).
        let (size, settlesBetween): (Int, Bool) =
            switch data.count % 3 {
            case 0: (max(data.count, 1), false)
            case 1: (16, false)
            default: (100, true)
            }
        var offset = 0
        while offset < data.count, channel.isActive {
            let end = min(offset + size, data.count)
            _ = try? await channel.writeInbound(ByteBuffer(bytes: data[offset..<end]))
            offset = end
            if settlesBetween { await settle(channel, connection) }
        }
        await settle(channel, connection)
        // The client goes away: a body never finished fails its origin exchange.
        try? await channel.close()
        await settle(channel, connection)
        var spins = 0
        while connection.answersInFlight > 0 {
            spins += 1
            precondition(spins < 200_000, "an answer still running after its connection closed")
            await channel.testingEventLoop.run()
            await Task.yield()
        }
        await channel.testingEventLoop.run()
        var written: [UInt8] = []
        while let part = try? await channel.readOutbound(as: IOData.self) {
            guard case .byteBuffer(let buffer) = part else { preconditionFailure("a file region written") }
            written += buffer.readableBytesView
        }
        // For triage: `PROXY_FUZZ_PRINT=1 FuzzProxyRequest FILE` shows what the proxy wrote.
        if ProcessInfo.processInfo.environment["PROXY_FUZZ_PRINT"] == "1" {
            FileHandle.standardError.write(
                Data((String(decoding: written, as: UTF8.self).debugDescription + "\n").utf8))
        }
        checkResponses(written, to: requests)
    }

    /// Runs the loop and waits for the answers in tasks until none runs, or until those left
    /// wait for request bytes that are not coming (no progress while the origin awaits a body).
    static func settle(_ channel: NIOAsyncTestingChannel, _ connection: ProxyConnection) async {
        var still = 0
        while true {
            await channel.testingEventLoop.run()
            if connection.answersInFlight == 0 {
                await channel.testingEventLoop.run()
                if connection.answersInFlight == 0 { return }
            }
            let before = run.withLock { $0.progress }
            await Task.yield()
            let (after, awaiting) = run.withLock { ($0.progress, $0.awaitingBody) }
            still = after == before && awaiting > 0 ? still + 1 : 0
            if still > 200 { return }
        }
    }

    /// A socket takes no write once it is closed (NIO fails it); the in-memory channel would
    /// keep it, as if it reached the client.
    final class SocketWrites: ChannelOutboundHandler {
        typealias OutboundIn = IOData
        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            guard context.channel.isActive else {
                promise?.fail(ChannelError.ioOnClosedChannel)
                return
            }
            context.write(data, promise: promise)
        }
    }

    // MARK: The stand-in origin

    /// Checks what reached the origin, reads its body, and answers by a hash of its target.
    static func origin(_ request: HTTPClientRequest) async throws -> HTTPClientResponse {
        let (authority, listed) = run.withLock { run -> (String, Set<String>) in
            run.exchanges += 1
            run.progress += 1
            return (run.authority, run.connectionListed)
        }
        checkUpstream(request, authority: authority, connectionListed: listed)
        var received = 0
        if let body = request.body {
            var iterator = body.makeAsyncIterator()
            while true {
                run.withLock { $0.awaitingBody += 1 }
                let chunk: ByteBuffer?
                do {
                    chunk = try await iterator.next()
                } catch {
                    run.withLock {
                        $0.awaitingBody -= 1
                        $0.progress += 1
                    }
                    throw error
                }
                run.withLock {
                    $0.awaitingBody -= 1
                    $0.progress += 1
                }
                guard let chunk else { break }
                received += chunk.readableBytes
                precondition(
                    received <= maximumRequestBodyBytes, "a request body of \(received) bytes reached the origin")
            }
        }
        let url = request.url
        var hash: UInt32 = 2_166_136_261
        for byte in url.utf8 { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
        var headers = HTTPHeaders()
        var status = HTTPResponseStatus.ok
        var body = ByteBuffer(string: "origin \(request.method.rawValue) \(received)\n")
        switch hash % 4 {
        case 0:
            headers.add(name: "Cache-Control", value: "max-age=60")
            headers.add(name: "ETag", value: "\"a\"")
            headers.add(name: "Vary", value: "Accept-Encoding")
        case 1:
            headers.add(name: "Cache-Control", value: "no-cache")
            headers.add(name: "ETag", value: "\"b\"")
            if request.headers["if-none-match"].contains(where: { $0.contains("\"b\"") }) {
                status = .notModified
                body = ByteBuffer()
            }
        case 2:
            // Hop-by-hop fields of the origin's connection, which must not reach the client.
            headers.add(name: "Connection", value: "X-Hop, keep-alive")
            headers.add(name: "X-Hop", value: "1")
            headers.add(name: "Keep-Alive", value: "timeout=5")
            headers.add(name: "Transfer-Encoding", value: "chunked")
            headers.add(name: "Cache-Control", value: "public, max-age=5")
        default:
            status = .notFound
            headers.add(name: "Cache-Control", value: "max-age=30")
        }
        if request.method == .HEAD || status == .notModified { body = ByteBuffer() }
        if hash % 4 != 2 { headers.add(name: "Content-Length", value: String(body.readableBytes)) }
        return HTTPClientResponse(status: status, headers: headers, body: .bytes(body))
    }

    /// The invariants of a request as it reaches the origin.
    static func checkUpstream(_ request: HTTPClientRequest, authority: String, connectionListed: Set<String>) {
        let prefix = "http://\(authority)/base/"
        precondition(request.url.hasPrefix(prefix), "upstream URL outside the base: \(request.url.debugDescription)")
        let target = request.url.dropFirst(prefix.count - 1)
        let path = target.prefix { $0 != "?" && $0 != "#" }
        for segment in path.split(separator: "/", omittingEmptySubsequences: false) {
            let decoded = segment.replacingOccurrences(of: "%2e", with: ".", options: .caseInsensitive)
            precondition(decoded != "." && decoded != "..", "a dot-segment upstream: \(request.url.debugDescription)")
        }
        precondition(isToken(request.method.rawValue), "upstream method \(request.method.rawValue.debugDescription)")
        var forwardedProto: [String] = []
        var via: [String] = []
        for (name, value) in request.headers {
            let lowered = name.lowercased()
            precondition(isToken(name), "upstream field name \(name.debugDescription)")
            precondition(
                !value.utf8.contains { $0 == 0 || $0 == 10 || $0 == 13 },
                "upstream field value \(value.debugDescription)")
            precondition(!neverUpstream.contains(lowered), "\(name) forwarded upstream")
            precondition(!connectionListed.contains(lowered), "\(name), listed in Connection, forwarded upstream")
            if lowered == "x-forwarded-proto" { forwardedProto.append(value) }
            if lowered == "via" { via.append(value) }
        }
        precondition(forwardedProto == ["http"], "upstream X-Forwarded-Proto \(forwardedProto)")
        precondition(via.last == "1.1 urlcache", "upstream Via \(via)")
    }

    // MARK: The client's side

    /// The requests in the input as NIO's decoder reads them on its own (a channel of its own):
    /// their methods, in order, and the names the `Connection` fields listed.
    struct ObservedRequests {
        var heads: [HTTPRequestHead] = []
        var connectionListed: Set<String> = []

        final class Collector: ChannelInboundHandler, Sendable {
            typealias InboundIn = HTTPServerRequestPart
            let heads = Mutex<[HTTPRequestHead]>([])
            func channelRead(context: ChannelHandlerContext, data: NIOAny) {
                if case .head(let head) = unwrapInboundIn(data) { heads.withLock { $0.append(head) } }
            }
            func errorCaught(context: ChannelHandlerContext, error: any Error) {}
        }

        init(_ data: [UInt8]) {
            let collector = Collector()
            let channel = EmbeddedChannel()
            try! channel.pipeline.syncOperations.addHandlers([
                ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .dropBytes)), collector,
            ])
            _ = try? channel.writeInbound(ByteBuffer(bytes: data))
            // Finished open: one closed before `finish` was never released (7 KB an input).
            _ = try? channel.finish()
            heads = collector.heads.withLock { $0 }
            for head in heads {
                for line in head.headers["connection"] {
                    for name in line.split(separator: ",") {
                        connectionListed.insert(name.trimmingCharacters(in: .whitespaces).lowercased())
                    }
                }
            }
        }
    }

    /// The response invariants over everything written back on the connection.
    static func checkResponses(_ bytes: [UInt8], to requests: ObservedRequests) {
        var reader = ResponseReader(bytes: bytes[...])
        var finals = 0
        while !reader.atEnd {
            let response = reader.head()
            let lowered = response.fields.map { ($0.0.lowercased(), $0.1) }
            for (name, value) in lowered {
                precondition(!["x-hop", "keep-alive", "proxy-connection", "upgrade", "te", "trailer"].contains(name))
                if name == "transfer-encoding" { precondition(value == "chunked", "Transfer-Encoding: \(value)") }
                if name == "connection" {
                    precondition(value == "close" || value == "keep-alive", "Connection: \(value)")
                }
            }
            if (100..<200).contains(response.status) {
                precondition(response.status == 100, "interim response \(response.status)")
                continue
            }
            let request = finals < requests.heads.count ? requests.heads[finals] : nil
            finals += 1
            precondition(finals <= requests.heads.count + 1, "more responses than requests")
            if request == nil {
                // The answer to bytes the parser rejected.
                precondition([400, 501].contains(response.status), "status \(response.status) for no request")
            }
            let lengths = Set(lowered.filter { $0.0 == "content-length" }.map(\.1))
            let chunked = lowered.contains { $0.0 == "transfer-encoding" }
            precondition(lengths.count <= 1, "Content-Length \(lengths)")
            precondition(lengths.isEmpty || !chunked, "Content-Length with Transfer-Encoding")
            let closes = lowered.contains { $0 == ("connection", "close") }
            let noBody =
                request?.method == .HEAD || response.status == 204 || response.status == 304
                || request?.method == .CONNECT
            if noBody {
                precondition(!chunked || request?.method == .HEAD, "chunked framing on a response without a body")
            } else if let length = lengths.first {
                let count = Int(length)
                precondition(count != nil && count! >= 0, "Content-Length \(length)")
                reader.skip(count!)
            } else if chunked {
                reader.chunks()
            } else {
                precondition(closes, "a response of unknown length on a kept connection")
                reader.skip(reader.remaining)
            }
            if closes { precondition(reader.atEnd, "bytes after a Connection: close response") }
        }
    }

    /// A strict reader of HTTP/1.x responses.
    struct ResponseReader {
        var bytes: ArraySlice<UInt8>
        var atEnd: Bool { bytes.isEmpty }
        var remaining: Int { bytes.count }

        mutating func line() -> String {
            guard let lf = bytes.firstIndex(of: 10), lf > bytes.startIndex, bytes[lf - 1] == 13 else {
                preconditionFailure("a response line without CRLF")
            }
            let text = bytes[bytes.startIndex..<(lf - 1)]
            precondition(!text.contains(13) && !text.contains(0), "CR or NUL in a response line")
            bytes = bytes[(lf + 1)...]
            return String(decoding: text, as: UTF8.self)
        }

        mutating func head() -> (status: Int, fields: [(String, String)]) {
            let statusLine = line()
            let parts = statusLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
            precondition(parts.count >= 2, "status line \(statusLine.debugDescription)")
            precondition(parts[0] == "HTTP/1.1" || parts[0] == "HTTP/1.0", "version in \(statusLine.debugDescription)")
            precondition(parts[1].count == 3 && parts[1].allSatisfy(\.isASCII), "status \(statusLine.debugDescription)")
            guard let status = Int(parts[1]) else { preconditionFailure("status \(statusLine.debugDescription)") }
            var fields: [(String, String)] = []
            while true {
                let field = line()
                if field.isEmpty { break }
                guard let colon = field.firstIndex(of: ":") else {
                    preconditionFailure("field \(field.debugDescription)")
                }
                let name = String(field[..<colon])
                precondition(isToken(name), "field name \(name.debugDescription)")
                fields.append((name, field[field.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
            }
            return (status, fields)
        }

        mutating func skip(_ count: Int) {
            precondition(bytes.count >= count, "a body shorter than its Content-Length")
            bytes = bytes.dropFirst(count)
        }

        mutating func chunks() {
            while true {
                let sizeLine = line()
                let digits = sizeLine.prefix { $0 != ";" }
                guard let size = Int(digits, radix: 16), size >= 0 else {
                    preconditionFailure("chunk size \(sizeLine.debugDescription)")
                }
                if size == 0 {
                    while !line().isEmpty {} // trailer fields
                    return
                }
                skip(size)
                precondition(line().isEmpty, "chunk data longer than its size")
            }
        }
    }

    static func isToken(_ text: String) -> Bool {
        !text.isEmpty
            && text.utf8.allSatisfy { byte in
                (0x21...0x7E).contains(byte) && !"\"(),/:;<=>?@[\\]{}".utf8.contains(byte)
            }
    }
}
