import NIOCore
import NIOHTTP1

/// A response head measured for the wire: its byte count, its framing (NIO's rules, see
/// ``ProxyResponseEncoder``), and a single copy of its bytes into a buffer that has room.
///
/// Measuring first lets the encoder allocate once at the right size; the bytes are gathered in
/// one array of that size (appending a native string's UTF-8 is a copy of its storage) and
/// written into the buffer at once, instead of four checked `ByteBuffer` writes per field.
struct SerialisedResponseHead {
    private let head: HTTPResponseHead
    /// The stored fields prepared for a memory item with the answer's own after them, written
    /// before the head's fields (``ProxyHandler`` gives a memory hit's head none).
    private let prepared: PreparedHeadUse?
    /// The status line up to its CRLF when it is one of the common ones (a literal: no allocation).
    private let statusLine: String?
    /// The status line of any other status or version.
    private let otherStatusLine: String
    /// The head has `Content-Length` fields that go (the response cannot have a body).
    private let dropsContentLength: Bool
    /// The head has `Transfer-Encoding` fields that go (no body, a length, or chunking applies).
    private let dropsTransferEncoding: Bool
    /// `transfer-encoding: chunked` is appended (an HTTP/1.1 response of unknown length).
    let isChunked: Bool
    /// The value of the first `Content-Length` field kept, when it is a plain decimal number.
    let contentLength: Int?
    /// Bytes of the status line, the fields and the blank line.
    let byteCount: Int

    private static let chunkedField = "transfer-encoding: chunked\r\n"

    /// - Parameters:
    ///   - mayHaveBody: false for 1xx, 204 and 304 and for an answer to `CONNECT`.
    ///   - prepared: a memory item's prepared stored fields, which come first and hold its one
    ///     `Content-Length` (only for a response that may have a body: they are written as they are).
    init(_ head: HTTPResponseHead, mayHaveBody: Bool, prepared: PreparedHeadUse? = nil) {
        assert(prepared == nil || mayHaveBody, "a prepared head's Content-Length cannot be dropped")
        self.head = head
        self.prepared = prepared
        if head.version.major == 1 && head.version.minor <= 1, let line = Self.commonStatusLine(head.status.code) {
            statusLine = head.version.minor == 1 ? line.http11 : line.http10
            otherStatusLine = ""
        } else {
            statusLine = nil
            otherStatusLine =
                "HTTP/\(head.version.major).\(head.version.minor) \(head.status.code) \(head.status.reasonPhrase)\r\n"
        }
        var byteCount = (statusLine?.utf8.count ?? otherStatusLine.utf8.count) + (prepared?.byteCount ?? 0)
        var contentLengthCount = 0
        var transferEncodingCount = 0
        var firstContentLength: String?
        for (name, value) in head.headers {
            let fieldBytes = name.utf8.count + value.utf8.count + 4 // ": " and CRLF
            if FieldName.isContentLength(name) {
                contentLengthCount += fieldBytes
                if firstContentLength == nil { firstContentLength = value }
            } else if FieldName.isTransferEncoding(name) {
                transferEncodingCount += fieldBytes
            } else {
                byteCount += fieldBytes
            }
        }
        let hasContentLength = prepared != nil || firstContentLength != nil
        let chunkingApplies = head.version.major == 1 && head.version.minor >= 1
        let keepsContentLength = mayHaveBody
        let keepsTransferEncoding = mayHaveBody && !hasContentLength && !chunkingApplies
        isChunked = mayHaveBody && !hasContentLength && chunkingApplies
        if keepsContentLength { byteCount += contentLengthCount }
        if keepsTransferEncoding { byteCount += transferEncodingCount }
        if isChunked { byteCount += Self.chunkedField.utf8.count }
        self.byteCount = byteCount + 2 // the blank line
        // The write pass compares names only when a field is to go (rarely: a stored head has
        // neither field to drop).
        dropsContentLength = !keepsContentLength && contentLengthCount > 0
        dropsTransferEncoding = !keepsTransferEncoding && transferEncodingCount > 0
        // The prepared fields come first, with their one Content-Length.
        contentLength =
            keepsContentLength ? prepared?.prepared.contentLength ?? firstContentLength.flatMap(Self.decimal) : nil
    }

    /// Appends the head's bytes (exactly ``byteCount``) to `buffer`.
    func write(into buffer: inout ByteBuffer) {
        var out = HeadBytes(capacity: byteCount)
        if let statusLine { out.append(statusLine) } else { out.append(otherStatusLine) }
        if let prepared {
            out.append(bytes: prepared.prepared.fieldsBeforeAge)
            out.appendField("Age", prepared.age)
            out.append(bytes: prepared.prepared.fieldsAfterAge)
            out.append(bytes: prepared.answerFields)
        }
        for (name, value) in head.headers {
            if dropsContentLength, FieldName.isContentLength(name) { continue }
            if dropsTransferEncoding, FieldName.isTransferEncoding(name) { continue }
            out.appendField(name, value)
        }
        if isChunked { out.append(Self.chunkedField) }
        out.append("\r\n")
        buffer.writeBytes(out.bytes)
    }

