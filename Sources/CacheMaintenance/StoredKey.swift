import CacheEntryFormat
import HTTPCacheSemantics

/// A store key read back as the (partition, method, URL) the URL-level API encoded into it
/// (the entry format's `KeyLayout`, which `CacheKey.encoded` writes). Keys written through the
/// store directly (tests, benchmarks) do not decode; tools show them as hex.
package struct StoredKey: Sendable, Hashable, Codable {
    package var partition: String
    package var method: String
    /// The normalised URL, as keyed.
    package var url: String

    package init(partition: String, method: String, url: String) {
        self.partition = partition
        self.method = method
        self.url = url
    }

    /// Decodes `CacheKey.encoded` bytes; `nil` for anything else (a raw key, another version,
    /// trailing bytes, invalid UTF-8). Every length is bounded before use: keys are untrusted.
    package init?(decoding bytes: [UInt8]) {
        guard let fields = KeyLayout.decode(bytes) else { return nil }
        self.init(partition: fields.partition, method: fields.method, url: fields.url)
    }

    /// The store key the URL-level API uses for this (partition, method, normalised URL).
    package var encoded: [UInt8] { KeyLayout.encode(partition: partition, method: method, urlParts: url) }

    /// The key of `url` (normalised as the cache does) in `partition` for `method`.
    /// - Throws: ``MaintenanceError/invalidArgument(_:)`` when the URL is not cacheable.
    package static func encode(partition: String, method: String, url: String) throws(MaintenanceError) -> [UInt8] {
        StoredKey(partition: partition, method: method, url: try normalize(url)).encoded
    }

    /// The URL as keys hold it (scheme and host lowercased, default port elided, fragment dropped).
    package static func normalize(_ url: String) throws(MaintenanceError) -> String {
        do {
            return try NormalizedURL(url).string
        } catch {
            throw .invalidArgument("'\(url)' is not a cacheable http(s) URL (\(error))")
        }
    }

    /// A URL prefix normalised like keys are, where it parses: "HTTPS://API.Example.com:443/v1"
    /// matches keys under "https://api.example.com/v1". A prefix that stops inside the authority
    /// ("https://api.exa") keeps no added "/", and one that does not parse is used as given.
    package static func normalizePrefix(_ prefix: String) -> String {
        guard let normalized = try? NormalizedURL(prefix).string else { return prefix }
        let afterScheme = prefix.range(of: "://").map { prefix[$0.upperBound...] } ?? ""
        let hasPath = afterScheme.contains("/") || afterScheme.contains("?")
        if !hasPath, normalized.hasSuffix("/") { return String(normalized.dropLast()) }
        return normalized
    }
}

/// The variant (secondary key) read back as `VaryKey.encoded` (the entry format's
/// `VariantLayout`): the selecting request fields.
package struct StoredVariant: Sendable, Hashable, Codable {
    package struct Field: Sendable, Hashable, Codable {
        package var name: String
        /// `nil`: the request did not carry the field.
        package var value: String?

        package init(name: String, value: String?) {
            self.name = name
            self.value = value
        }
    }

    package var fields: [Field]

    /// Decodes `VaryKey.encoded` bytes; `nil` for anything else. An empty variant decodes to
    /// no fields (a response stored without `Vary`).
    package init?(decoding bytes: [UInt8]) {
        guard let fields = VariantLayout.decode(bytes) else { return nil }
        self.fields = fields.map { Field(name: $0.name, value: $0.value) }
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
