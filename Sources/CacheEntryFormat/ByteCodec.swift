import Foundation

/// The one writer of the entry format: integers big-endian, strings and fields as a 32-bit
/// length followed by their bytes, so no two field sequences encode alike (plain concatenation
/// is not injective: partition "a" + URL "b…" and partition "ab" + URL "…" would collide).
package struct ByteWriter {
    package var bytes: [UInt8] = []

    package init(reservingCapacity capacity: Int = 0) { bytes.reserveCapacity(capacity) }

    package mutating func appendUInt16(_ value: UInt16) {
        bytes.append(UInt8(truncatingIfNeeded: value >> 8))
        bytes.append(UInt8(truncatingIfNeeded: value))
    }

    package mutating func appendUInt32(_ value: UInt32) {
        bytes.append(UInt8(truncatingIfNeeded: value >> 24))
        bytes.append(UInt8(truncatingIfNeeded: value >> 16))
        bytes.append(UInt8(truncatingIfNeeded: value >> 8))
        bytes.append(UInt8(truncatingIfNeeded: value))
    }

    package mutating func appendUInt64(_ value: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) {
            bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
        }
    }

    package mutating func appendString(_ string: String) {
        // No intermediate array: keys are encoded on every lookup.
        appendUInt32(UInt32(clamping: string.utf8.count))
        bytes += string.utf8
    }

    package mutating func appendOptionalString(_ string: String?) {
        guard let string else { return bytes.append(0) }
        bytes.append(1)
        appendString(string)
    }

    package mutating func appendPairs(_ pairs: [ResponseHead.HeaderPair]) {
        appendUInt32(UInt32(clamping: pairs.count))
        for pair in pairs {
            appendString(pair.name)
            appendString(pair.value)
        }
    }
}

/// A cursor over untrusted bytes: every read checks the remaining length first.
package struct ByteReader {
    private let bytes: [UInt8]
    private var offset = 0

    package init(_ bytes: [UInt8]) { self.bytes = bytes }

    package var isAtEnd: Bool { offset == bytes.count }
    private var remaining: Int { bytes.count - offset }

    package mutating func readBytes(_ count: Int) -> ArraySlice<UInt8>? {
        guard count >= 0, count <= remaining else { return nil }
        defer { offset += count }
        return bytes[offset..<(offset + count)]
    }

    package mutating func readUInt8() -> UInt8? { readBytes(1)?.first }

    package mutating func readUInt16() -> UInt16? {
        guard let slice = readBytes(2) else { return nil }
        return slice.reduce(0) { $0 << 8 | UInt16($1) }
    }

    package mutating func readUInt32() -> UInt32? {
        guard let slice = readBytes(4) else { return nil }
        return slice.reduce(0) { $0 << 8 | UInt32($1) }
    }

    package mutating func readUInt64() -> UInt64? {
        guard let slice = readBytes(8) else { return nil }
        return slice.reduce(0) { $0 << 8 | UInt64($1) }
    }

    package mutating func readString() -> String? {
        guard let length = readUInt32(), let slice = readBytes(Int(length)) else { return nil }
        return slice.withUnsafeBufferPointer { buffer in
            // ASCII (URLs, field names, nearly every value) is valid UTF-8 as it is: decoding it
            // skips the generic validation, which was most of a response head's decoding.
            if buffer.allSatisfy({ $0 < 0x80 }) { return String(decoding: buffer, as: UTF8.self) }
            return String(validating: buffer, as: UTF8.self)
        }
    }

    package mutating func readOptionalString() -> String?? {
        switch readUInt8() {
        case 0: return .some(nil)
        case 1: return readString().map { .some($0) }
        default: return nil
        }
    }

    package mutating func readPairs(limit: Int) -> [ResponseHead.HeaderPair]? {
        // Each pair takes at least 8 bytes, so a count beyond remaining / 8 is corrupt: checked
        // before anything is allocated.
        guard let count = readUInt32(), count <= limit, Int(count) <= remaining / 8 else { return nil }
        var pairs: [ResponseHead.HeaderPair] = []
        pairs.reserveCapacity(Int(count))
        for _ in 0..<count {
            guard let name = readString(), let value = readString() else { return nil }
            pairs.append(.init(name: name, value: value))
        }
        return pairs
    }
}
