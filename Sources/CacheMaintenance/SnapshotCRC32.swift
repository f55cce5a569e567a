import SharedURLCacheStore

/// CRC-32 (ISO-HDLC: zlib's, gzip's and PNG's) for snapshot files: the core's checksum
/// (``Checksum``), kept running across the pieces a snapshot is read and written in.
package struct SnapshotCRC32: Sendable {
    private var state: UInt32 = 0

    package init() {}

    /// Adds `bytes` to the running checksum.
    package mutating func update(_ bytes: some Sequence<UInt8>) {
        let crc = state
        state =
            bytes.withContiguousStorageIfAvailable { Checksum.crc32(UnsafeRawBufferPointer($0), continuing: crc) }
            ?? Array(bytes).withUnsafeBytes { Checksum.crc32($0, continuing: crc) }
    }

    /// The checksum of everything added so far.
    package var value: UInt32 { state }

    /// The checksum of `bytes` alone.
    package static func checksum(_ bytes: some Sequence<UInt8>) -> UInt32 {
        var crc = SnapshotCRC32()
        crc.update(bytes)
        return crc.value
    }
}
