import Foundation

/// The record stored at a key's empty variant when its response carries `Vary`: the `Vary`
/// field value, from which a lookup computes the variant of the presented request.
///
/// ```
/// offset  size  field
///      0     2  magic "VS"
///      2     1  format version = 1
///      3   4+n  the Vary names, lowercased, joined by ", "
/// ```
package struct VarySpec: Sendable, Hashable {
    package static let magic: [UInt8] = [UInt8(ascii: "V"), UInt8(ascii: "S")]
    package static let formatVersion: UInt8 = 1

    /// The names joined by ", " (canonical form: the parsed, lowercased, deduplicated names).
    package var varyValue: String

    package init(names: [String]) { varyValue = names.joined(separator: ", ") }

    package func encoded() -> [UInt8] {
        var writer = ByteWriter()
        writer.bytes += Self.magic
        writer.bytes.append(Self.formatVersion)
        writer.appendString(varyValue)
        return writer.bytes
    }

    package init?(decoding bytes: [UInt8]) {
        var reader = ByteReader(bytes)
        guard reader.readBytes(2).map(Array.init) == Self.magic, reader.readUInt8() == Self.formatVersion,
            let value = reader.readString(), reader.isAtEnd
        else { return nil }
        varyValue = value
    }
}
