/// The primary key of a response entry as the store holds it, both ways.
///
/// ```
/// offset  size  field
///      0     1  "K"
///      1     1  format version = 1
///      2   4+n  partition (UTF-8)
///      …   4+n  method ("GET" / "HEAD")
///      …   4+n  normalised URL
/// ```
///
/// Every field carries its length, so the encoding is injective; the store hashes it into the
/// index key and keeps it in the record to compare on every lookup (a hash collision is a miss).
/// Keys written through the store directly (tests, benchmarks) do not decode; tools show them as hex.
package enum KeyLayout {
    package static let tag = UInt8(ascii: "K")
    package static let formatVersion: UInt8 = 1

    /// The key bytes; the URL is `urlParts` written one after another (the caller's normalised
    /// URL in pieces, so no joined string is built on the lookup path).
    package static func encode(partition: String, method: String, urlParts: String...) -> [UInt8] {
        let urlBytes = urlParts.reduce(0) { $0 + $1.utf8.count }
        var writer = ByteWriter(reservingCapacity: 14 + partition.utf8.count + method.utf8.count + urlBytes)
        writer.bytes.append(tag)
        writer.bytes.append(formatVersion)
        writer.appendString(partition)
        writer.appendString(method)
        writer.appendUInt32(UInt32(clamping: urlBytes))
        for part in urlParts { writer.bytes += part.utf8 }
        return writer.bytes
    }

    /// The fields of `encode`d bytes; `nil` for anything else (a raw key, another version,
    /// trailing bytes, invalid UTF-8, an empty method or URL). Keys are untrusted: every length
    /// is bounded before use.
    package static func decode(_ bytes: [UInt8]) -> (partition: String, method: String, url: String)? {
        var reader = ByteReader(bytes)
        guard reader.readUInt8() == tag, reader.readUInt8() == formatVersion,
            let partition = reader.readString(), let method = reader.readString(), let url = reader.readString(),
            reader.isAtEnd, !method.isEmpty, !url.isEmpty
        else { return nil }
        return (partition, method, url)
    }
}