    /// A decimal number of at most 18 digits (no sign, no spaces), or nil.
    private static func decimal(_ value: String) -> Int? {
        let digits = value.utf8
        guard !digits.isEmpty, digits.count <= 18 else { return nil }
        var value = 0
        for byte in digits {
            guard byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }

    /// Status lines as constant bytes, for the statuses the proxy sends most (the reason
    /// phrases are NIO's, which the unit tests compare).
    private static func commonStatusLine(_ code: UInt) -> (http11: String, http10: String)? {
        switch code {
        case 100: return ("HTTP/1.1 100 Continue\r\n", "HTTP/1.0 100 Continue\r\n")
        case 200: return ("HTTP/1.1 200 OK\r\n", "HTTP/1.0 200 OK\r\n")
        case 204: return ("HTTP/1.1 204 No Content\r\n", "HTTP/1.0 204 No Content\r\n")
        case 206: return ("HTTP/1.1 206 Partial Content\r\n", "HTTP/1.0 206 Partial Content\r\n")
        case 301: return ("HTTP/1.1 301 Moved Permanently\r\n", "HTTP/1.0 301 Moved Permanently\r\n")
        case 302: return ("HTTP/1.1 302 Found\r\n", "HTTP/1.0 302 Found\r\n")
        case 304: return ("HTTP/1.1 304 Not Modified\r\n", "HTTP/1.0 304 Not Modified\r\n")
        case 400: return ("HTTP/1.1 400 Bad Request\r\n", "HTTP/1.0 400 Bad Request\r\n")
        case 403: return ("HTTP/1.1 403 Forbidden\r\n", "HTTP/1.0 403 Forbidden\r\n")
        case 404: return ("HTTP/1.1 404 Not Found\r\n", "HTTP/1.0 404 Not Found\r\n")
        case 405: return ("HTTP/1.1 405 Method Not Allowed\r\n", "HTTP/1.0 405 Method Not Allowed\r\n")
        case 412: return ("HTTP/1.1 412 Precondition Failed\r\n", "HTTP/1.0 412 Precondition Failed\r\n")
        case 413: return ("HTTP/1.1 413 Payload Too Large\r\n", "HTTP/1.0 413 Payload Too Large\r\n")
        case 416: return ("HTTP/1.1 416 Range Not Satisfiable\r\n", "HTTP/1.0 416 Range Not Satisfiable\r\n")
        case 500: return ("HTTP/1.1 500 Internal Server Error\r\n", "HTTP/1.0 500 Internal Server Error\r\n")
        case 501: return ("HTTP/1.1 501 Not Implemented\r\n", "HTTP/1.0 501 Not Implemented\r\n")
        case 502: return ("HTTP/1.1 502 Bad Gateway\r\n", "HTTP/1.0 502 Bad Gateway\r\n")
        case 503: return ("HTTP/1.1 503 Service Unavailable\r\n", "HTTP/1.0 503 Service Unavailable\r\n")
        case 504: return ("HTTP/1.1 504 Gateway Timeout\r\n", "HTTP/1.0 504 Gateway Timeout\r\n")
        default: return nil
        }
    }
}

/// Trailer fields (or any field block) measured and copied the same way, with the blank line.
struct SerialisedFields {
    private let fields: HTTPHeaders
    let byteCount: Int

    init(_ fields: HTTPHeaders) {
        self.fields = fields
        byteCount = fields.reduce(2) { $0 + $1.name.utf8.count + $1.value.utf8.count + 4 }
    }

    func write(into buffer: inout ByteBuffer) {
        var out = HeadBytes(capacity: byteCount)
        for (name, value) in fields { out.appendField(name, value) }
        out.append("\r\n")
        buffer.writeBytes(out.bytes)
    }
}

/// Field names the framing looks at, compared without regard to case (RFC 9110 §5.1).
private enum FieldName {
    private static let contentLength = Array("content-length".utf8)
    private static let transferEncoding = Array("transfer-encoding".utf8)

    static func isContentLength(_ name: String) -> Bool { matches(name, contentLength) }
    static func isTransferEncoding(_ name: String) -> Bool { matches(name, transferEncoding) }

    private static func matches(_ name: String, _ lowercased: [UInt8]) -> Bool {
        guard name.utf8.count == lowercased.count else { return false }
        // ASCII letters differ from their lowercase by 0x20; the other bytes of these names ("-")
        // are compared as they are.
        return zip(name.utf8, lowercased).allSatisfy { byte, expected in
            (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte) == expected
        }
    }
}

/// The bytes of a head gathered at their measured size, then written into a buffer in one call.
private struct HeadBytes {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int) { bytes.reserveCapacity(capacity) }

    mutating func append(_ text: String) { bytes.append(contentsOf: text.utf8) }

    mutating func append(bytes more: [UInt8]) { bytes.append(contentsOf: more) }

    mutating func appendField(_ name: String, _ value: String) { bytes.appendFieldLine(name, value) }
}

extension [UInt8] {
    /// One header field as it goes on the wire: `name: value` and CRLF (the encoder's heads and
    /// the stored heads prepared for memory items, ``PreparedStoredHead``).
    mutating func appendFieldLine(_ name: String, _ value: String) {
        append(contentsOf: name.utf8)
        // The separators byte by byte: appending a string's UTF-8 costs about ten times as many
        // instructions as appending a byte, whatever the string's length.
        append(UInt8(ascii: ":"))
        append(UInt8(ascii: " "))
        append(contentsOf: value.utf8)
        append(UInt8(ascii: "\r"))
        append(UInt8(ascii: "\n"))
    }
}
