import HTTPTypes

/// The primary key of a stored response (docs/Reliability.md §3.2): format version, partition, method
/// and normalised URL, encoded injectively.
public struct CacheKey: Sendable, Hashable {
    /// The version of ``encoded``'s layout; a change gives every key a new encoding.
    public static let formatVersion: UInt8 = 1
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
        let partitionBytes = partition.utf8.count
        guard partitionBytes <= Self.maximumPartitionBytes else { throw .partitionTooLong(bytes: partitionBytes) }
        guard method == .get || method == .head else { throw .methodNotCacheable }
        self.partition = partition
        self.method = method
        self.url = try NormalizedURL(url)
    }

    /// The injective byte encoding, to hash into the index key and to store for verification:
    /// `"K"`, ``formatVersion``, then partition, method and URL, each as a 32-bit big-endian
    /// length followed by its UTF-8 bytes. Because every field carries its length, partition
    /// "a" + URL "b…" and partition "ab" + URL "…" can never encode alike.
    ///
    /// Written into one buffer sized up front (the same bytes as appending each field as an
    /// array): the key is built on every lookup of a URL not seen before.
    public var encoded: [UInt8] {
        let port = url.port.map { ":\($0)" } ?? ""
        let urlBytes = url.scheme.utf8.count + 3 + url.host.utf8.count + port.utf8.count + url.pathAndQuery.utf8.count
        var bytes: [UInt8] = []
        bytes.reserveCapacity(2 + 12 + partition.utf8.count + method.rawValue.utf8.count + urlBytes)
        bytes.append(UInt8(ascii: "K"))
        bytes.append(Self.formatVersion)
        LengthPrefix.append(UInt32(clamping: partition.utf8.count), to: &bytes)
        bytes.append(contentsOf: partition.utf8)
        LengthPrefix.append(UInt32(clamping: method.rawValue.utf8.count), to: &bytes)
        bytes.append(contentsOf: method.rawValue.utf8)
        // NormalizedURL.string is origin + pathAndQuery, origin scheme "://" host [":" port].
        LengthPrefix.append(UInt32(clamping: urlBytes), to: &bytes)
        bytes.append(contentsOf: url.scheme.utf8)
        bytes.append(contentsOf: "://".utf8)
        bytes.append(contentsOf: url.host.utf8)
        bytes.append(contentsOf: port.utf8)
        bytes.append(contentsOf: url.pathAndQuery.utf8)
        return bytes
    }
}
