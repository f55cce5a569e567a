import Foundation

/// The response head kept in a record's `head` bytes: what a `URLResponse` needs to be rebuilt,
/// plus the request header values named by `Vary` (RFC 9111 §4.1).
///
/// The store treats `head` as opaque; this is its only codec. Format version 1, every integer
/// big-endian, every string a 32-bit length followed by UTF-8 bytes:
///
/// ```
/// offset  size  field
///      0     2  magic "RH"
///      2     1  format version = 1
///      3     1  kind: 1 = HTTP response, 2 = plain URLResponse
///      4     2  status code (0 for a plain response)
///      6     8  expected content length (Int64, -1 = unknown)
///     14   4+n  URL
///      …   1[+4+n] MIME type: 0 = absent, 1 = present + string
///      …   1[+4+n] text encoding name: same
///      …     4  header count H, then H × (name string, value string), as received
///      …     4  selecting request field count V, then V × (name string, value string)
/// format version 2 only (entries stored by the HTTP caching flow), the exchange:
///      …     8  request time, ms since 1970 (Int64)
///      …     8  response time, ms since 1970 (Int64)
///      …     1  flags: 0x1 the request carried Authorization
/// ```
///
/// Decoding is bounds-checked throughout and rejects trailing bytes; anything malformed decodes
/// to `nil`, which the cache treats as a miss (and purges), never a crash.
struct ResponseHead: Sendable, Hashable {
    enum Kind: UInt8, Sendable {
        case http = 1
        case plain = 2
    }

    static let magic: [UInt8] = [UInt8(ascii: "R"), UInt8(ascii: "H")]
    /// Version 1: no exchange; version 2: with the exchange (RFC 9111 §4.2.3 times).
    static let formatVersion: UInt8 = 1
    static let exchangeFormatVersion: UInt8 = 2
    /// More header lines than any real response; bounds a hostile count before allocation.
    static let maximumFieldCount = 4096

    var kind: Kind
    var statusCode: Int
    var expectedContentLength: Int64
    var url: String
    var mimeType: String?
    var textEncodingName: String?
    /// The response header fields exactly as received (name, value), in the order given.
    var headerFields: [HeaderPair]
    /// The request header fields named by the response's `Vary`.
    var varyRequestFields: [HeaderPair]
    /// The request/response facts the HTTP caching flow keeps (nil for URLCache-style stores).
    var exchange: Exchange?

    /// RFC 9111 §4.2.3 request_time and response_time, and the §3.5 Authorization fact.
    struct Exchange: Sendable, Hashable {
        var requestTime: Date
        var responseTime: Date
        var requestHadAuthorization: Bool
    }

    struct HeaderPair: Sendable, Hashable {
        var name: String
        var value: String
    }

    func encoded() -> [UInt8] {
        var writer = ByteWriter()
        writer.bytes += Self.magic
        writer.bytes.append(exchange == nil ? Self.formatVersion : Self.exchangeFormatVersion)
        writer.bytes.append(kind.rawValue)
        writer.appendUInt16(UInt16(clamping: statusCode))
        writer.appendUInt64(UInt64(bitPattern: expectedContentLength))
        writer.appendString(url)
        writer.appendOptionalString(mimeType)
        writer.appendOptionalString(textEncodingName)
        writer.appendPairs(headerFields)
        writer.appendPairs(varyRequestFields)
        if let exchange {
            writer.appendUInt64(UInt64(bitPattern: Self.milliseconds(exchange.requestTime)))
            writer.appendUInt64(UInt64(bitPattern: Self.milliseconds(exchange.responseTime)))
            writer.bytes.append(exchange.requestHadAuthorization ? 1 : 0)
        }
        return writer.bytes
    }

    static func milliseconds(_ date: Date) -> Int64 {
        let ms = (date.timeIntervalSince1970 * 1000).rounded(.down)
        return ms.isFinite ? Int64(max(min(ms, 9e15), -9e15)) : 0
    }

    /// Whether `bytes` is a head of a later version than this build reads (docs/Formats.md):
    /// a miss that is left for the release that wrote it, never purged as damage.
    static func isLaterVersion(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 3 && Array(bytes.prefix(2)) == magic && bytes[2] > exchangeFormatVersion
    }

    /// Decodes a head; `nil` for anything malformed, truncated, of another version or followed
    /// by trailing bytes.
    init?(decoding bytes: [UInt8]) {
        var reader = ByteReader(bytes)
        guard reader.readBytes(2).map(Array.init) == Self.magic, let version = reader.readUInt8(),
            version == Self.formatVersion || version == Self.exchangeFormatVersion,
            let kindByte = reader.readUInt8(), let kind = Kind(rawValue: kindByte),
            let status = reader.readUInt16(), let length = reader.readUInt64(),
            let url = reader.readString(),
            let mimeType = reader.readOptionalString(),
            let textEncodingName = reader.readOptionalString(),
            let headerFields = reader.readPairs(limit: Self.maximumFieldCount),
            let varyRequestFields = reader.readPairs(limit: Self.maximumFieldCount)
        else { return nil }
        if version == Self.exchangeFormatVersion {
            guard let request = reader.readUInt64(), let response = reader.readUInt64(), let flags = reader.readUInt8(),
                flags & ~1 == 0
            else { return nil }
            exchange = Exchange(
                requestTime: Date(timeIntervalSince1970: Double(Int64(bitPattern: request)) / 1000),
                responseTime: Date(timeIntervalSince1970: Double(Int64(bitPattern: response)) / 1000),
                requestHadAuthorization: flags & 1 != 0)
        } else {
            exchange = nil
        }
        guard reader.isAtEnd else { return nil }
        self.kind = kind
        self.statusCode = Int(status)
        self.expectedContentLength = Int64(bitPattern: length)
        self.url = url
        self.mimeType = mimeType
        self.textEncodingName = textEncodingName
        self.headerFields = headerFields
        self.varyRequestFields = varyRequestFields
    }

