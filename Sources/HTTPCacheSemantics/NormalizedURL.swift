/// An absolute http(s) URL normalised for use in a cache key (docs/Reliability.md §3.2, T11).
///
/// Normalisation is deliberately minimal, so that two URLs get one key only when every origin
/// treats them alike: scheme and host lowercased, default port elided, empty path → `/`,
/// fragment dropped. Path and query bytes are kept exactly as sent: `%2F` is not decoded,
/// percent-escape case is not changed, and dot segments are not resolved (a client sends them
/// resolved; keeping them only costs a duplicate entry, never a wrong one). Non-ASCII hosts (IDN)
/// are rejected: callers pass the punycode (`xn--`) form.
public struct NormalizedURL: Sendable, Hashable, CustomStringConvertible {
    /// The longest URL accepted, in bytes (docs/Reliability.md §3.5).
    public static let maximumBytes = 8 * 1024
    /// The longest host accepted, in bytes.
    public static let maximumHostBytes = 255

    /// `http` or `https`.
    public let scheme: String
    /// The lowercased host (an IP literal keeps its brackets).
    public let host: String
    /// The port, or nil when it is the scheme's default.
    public let port: Int?
    /// The path (never empty) and the query with its `?`, byte-exact.
    public let pathAndQuery: String

    /// Parses and normalises an absolute URL.
    ///
    /// - Parameters:
    ///   - text: The URL as the request carries it.
    /// - Throws: ``CacheKeyError`` when the URL is not cacheable.
    public init(_ text: String) throws(CacheKeyError) {
        let bytes = Array(text.utf8)
        guard bytes.count <= Self.maximumBytes else { throw .urlTooLong(bytes: bytes.count) }
        // docs/Reliability.md §3.6: NUL, CR, LF, space and other control bytes are never keyed.
        if let bad = bytes.firstIndex(where: { $0 <= 0x20 || $0 == 0x7F }) { throw .invalidCharacter(offset: bad) }

        // RFC 3986 §3.1: scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ), case-insensitive.
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0,
            bytes[..<colon].allSatisfy({ Self.isSchemeByte($0) }), Self.isAlpha(bytes[0])
        else { throw .missingScheme }
        guard let (scheme, defaultPort) = Self.knownScheme(bytes[..<colon]) else { throw .unsupportedScheme }

        // RFC 3986 §3.2: "//" authority.
        var index = colon + 1
        guard bytes.count >= index + 2, bytes[index] == UInt8(ascii: "/"), bytes[index + 1] == UInt8(ascii: "/")
        else { throw .missingHost }
        index += 2
        let authorityStart = index
        while index < bytes.count, bytes[index] != UInt8(ascii: "/"), bytes[index] != UInt8(ascii: "?"),
            bytes[index] != UInt8(ascii: "#")
        {
            index += 1
        }
        // Slices, not copies, from here on: every lookup of a URL not seen before keys it, and
        // each array or string made on the way was an allocation (Benchmarks/RESULTS.md).
        let authority = bytes[authorityStart..<index]
        // RFC 9110 §4.2.4: userinfo is deprecated and a confusion vector; never keyed.
        guard !authority.contains(UInt8(ascii: "@")) else { throw .userinfoNotAllowed }
        let (host, portText) = try Self.splitHostPort(authority)
        self.scheme = scheme
        self.host = host
        self.port = try Self.port(portText, defaultPort: defaultPort)

        // Path and query, up to an optional fragment (dropped: RFC 3986 §3.5, never sent to the origin).
        var end = index
        while end < bytes.count, bytes[end] != UInt8(ascii: "#") { end += 1 }
        var inQuery = false
        var position = index
        while position < end {
            let byte = bytes[position]
            if byte == UInt8(ascii: "?") { inQuery = true }
            if byte == UInt8(ascii: "%") {
                guard position + 2 < end,
                    Self.isHex(bytes[position + 1]), Self.isHex(bytes[position + 2])
                else { throw .invalidPercentEscape(offset: position) }
                position += 3
                continue
            }
            let allowed =
                Self.isPathByte(byte)
                || (inQuery && (byte == UInt8(ascii: "[") || byte == UInt8(ascii: "]")))
            guard allowed else { throw .invalidCharacter(offset: position) }
            position += 1
        }
        let rest = String(decoding: bytes[index..<end], as: UTF8.self)
        // RFC 9110 §4.2.3: an empty path is equivalent to "/".
        self.pathAndQuery = index == end || bytes[index] == UInt8(ascii: "?") ? "/" + rest : rest
    }

    /// The normalised URL text, e.g. `https://example.com/a?b`.
    public var string: String { origin + pathAndQuery }

