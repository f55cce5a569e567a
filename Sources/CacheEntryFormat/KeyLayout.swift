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
        encode(partition: partition, method: method, urlByteCount: urlParts.reduce(0) { $0 + $1.utf8.count }) {
            for part in urlParts { $0 += part.utf8 }
        }
    }

    /// The key bytes, the URL written by `appendURL`, which must append exactly `urlByteCount`
    /// bytes (a caller that writes the URL straight from the bytes it parsed).
    package static func encode(
        partition: String, method: String, urlByteCount: Int, appendURL: (inout [UInt8]) -> Void
    ) -> [UInt8] {
        var writer = ByteWriter(reservingCapacity: 14 + partition.utf8.count + method.utf8.count + urlByteCount)
        writer.bytes.append(tag)
        writer.bytes.append(formatVersion)
        writer.appendString(partition)
        writer.appendString(method)
        writer.appendUInt32(UInt32(clamping: urlByteCount))
        appendURL(&writer.bytes)
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
