/// The variant (secondary key) of a response stored under `Vary`, both ways: the selecting
/// request fields, each present with its normalised value or absent.
///
/// ```
/// offset  size  field
///      0     1  "V"
///      1     1  format version = 1
///      2     4  field count N
///      …        N × (name, then 0 = absent or 1 + value); names and values 4+n
/// ```
///
/// An empty variant is a response stored without `Vary` (or a key's selector record).
package enum VariantLayout {
    package static let tag = UInt8(ascii: "V")
    package static let formatVersion: UInt8 = 1

    /// One selecting field: its lowercased name and normalised value, `nil` when absent.
    package struct Field: Sendable, Hashable {
        package var name: String
        package var value: String?

        package init(name: String, value: String?) {
            self.name = name
            self.value = value
        }
    }

    package static func encode(_ fields: [Field]) -> [UInt8] {
        var writer = ByteWriter()
        writer.bytes.append(tag)
        writer.bytes.append(formatVersion)
        writer.appendUInt32(UInt32(clamping: fields.count))
        for field in fields {
            writer.appendString(field.name)
            writer.appendOptionalString(field.value)
        }
        return writer.bytes
    }

    /// The fields of `encode`d bytes (none for an empty variant); `nil` for anything else.
    package static func decode(_ bytes: [UInt8]) -> [Field]? {
        if bytes.isEmpty { return [] }
        var reader = ByteReader(bytes)
        // Each field takes at least 5 bytes: a larger count is corrupt, refused before allocating.
        guard reader.readUInt8() == tag, reader.readUInt8() == formatVersion, let count = reader.readUInt32(),
            Int(count) <= bytes.count / 5
        else { return nil }
        var fields: [Field] = []
        for _ in 0..<count {
            guard let name = reader.readString(), let value = reader.readOptionalString() else { return nil }
            fields.append(Field(name: name, value: value))
        }
        return reader.isAtEnd ? fields : nil
    }
}
