@testable import CachingProxy
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

/// ProxyResponseEncoder writes what NIO's HTTPResponseEncoder wrote, byte for byte, for
/// the responses the proxy sends (its framing is what ProxyHandler relies on), in fewer writes.
struct ProxyResponseEncoderTests {
    /// What an encoder hands to the channel for `parts` written and then flushed once.
    struct Output: Equatable {
        var bytes: [UInt8]
        var writes: Int
        var text: String { String(decoding: bytes, as: UTF8.self) }
    }

    static func encode(
        _ parts: [HTTPServerResponsePart], with encoder: any ChannelHandler
    ) throws -> Output {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(encoder)
        for part in parts { channel.write(part, promise: nil) }
        channel.flush()
        var output = Output(bytes: [], writes: 0)
        while let data = try channel.readOutbound(as: IOData.self) {
            guard case .byteBuffer(let buffer) = data else { throw EncoderTestError.fileRegion }
            output.bytes += buffer.readableBytesView
            output.writes += 1
        }
        _ = try channel.finish()
        return output
    }

    enum EncoderTestError: Error { case fileRegion }

    static func ours(_ method: HTTPMethod = .GET) -> ProxyResponseEncoder {
        let encoder = ProxyResponseEncoder()
        encoder.answering(method)
        return encoder
    }

    static func buffer(_ text: String) -> IOData { .byteBuffer(ByteBuffer(string: text)) }

    static let statuses: [HTTPResponseStatus] = [
        .continue, .ok, .noContent, .partialContent, .movedPermanently, .found, .notModified, .badRequest,
        .forbidden, .notFound, .methodNotAllowed, .preconditionFailed, .payloadTooLarge, .rangeNotSatisfiable,
        .internalServerError, .notImplemented, .badGateway, .serviceUnavailable, .gatewayTimeout, .imATeapot,
        .custom(code: 299, reasonPhrase: "Odd But Fine"), .custom(code: 199, reasonPhrase: "Interim"),
    ]

    static let fieldSets: [[(String, String)]] = [
        [("Content-Length", "5"), ("Cache-Control", "max-age=60"), ("X-Cache-Status", "HIT")],
        [("Cache-Control", "no-store")], // unknown length
        [("CONTENT-LENGTH", "5"), ("Transfer-Encoding", "gzip")], // both: the length wins
        [("transfer-encoding", "chunked"), ("Date", "Thu, 26 Nov 2026 00:00:00 GMT")],
        [("Content-Length", "5"), ("Connection", "close"), ("Empty", "")],
    ]

    @Test("the same bytes as NIO's encoder for each status, version and framing field set")
    func sameBytesAsNIO() throws {
        for version in [HTTPVersion.http1_1, .http1_0, HTTPVersion(major: 2, minor: 0)] {
            for status in Self.statuses {
                for fields in Self.fieldSets {
                    let head = HTTPResponseHead(version: version, status: status, headers: HTTPHeaders(fields))
                    var parts: [HTTPServerResponsePart] = [.head(head)]
                    if status.mayHaveResponseBody { parts += [.body(Self.buffer("he")), .body(Self.buffer("llo"))] }
                    parts.append(.end(nil))
                    let nio = try Self.encode(parts, with: HTTPResponseEncoder())
                    let ours = try Self.encode(parts, with: Self.ours())
                    #expect(ours.bytes == nio.bytes, "\(version) \(status) \(fields): \(ours.text) ≠ \(nio.text)")
                }
            }
        }
    }

    @Test("trailers and empty chunks as NIO writes them")
    func trailersAndEmptyChunks() throws {
        let head = HTTPResponseHead(version: .http1_1, status: .ok)
        let parts: [HTTPServerResponsePart] = [
            .head(head), .body(Self.buffer("")), .body(Self.buffer("0123456789abcdefg")),
            .end(HTTPHeaders([("Checksum", "abc"), ("Other", "x")])),
        ]
        let ours = try Self.encode(parts, with: Self.ours())
        #expect(ours.bytes == (try Self.encode(parts, with: HTTPResponseEncoder())).bytes)
        #expect(ours.text.hasSuffix("\r\n11\r\n0123456789abcdefg\r\n0\r\nChecksum: abc\r\nOther: x\r\n\r\n"))
    }

