/// Where the parts of an absolute http(s) URL lie in its bytes, checked and normalised as
/// ``NormalizedURL`` documents: the one parser behind ``NormalizedURL`` and
/// ``CacheKey/encoded(partition:method:url:)``. It makes no string and copies no byte, so a
/// lookup of a URL not seen before can write its key straight from the request's bytes
/// (Benchmarks/RESULTS.md: building strings was most of a miss's time).
struct URLSyntax {
    /// `http` or `https`, lowercased (a literal: no string is made per URL).
    let scheme: String
    /// The host's bytes (an IP literal keeps its brackets), to be lowercased when ``hostHasUpper``.
    let host: Range<Int>
    /// The host has an ASCII capital letter.
    let hostHasUpper: Bool
    /// The port, or nil when it is the scheme's default.
    let port: Int?
    /// The path and query with its `?`, byte-exact, without the fragment.
    let pathAndQuery: Range<Int>
    /// The path is empty, so the normalised URL gets `/` before ``pathAndQuery`` (RFC 9110 §4.2.3).
    let needsRootPath: Bool

    /// Parses and checks `bytes`, the whole URL.
    init(_ bytes: [UInt8]) throws(CacheKeyError) {
        guard bytes.count <= NormalizedURL.maximumBytes else { throw .urlTooLong(bytes: bytes.count) }
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
        let authority = authorityStart..<index
        // RFC 9110 §4.2.4: userinfo is deprecated and a confusion vector; never keyed.
        guard !bytes[authority].contains(UInt8(ascii: "@")) else { throw .userinfoNotAllowed }
        let (host, portBytes) = try Self.splitHostPort(bytes, authority)
        self.scheme = scheme
        self.host = host
        self.hostHasUpper = bytes[host].contains { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }
        self.port = try Self.port(portBytes.map { bytes[$0] }, defaultPort: defaultPort)

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
        self.pathAndQuery = index..<end
        self.needsRootPath = index == end || bytes[index] == UInt8(ascii: "?")
    }

    /// The normalised URL's length in bytes: scheme, `://`, host, optional `:port`, path and query.
    var normalizedByteCount: Int {
        scheme.utf8.count + 3 + host.count + (port.map { 1 + String($0).utf8.count } ?? 0)
            + (needsRootPath ? 1 : 0) + pathAndQuery.count
    }

    /// Appends the normalised URL, taking the parts from `bytes` (the bytes parsed).
    func appendNormalized(of bytes: [UInt8], to output: inout [UInt8]) {
        output += scheme.utf8
        output += "://".utf8
        appendHost(of: bytes, to: &output)
        if let port {
            output.append(UInt8(ascii: ":"))
            output += String(port).utf8
        }
        if needsRootPath { output.append(UInt8(ascii: "/")) }
        output += bytes[pathAndQuery]
    }

    /// Appends the host, lowercased.
    func appendHost(of bytes: [UInt8], to output: inout [UInt8]) {
        guard hostHasUpper else { return output += bytes[host] }
        for byte in bytes[host] {
            output.append(byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte)
        }
    }

    // MARK: - Pieces

    private static func splitHostPort(_ bytes: [UInt8], _ authority: Range<Int>) throws(CacheKeyError) -> (
        Range<Int>, Range<Int>?
    ) {
        guard let first = authority.first.map({ bytes[$0] }) else { throw .missingHost }
        var host: Range<Int>
        var port: Range<Int>?
        if first == UInt8(ascii: "[") {
            // RFC 3986 §3.2.2 IP-literal: hex digits, ':' and '.' inside brackets.
            guard let close = bytes[authority].firstIndex(of: UInt8(ascii: "]")), close > authority.lowerBound + 1
            else { throw .invalidHost }
            host = authority.lowerBound..<(close + 1)
            guard
                bytes[(authority.lowerBound + 1)..<close].allSatisfy({
                    isHex($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".")
                })
            else { throw .invalidHost }
            let after = (close + 1)..<authority.upperBound
            if !after.isEmpty {
                guard bytes[after.lowerBound] == UInt8(ascii: ":") else { throw .invalidHost }
                port = (after.lowerBound + 1)..<after.upperBound
            }
        } else {
            if let colon = bytes[authority].firstIndex(of: UInt8(ascii: ":")) {
                host = authority.lowerBound..<colon
                port = (colon + 1)..<authority.upperBound
            } else {
                host = authority
            }
            guard !host.isEmpty else { throw .missingHost }
            if bytes[host].contains(where: { $0 >= 0x80 }) { throw .nonASCIIHost }
            let hostChars = bytes[host].allSatisfy {
                isAlpha($0) || isDigit($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".")
                    || $0 == UInt8(ascii: "_")
            }
            guard hostChars else { throw .invalidHost }
        }
        guard host.count <= NormalizedURL.maximumHostBytes else { throw .hostTooLong(bytes: host.count) }
        return (host, port)
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
    /// §4.2.2 https → 443), for `http` and `https` in any case; nil for any other scheme.
    private static func knownScheme(_ name: ArraySlice<UInt8>) -> (String, Int)? {
        // The name lowered and packed into one integer, compared with "http" and "https" packed
        // alike: no array or string per URL. Scheme bytes are letters, digits and + - . (the
        // caller checked): `| 0x20` lowers a letter and turns no other of them into a letter.
        guard name.count <= 5 else { return nil }
        let packed = name.reduce(UInt64(0)) { $0 << 8 | UInt64($1 | 0x20) }
        switch packed {
        case 0x6874_7470: return ("http", 80)
        case 0x68_7474_7073: return ("https", 443)
        default: return nil
        }
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
