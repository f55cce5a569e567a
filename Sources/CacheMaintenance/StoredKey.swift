import HTTPCacheSemantics

/// A store key read back as the (partition, method, URL) the URL-level API encoded into it.
///
/// The layout is ``HTTPCacheSemantics/CacheKey/encoded``: `"K"`, format version 1, then
/// partition, method and URL, each a 32-bit big-endian length followed by UTF-8 bytes:
///
/// ```
/// offset  size  field
///      0     1  "K"
///      1     1  format version = 1
///      2   4+n  partition
///      …   4+n  method ("GET" / "HEAD")
///      …   4+n  normalised URL
/// ```
///
/// Keys written through the store directly (tests, benchmarks) do not decode; tools show them
/// as hex. The decoder lives here rather than in HTTPCacheSemantics because only the tools need
/// it; ``encode(partition:method:url:)`` mirrors `CacheKey.encoded` and a test holds the two equal.
public struct StoredKey: Sendable, Hashable, Codable {
    public var partition: String
    public var method: String
    /// The normalised URL, as keyed.
    public var url: String

    public init(partition: String, method: String, url: String) {
        self.partition = partition
        self.method = method
        self.url = url
    }

    /// Decodes `CacheKey.encoded` bytes; `nil` for anything else (a raw key, another version,
    /// trailing bytes, invalid UTF-8). Every length is bounded before use: keys are untrusted.
    public init?(decoding bytes: [UInt8]) {
        guard bytes.count >= 2, bytes[0] == UInt8(ascii: "K"), bytes[1] == CacheKey.formatVersion else { return nil }
        var reader = FieldReader(bytes: bytes, offset: 2)
        guard let partition = reader.string(), let method = reader.string(), let url = reader.string(),
            reader.isAtEnd, !method.isEmpty, !url.isEmpty
        else { return nil }
        self.init(partition: partition, method: method, url: url)
    }

    /// The store key the URL-level API uses for this (partition, method, normalised URL).
    public var encoded: [UInt8] {
        var bytes: [UInt8] = [UInt8(ascii: "K"), CacheKey.formatVersion]
        for field in [partition, method, url] { FieldReader.appendField(Array(field.utf8), to: &bytes) }
        return bytes
    }

    /// The key of `url` (normalised as the cache does) in `partition` for `method`.
    /// - Throws: ``MaintenanceError/invalidArgument(_:)`` when the URL is not cacheable.
    public static func encode(partition: String, method: String, url: String) throws(MaintenanceError) -> [UInt8] {
        StoredKey(partition: partition, method: method, url: try normalize(url)).encoded
    }

    /// The URL as keys hold it (scheme and host lowercased, default port elided, fragment dropped).
    public static func normalize(_ url: String) throws(MaintenanceError) -> String {
        do {
            return try NormalizedURL(url).string
        } catch {
            throw .invalidArgument("'\(url)' is not a cacheable http(s) URL (\(error))")
        }
    }

    /// A URL prefix normalised like keys are, where it parses: "HTTPS://API.Example.com:443/v1"
    /// matches keys under "https://api.example.com/v1". A prefix that stops inside the authority
    /// ("https://api.exa") keeps no added "/", and one that does not parse is used as given.
    public static func normalizePrefix(_ prefix: String) -> String {
        guard let normalized = try? NormalizedURL(prefix).string else { return prefix }
        let afterScheme = prefix.range(of: "://").map { prefix[$0.upperBound...] } ?? ""
        let hasPath = afterScheme.contains("/") || afterScheme.contains("?")
        if !hasPath, normalized.hasSuffix("/") { return String(normalized.dropLast()) }
        return normalized
    }
}

/// The variant (secondary key) read back as `VaryKey.encoded`: the selecting request fields.
///
/// ```
/// "V", version 1, 32-bit entry count, then per entry: length-prefixed name,
/// 0 (absent) or 1 + length-prefixed value
/// ```
public struct StoredVariant: Sendable, Hashable, Codable {
    public struct Field: Sendable, Hashable, Codable {
        public var name: String
        /// `nil`: the request did not carry the field.
        public var value: String?

        public init(name: String, value: String?) {
            self.name = name
            self.value = value
        }
    }

    public var fields: [Field]

    /// Decodes `VaryKey.encoded` bytes; `nil` for anything else. An empty variant decodes to
    /// no fields (a response stored without `Vary`).
    public init?(decoding bytes: [UInt8]) {
        if bytes.isEmpty {
            fields = []
            return
        }
        guard bytes.count >= 6, bytes[0] == UInt8(ascii: "V"), bytes[1] == 1 else { return nil }
        var reader = FieldReader(bytes: bytes, offset: 2)
        guard let count = reader.uint32(), Int(count) <= bytes.count else { return nil }
        var fields: [Field] = []
        for _ in 0..<count {
            guard let name = reader.string(), let present = reader.byte() else { return nil }
            switch present {
            case 0: fields.append(Field(name: name, value: nil))
            case 1:
                guard let value = reader.string() else { return nil }
                fields.append(Field(name: name, value: value))
            default: return nil
            }
        }
        guard reader.isAtEnd else { return nil }
        self.fields = fields
    }
}

/// A bounds-checked reader of length-prefixed fields (32-bit big-endian length, then bytes).
struct FieldReader {
    let bytes: [UInt8]
    var offset: Int

    var isAtEnd: Bool { offset == bytes.count }

    mutating func byte() -> UInt8? {
        guard offset < bytes.count else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func uint32() -> UInt32? {
        guard bytes.count - offset >= 4 else { return nil }
        var value: UInt32 = 0
        for i in 0..<4 { value = value << 8 | UInt32(bytes[offset + i]) }
        offset += 4
        return value
    }

    mutating func string() -> String? {
        guard let length = uint32(), Int(length) <= bytes.count - offset else { return nil }
        let field = bytes[offset..<(offset + Int(length))]
        offset += Int(length)
        return String(validating: field, as: UTF8.self)
    }

    static func appendField(_ field: [UInt8], to bytes: inout [UInt8]) {
        let length = UInt32(clamping: field.count)
        for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: length >> UInt32(shift))) }
        bytes.append(contentsOf: field)
    }
}

/// Lowercase hex of raw bytes, for keys and partitions that are not text.
func hexString(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out = [UInt8]()
    out.reserveCapacity(bytes.count * 2)
    for byte in bytes {
        out.append(digits[Int(byte >> 4)])
        out.append(digits[Int(byte & 0xF)])
    }
    return String(decoding: out, as: UTF8.self)
}

/// A partition name for display: its UTF-8 text, or `hex:…` when it is not valid UTF-8.
func partitionName(_ bytes: [UInt8]) -> String {
    String(validating: bytes, as: UTF8.self) ?? "hex:" + hexString(bytes)
}
