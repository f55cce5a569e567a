import Foundation
import HTTPCacheSemantics
import SharedURLCacheStore

/// A stored zlib stream sent as a content-coded body (compressed passthrough): as it is for
/// `deflate` (HTTP's `deflate` is the zlib format, RFC 9110 §8.4.1.2); for `gzip`, its deflate
/// data — the stream without its 2-byte zlib header and 4-byte Adler-32 trailer — between a gzip
/// header and a trailer of the body's CRC-32 and length (RFC 1952), both kept in the record.
/// Nothing is compressed or inflated; the client's decoder checks the stream (Adler-32 or the
/// gzip CRC-32 of the body itself).
struct EncodedBody: Sendable {
    let reader: BodyReader
    let coding: ContentCodingNegotiation.Coding

    /// What the client receives: the stream, or 10 + deflate data + 8 bytes.
    var length: Int { coding == .gzip ? reader.size - 6 + 18 : reader.size }

    struct Iterator {
        let body: EncodedBody
        /// Stream bytes read so far.
        var offset = 0
        var trailerSent = false

        mutating func next() throws -> Data? {
            let total = body.reader.size
            let chunk = try body.reader.read(maxBytes: CachedBody.chunkBytes)
            let start = offset
            offset += chunk.count
            if start == 0, !chunk.isEmpty || total > 0 {
                // A zlib header this layout can unwrap: deflate, no preset dictionary (the core
                // writes nothing else; anything else is not a stream of ours).
                guard chunk.count >= 2, chunk[0] & 0x0f == 8, (UInt16(chunk[0]) << 8 | UInt16(chunk[1])) % 31 == 0,
                    chunk[1] & 0x20 == 0
                else { throw CacheError(.corrupt, "the stored stream has no zlib header") }
            }
            guard body.coding == .gzip else { return chunk.isEmpty ? nil : Data(chunk) }
            if chunk.isEmpty {
                guard !trailerSent else { return nil }
                trailerSent = true
                return Self.littleEndian(body.reader.logicalCRC32)
                    + Self.littleEndian(UInt32(truncatingIfNeeded: body.reader.logicalSize))
            }
            // Keep stream offsets [2, total - 4): the deflate data.
            let keepFrom = max(start, 2) - start
            let keepTo = min(offset, total - 4) - start
            var out = start == 0 ? Self.gzipHeader : Data()
            if keepTo > keepFrom { out.append(contentsOf: chunk[keepFrom..<keepTo]) }
            return out
        }

        /// ID1 ID2, CM = deflate, no flags, no mtime, XFL 0, OS = unknown.
        static let gzipHeader = Data([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255])

        static func littleEndian(_ value: UInt32) -> Data {
            Data([UInt8(value & 0xff), UInt8(value >> 8 & 0xff), UInt8(value >> 16 & 0xff), UInt8(value >> 24)])
        }
    }
}
