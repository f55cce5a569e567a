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
package struct ResponseHead: Sendable, Hashable {
    package enum Kind: UInt8, Sendable {
        case http = 1
        case plain = 2
    }

    package static let magic: [UInt8] = [UInt8(ascii: "R"), UInt8(ascii: "H")]
    /// Version 1: no exchange; version 2: with the exchange (RFC 9111 §4.2.3 times).
    package static let formatVersion: UInt8 = 1
    package static let exchangeFormatVersion: UInt8 = 2
    /// More header lines than any real response; bounds a hostile count before allocation.
    package static let maximumFieldCount = 4096

    package var kind: Kind
    package var statusCode: Int
    package var expectedContentLength: Int64
    package var url: String
    package var mimeType: String?
    package var textEncodingName: String?
    /// The response header fields exactly as received (name, value), in the order given.
    package var headerFields: [HeaderPair]
    /// The request header fields named by the response's `Vary`.
    package var varyRequestFields: [HeaderPair]
    /// The request/response facts the HTTP caching flow keeps (nil for URLCache-style stores).
    package var exchange: Exchange?

    /// RFC 9111 §4.2.3 request_time and response_time, and the §3.5 Authorization fact.
    package struct Exchange: Sendable, Hashable {
        package var requestTime: Date
        package var responseTime: Date
        package var requestHadAuthorization: Bool

        package init(requestTime: Date, responseTime: Date, requestHadAuthorization: Bool) {
            self.requestTime = requestTime
            self.responseTime = responseTime
            self.requestHadAuthorization = requestHadAuthorization
        }
    }

    package struct HeaderPair: Sendable, Hashable {
        package var name: String
        package var value: String

        package init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    package func encoded() -> [UInt8] {
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

    package static func milliseconds(_ date: Date) -> Int64 {
        let ms = (date.timeIntervalSince1970 * 1000).rounded(.down)
        return ms.isFinite ? Int64(max(min(ms, 9e15), -9e15)) : 0
    }

    /// Whether `bytes` is a head of a later version than this build reads (docs/Formats.md):
    /// a miss that is left for the release that wrote it, never purged as damage.
    package static func isLaterVersion(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 3 && Array(bytes.prefix(2)) == magic && bytes[2] > exchangeFormatVersion
    }

    /// Decodes a head; `nil` for anything malformed, truncated, of another version, followed by
    /// trailing bytes, or an HTTP head whose status is not a three-digit code.
    package init?(decoding bytes: [UInt8]) {
        var reader = ByteReader(bytes)
        guard reader.readBytes(2)?.elementsEqual(Self.magic) == true, let version = reader.readUInt8(),
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
        // An HTTP status is three digits (RFC 9110 §15): anything else was not written by this
        // format, and HTTPResponse.Status would trap on it.
        guard reader.isAtEnd, kind != .http || (100...999).contains(status) else { return nil }
        self.kind = kind
        self.statusCode = Int(status)
        self.expectedContentLength = Int64(bitPattern: length)
        self.url = url
        self.mimeType = mimeType
        self.textEncodingName = textEncodingName
        self.headerFields = headerFields
        self.varyRequestFields = varyRequestFields
    }

    package init(
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
    package var memoryCost: Int {
        var cost = 64 + url.utf8.count + (mimeType?.utf8.count ?? 0) + (textEncodingName?.utf8.count ?? 0)
        for pair in headerFields { cost += 32 + pair.name.utf8.count + pair.value.utf8.count }
        for pair in varyRequestFields { cost += 32 + pair.name.utf8.count + pair.value.utf8.count }
        return cost
    }
}