    @Test("a small answer leaves as one buffer; a large one as head and body; a chunked one as NIO's")
    func coalescedWrites() throws {
        let small = HTTPResponseHead(version: .http1_1, status: .ok, headers: ["Content-Length": "5"])
        let one = try Self.encode([.head(small), .body(Self.buffer("hello")), .end(nil)], with: Self.ours())
        #expect(one.writes == 1 && one.text == "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
        let split = try Self.encode(
            [.head(small), .body(Self.buffer("he")), .body(Self.buffer("llo")), .end(nil)], with: Self.ours())
        #expect(split == one)
        let largeBody = String(repeating: "x", count: 100_000)
        let large = HTTPResponseHead(version: .http1_1, status: .ok, headers: ["Content-Length": "100000"])
        let two = try Self.encode([.head(large), .body(Self.buffer(largeBody)), .end(nil)], with: Self.ours())
        #expect(two.writes == 2 && two.text == "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + largeBody)
        // A head flushed on its own (an interim 100, or the head of a stream) goes out at the flush.
        let interim = try Self.encode(
            [.head(HTTPResponseHead(version: .http1_1, status: .continue))], with: Self.ours())
        #expect(interim.text == "HTTP/1.1 100 Continue\r\n\r\n")
        let streamHead = try Self.encode([.head(small)], with: Self.ours())
        #expect(streamHead.text == "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n")
    }

    @Test("HEAD keeps the GET's framing fields without a body or terminator; CONNECT loses them")
    func headAndConnect() throws {
        let withLength = HTTPResponseHead(version: .http1_1, status: .ok, headers: ["Content-Length": "12"])
        let head = try Self.encode([.head(withLength), .end(nil)], with: Self.ours(.HEAD))
        #expect(head.text == "HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n")
        let unknown = HTTPResponseHead(version: .http1_1, status: .ok, headers: ["ETag": "\"a\""])
        let headOfUnknown = try Self.encode([.head(unknown), .end(nil)], with: Self.ours(.HEAD))
        #expect(headOfUnknown.text == "HTTP/1.1 200 OK\r\nETag: \"a\"\r\ntransfer-encoding: chunked\r\n\r\n")
        let refused = HTTPResponseHead(
            version: .http1_1, status: .methodNotAllowed, headers: ["Content-Length": "0", "Connection": "close"])
        let connect = try Self.encode([.head(refused), .end(nil)], with: Self.ours(.CONNECT))
        #expect(connect.text == "HTTP/1.1 405 Method Not Allowed\r\nConnection: close\r\n\r\n")
        // The method applies to one answer: the next one (no method said) has its body again.
        let encoder = Self.ours(.HEAD)
        let both = try Self.encode(
            [.head(withLength), .end(nil), .head(withLength), .body(Self.buffer("twelve bytes")), .end(nil)],
            with: encoder)
        #expect(both.text.hasSuffix("\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\ntwelve bytes"))
    }

    @Test("a body written after a HEAD answer's head fails, as with NIO's encoder")
    func bodyAfterHeadFails() throws {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(Self.ours(.HEAD))
        let head = HTTPResponseHead(version: .http1_1, status: .ok, headers: ["Content-Length": "1"])
        channel.write(HTTPServerResponsePart.head(head), promise: nil)
        let body = channel.write(HTTPServerResponsePart.body(Self.buffer("x")))
        let end = channel.writeAndFlush(HTTPServerResponsePart.end(nil))
        #expect(throws: NIOHTTPResponseEncoderError.responseBodyNotAllowed) { try body.wait() }
        try end.wait()
        _ = try channel.finish()
    }

    @Test("every write's promise completes once its bytes are written")
    func promisesComplete() throws {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(Self.ours())
        let small = HTTPResponseHead(version: .http1_1, status: .ok, headers: ["Content-Length": "5"])
        let head = channel.write(HTTPServerResponsePart.head(small))
        let body = channel.write(HTTPServerResponsePart.body(Self.buffer("hello")))
        let end = channel.writeAndFlush(HTTPServerResponsePart.end(nil))
        try head.wait()
        try body.wait()
        try end.wait()
        _ = try channel.finish()
    }
}
