import CacheEntryFormat
import HTTPTypes

/// The primary key of a stored response (docs/Reliability.md §3.2): format version, partition, method
/// and normalised URL, encoded injectively.
public struct CacheKey: Sendable, Hashable {
    /// The version of ``encoded``'s layout; a change gives every key a new encoding.
    public static let formatVersion: UInt8 = KeyLayout.formatVersion
    /// The longest partition accepted, in bytes.
    public static let maximumPartitionBytes = 1024

    /// The partition (tenant / user / service) the entry belongs to.
    public let partition: String
    /// The method keyed on (GET or HEAD; looking up HEAD under GET is the flow's choice).
    public let method: HTTPRequest.Method
    /// The normalised URL.
    public let url: NormalizedURL

    /// Builds a key.
    ///
    /// - Parameters:
    ///   - partition: The partition name; any bytes, at most ``maximumPartitionBytes``.
    ///   - method: GET or HEAD.
    ///   - url: The absolute request URL.
    /// - Throws: ``CacheKeyError`` when the request is not cacheable.
    public init(partition: String, method: HTTPRequest.Method, url: String) throws(CacheKeyError) {
        try Self.check(partition: partition, method: method)
        self.partition = partition
        self.method = method
        self.url = try NormalizedURL(url)
    }

    /// The injective byte encoding, to hash into the index key and to store for verification
    /// (the layout is the entry format's `KeyLayout`): `"K"`, ``formatVersion``, then partition,
    /// method and URL, each as a 32-bit big-endian length followed by its UTF-8 bytes. Because
    /// every field carries its length, partition "a" + URL "b…" and partition "ab" + URL "…"
    /// can never encode alike.
    public var encoded: [UInt8] {
        // NormalizedURL.string is scheme "://" host [":" port] pathAndQuery; written in pieces.
        KeyLayout.encode(
            partition: partition, method: method.rawValue,
            urlParts: url.scheme, "://", url.host, url.port.map { ":\($0)" } ?? "", url.pathAndQuery)
    }

    /// The ``encoded`` bytes of the key `init(partition:method:url:)` would build, with the
    /// same checks and errors, written straight from the URL's bytes: no ``NormalizedURL`` and
    /// none of its strings are made. Every lookup of a URL not seen before pays for its key.
    public static func encoded(partition: String, method: HTTPRequest.Method, url: String) throws(CacheKeyError)
        -> [UInt8]
    {
        try check(partition: partition, method: method)
        let bytes = Array(url.utf8)
        let syntax = try URLSyntax(bytes)
        return KeyLayout.encode(
            partition: partition, method: method.rawValue, urlByteCount: syntax.normalizedByteCount
        ) { syntax.appendNormalized(of: bytes, to: &$0) }
    }

    private static func check(partition: String, method: HTTPRequest.Method) throws(CacheKeyError) {
        let partitionBytes = partition.utf8.count
        guard partitionBytes <= maximumPartitionBytes else { throw .partitionTooLong(bytes: partitionBytes) }
        guard method == .get || method == .head else { throw .methodNotCacheable }
    }
}
