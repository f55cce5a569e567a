/// CRC-32 (ISO-HDLC: zlib's, gzip's and PNG's; reflected polynomial 0xEDB88320) for snapshot
/// files. In Swift because only the C core may link zlib (Package.swift's layers); a snapshot is
/// checked at disk speed, not on any hot path, so a table-driven byte loop is enough.
package struct SnapshotCRC32: Sendable {
    private static let table: [UInt32] = (0..<256).map { index in
        var crc = UInt32(index)
        for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        return crc
    }

    private var state: UInt32 = 0xFFFF_FFFF

    package init() {}

    /// Adds `bytes` to the running checksum.
    package mutating func update(_ bytes: some Sequence<UInt8>) {
        var crc = state
        Self.table.withUnsafeBufferPointer { table in
            for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        }
        state = crc
    }

    /// The checksum of everything added so far.
    package var value: UInt32 { state ^ 0xFFFF_FFFF }

    /// The checksum of `bytes` alone.
    package static func checksum(_ bytes: some Sequence<UInt8>) -> UInt32 {
        var crc = SnapshotCRC32()
        crc.update(bytes)
        return crc.value
    }
}
