/// Length-prefixed byte encoding shared by ``CacheKey`` and ``VaryKey``: fields are written as
/// a 32-bit big-endian length followed by the bytes, so no two field sequences encode alike
/// (docs/Reliability.md §3.2: plain concatenation is not injective).
enum LengthPrefix {
    static func append(_ value: UInt32, to bytes: inout [UInt8]) {
        bytes.append(UInt8(truncatingIfNeeded: value >> 24))
        bytes.append(UInt8(truncatingIfNeeded: value >> 16))
        bytes.append(UInt8(truncatingIfNeeded: value >> 8))
        bytes.append(UInt8(truncatingIfNeeded: value))
    }

    static func appendField(_ field: [UInt8], to bytes: inout [UInt8]) {
        append(UInt32(clamping: field.count), to: &bytes)
        bytes.append(contentsOf: field)
    }
}