    /// Scheme, host and port: the origin (RFC 6454) used for the same-origin check of §4.4.
    public var origin: String { scheme + "://" + host + (port.map { ":\($0)" } ?? "") }

    public var description: String { string }

    // MARK: - Pieces

    private static func splitHostPort(_ authority: ArraySlice<UInt8>) throws(CacheKeyError) -> (
        String, ArraySlice<UInt8>?
    ) {
        guard let first = authority.first else { throw .missingHost }
        var hostBytes: ArraySlice<UInt8>
        var portBytes: ArraySlice<UInt8>?
        if first == UInt8(ascii: "[") {
            // RFC 3986 §3.2.2 IP-literal: hex digits, ':' and '.' inside brackets.
            guard let close = authority.firstIndex(of: UInt8(ascii: "]")), close > authority.startIndex + 1 else {
                throw .invalidHost
            }
            hostBytes = authority[...close]
            guard
                authority[(authority.startIndex + 1)..<close].allSatisfy({
                    isHex($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".")
                })
            else { throw .invalidHost }
            let after = authority[(close + 1)...]
            if !after.isEmpty {
                guard after.first == UInt8(ascii: ":") else { throw .invalidHost }
                portBytes = after.dropFirst()
            }
        } else {
            if let colon = authority.firstIndex(of: UInt8(ascii: ":")) {
                hostBytes = authority[..<colon]
                portBytes = authority[(colon + 1)...]
            } else {
                hostBytes = authority
            }
            guard !hostBytes.isEmpty else { throw .missingHost }
            if hostBytes.contains(where: { $0 >= 0x80 }) { throw .nonASCIIHost }
            let hostChars = hostBytes.allSatisfy {
                isAlpha($0) || isDigit($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".")
                    || $0 == UInt8(ascii: "_")
            }
            guard hostChars else { throw .invalidHost }
        }
        guard hostBytes.count <= maximumHostBytes else { throw .hostTooLong(bytes: hostBytes.count) }
        let isUpper = { (byte: UInt8) in byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") }
        let host =
            hostBytes.contains(where: isUpper)
            ? String(decoding: hostBytes.map { isUpper($0) ? $0 | 0x20 : $0 }, as: UTF8.self)
            : String(decoding: hostBytes, as: UTF8.self)
        return (host, portBytes)
    }

    private static func port(_ text: ArraySlice<UInt8>?, defaultPort: Int) throws(CacheKeyError) -> Int? {
        // RFC 3986 §6.2.3: an empty port is the default port.
        guard let text, !text.isEmpty else { return nil }
        guard text.count <= 10, text.allSatisfy(isDigit) else { throw .invalidPort }
        let value = text.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        guard (1...65_535).contains(value) else { throw .invalidPort }
        return value == defaultPort ? nil : value
    }

    /// The scheme lowercased and its default port elided from keys (RFC 9110 §4.2.1 http → 80,
    /// §4.2.2 https → 443), for `http` and `https` in any case; nil for any other scheme. The
    /// names are literals: no string is made per key.
    private static func knownScheme(_ name: ArraySlice<UInt8>) -> (String, Int)? {
        let lowered = name.lazy.map { isAlpha($0) ? $0 | 0x20 : $0 }
        if lowered.elementsEqual("https".utf8) { return ("https", 443) }
        if lowered.elementsEqual("http".utf8) { return ("http", 80) }
        return nil
    }

    /// Characters RFC 3986 allows in a path or query besides `%` escapes: unreserved (§2.3),
    /// sub-delims (§2.2), and `:` `@` `/` `?` (§3.3, §3.4). `[` `]` are tolerated in the query
    /// only (the caller's check). A range test per byte, not a set lookup: this runs for every
    /// byte of every URL a lookup keys (a `Set<UInt8>` hashed each byte: ~1,300 instructions
    /// of a 23,000-instruction miss, Benchmarks/RESULTS.md).
    private static func isPathByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "!"),
            UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("), UInt8(ascii: ")"),
            UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"), UInt8(ascii: "="),
            UInt8(ascii: ":"), UInt8(ascii: "@"), UInt8(ascii: "/"), UInt8(ascii: "?"):
            true
        default: false
        }
    }

    private static func isAlpha(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
            || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    private static func isHex(_ byte: UInt8) -> Bool {
        isDigit(byte) || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "f"))
            || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "F"))
    }

    private static func isSchemeByte(_ byte: UInt8) -> Bool {
        isAlpha(byte) || isDigit(byte) || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-")
            || byte == UInt8(ascii: ".")
    }
}
