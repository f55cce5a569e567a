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
        let syntax = try URLSyntax(bytes)
        var host: [UInt8] = []
        syntax.appendHost(of: bytes, to: &host)
        self.scheme = syntax.scheme
        self.host = String(decoding: host, as: UTF8.self)
        self.port = syntax.port
        let rest = String(decoding: bytes[syntax.pathAndQuery], as: UTF8.self)
        self.pathAndQuery = syntax.needsRootPath ? "/" + rest : rest
    }

    /// The normalised URL text, e.g. `https://example.com/a?b`.
    public var string: String { origin + pathAndQuery }

    /// Scheme, host and port: the origin (RFC 6454) used for the same-origin check of §4.4.
    public var origin: String { scheme + "://" + host + (port.map { ":\($0)" } ?? "") }

    public var description: String { string }
}