    init(
        kind: Kind, statusCode: Int, expectedContentLength: Int64, url: String, mimeType: String?,
        textEncodingName: String?, headerFields: [HeaderPair], varyRequestFields: [HeaderPair],
        exchange: Exchange? = nil
    ) {
        self.exchange = exchange
        self.kind = kind
        self.statusCode = statusCode
        self.expectedContentLength = expectedContentLength
        self.url = url
        self.mimeType = mimeType
        self.textEncodingName = textEncodingName
        self.headerFields = headerFields
        self.varyRequestFields = varyRequestFields
    }

    /// An estimate of the bytes this head occupies in memory, for the memory tier's accounting.
    var memoryCost: Int {
        var cost = 64 + url.utf8.count + (mimeType?.utf8.count ?? 0) + (textEncodingName?.utf8.count ?? 0)
        for pair in headerFields { cost += 32 + pair.name.utf8.count + pair.value.utf8.count }
        for pair in varyRequestFields { cost += 32 + pair.name.utf8.count + pair.value.utf8.count }
        return cost
    }
}

/// The record stored at a key's empty variant when its response carries `Vary`: the `Vary`
/// field value, from which a lookup computes the variant of the presented request.
///
/// ```
/// offset  size  field
///      0     2  magic "VS"
///      2     1  format version = 1
///      3   4+n  the Vary names, lowercased, joined by ", "
/// ```
struct VarySpec: Sendable, Hashable {
    static let magic: [UInt8] = [UInt8(ascii: "V"), UInt8(ascii: "S")]
    static let formatVersion: UInt8 = 1

    /// The names joined by ", " (canonical form: the parsed, lowercased, deduplicated names).
    var varyValue: String

    init(names: [String]) { varyValue = names.joined(separator: ", ") }

    func encoded() -> [UInt8] {
        var writer = ByteWriter()
        writer.bytes += Self.magic
        writer.bytes.append(Self.formatVersion)
        writer.appendString(varyValue)
        return writer.bytes
    }

    init?(decoding bytes: [UInt8]) {
        var reader = ByteReader(bytes)
        guard reader.readBytes(2).map(Array.init) == Self.magic, reader.readUInt8() == Self.formatVersion,
            let value = reader.readString(), reader.isAtEnd
        else { return nil }
        varyValue = value
    }
}

/// What kind of record a store entry is, in `RecordDescriptor.appFlags` (opaque to the store).
enum RecordKind: UInt32 {
    /// A response: head + body (+ userInfo).
    case response = 1
    /// A ``VarySpec`` at the empty variant; the responses live at their variants.
    case varySpec = 2
}

// MARK: - Byte codec

struct ByteWriter {
    var bytes: [UInt8] = []

    mutating func appendUInt16(_ value: UInt16) {
        bytes.append(UInt8(truncatingIfNeeded: value >> 8))
        bytes.append(UInt8(truncatingIfNeeded: value))
    }

    mutating func appendUInt32(_ value: UInt32) {
        for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }

    mutating func appendUInt64(_ value: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    mutating func appendString(_ string: String) {
        let utf8 = Array(string.utf8)
        appendUInt32(UInt32(clamping: utf8.count))
        bytes += utf8
    }

    mutating func appendOptionalString(_ string: String?) {
        guard let string else { return bytes.append(0) }
        bytes.append(1)
        appendString(string)
    }

    mutating func appendPairs(_ pairs: [ResponseHead.HeaderPair]) {
        appendUInt32(UInt32(clamping: pairs.count))
        for pair in pairs {
            appendString(pair.name)
            appendString(pair.value)
        }
    }
}

/// A cursor over untrusted bytes: every read checks the remaining length first.
struct ByteReader {
    private let bytes: [UInt8]
    private var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { offset == bytes.count }
    private var remaining: Int { bytes.count - offset }

    mutating func readBytes(_ count: Int) -> ArraySlice<UInt8>? {
        guard count >= 0, count <= remaining else { return nil }
        defer { offset += count }
        return bytes[offset..<(offset + count)]
    }

    mutating func readUInt8() -> UInt8? { readBytes(1)?.first }

    mutating func readUInt16() -> UInt16? {
        guard let slice = readBytes(2) else { return nil }
        return slice.reduce(0) { $0 << 8 | UInt16($1) }
    }

    mutating func readUInt32() -> UInt32? {
        guard let slice = readBytes(4) else { return nil }
        return slice.reduce(0) { $0 << 8 | UInt32($1) }
    }

    mutating func readUInt64() -> UInt64? {
        guard let slice = readBytes(8) else { return nil }
        return slice.reduce(0) { $0 << 8 | UInt64($1) }
    }

    mutating func readString() -> String? {
        guard let length = readUInt32(), let slice = readBytes(Int(length)) else { return nil }
        return String(validating: slice, as: UTF8.self)
    }

    mutating func readOptionalString() -> String?? {
        switch readUInt8() {
        case 0: return .some(nil)
        case 1: return readString().map { .some($0) }
        default: return nil
        }
    }

    mutating func readPairs(limit: Int) -> [ResponseHead.HeaderPair]? {
        // Each pair takes at least 8 bytes, so a count beyond remaining / 8 is corrupt: checked
        // before anything is allocated.
        guard let count = readUInt32(), count <= limit, Int(count) <= remaining / 8 else { return nil }
        var pairs: [ResponseHead.HeaderPair] = []
        pairs.reserveCapacity(Int(count))
        for _ in 0..<count {
            guard let name = readString(), let value = readString() else { return nil }
            pairs.append(.init(name: name, value: value))
        }
        return pairs
    }
}
