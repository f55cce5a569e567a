import CSharedURLCache

/// The core's CRC-32 (zlib's, computed by libdeflate) for files other layers write, so that no
/// module keeps a checksum of its own.
package enum Checksum {
    /// The CRC-32 of `bytes`, continuing `crc` (0 starts one).
    /// The corresponding C function is `suc_checksum_crc32`.
    package static func crc32(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        suc_checksum_crc32(crc, bytes.baseAddress, bytes.count)
    }
}
