import CacheEntryFormat
import Foundation
import SharedURLCacheStore

/// The portable snapshot file of `urlcache export` / `urlcache import` (docs/Operating.md,
/// "Starting warm"). All integers big-endian; every part carries a CRC-32 of its own, so damage
/// is found at the record it hits, before anything of that record is stored.
///
///     header   "SUCSNAP\n" | version u32 | flags u32 (0) | created ms u64 | CRC-32 u32 of the 24 bytes before
///     entry    'E' | meta length u32 | meta | CRC-32 u32 of 'E', length and meta
///              then the body: chunks of (length u32 in 1...1 MiB | bytes), ended by
///              0 u32 | CRC-32 u32 of the body bytes, or by 0xFFFFFFFF when the entry
///              could not be read whole during the export (the entry is then skipped)
///     trailer  'Z' | entries u64 | trailer offset u64 | CRC-32 u32 of every byte before the
///              trailer | CRC-32 u32 of the 21 bytes before | "SUCSEND\n"
///
/// meta: key, variant, partition, head, userInfo (each u32 length + bytes), tags (u32 count,
/// each u32 length + UTF-8), stored at (ms since 1970, u64), app flags u32, flags u8 (bit 0:
/// body stored uncompressed, bit 1: soft-purged), body length u64.
package enum SnapshotFormat {
    /// The first eight bytes of every snapshot.
    static let magic = Array("SUCSNAP\n".utf8)
    /// The last eight bytes of a complete snapshot.
    static let endMagic = Array("SUCSEND\n".utf8)
    /// The format version this release writes and reads.
    package static let version: UInt32 = 1
    static let headerBytes = 28
    static let trailerBytes = 1 + 8 + 8 + 4 + 4 + 8
    static let entryTag: UInt8 = 0x45 // "E"
    static let trailerTag: UInt8 = 0x5A // "Z"
    /// Body chunk size written, and the largest accepted.
    static let chunkBytes = 64 << 10
    static let maximumChunkBytes = 1 << 20
    static let abandonedBody: UInt32 = 0xFFFF_FFFF
    /// The largest meta block accepted: past every limit of the store (key, head, userInfo,
    /// tags), so a damaged length is refused before anything is allocated for it.
    static let maximumMetaBytes = 32 << 20

    static let flagUncompressed: UInt8 = 1
    static let flagSoftPurged: UInt8 = 2
}

/// One entry's metadata as a snapshot carries it.
package struct SnapshotEntry: Sendable, Hashable {
    package var key: [UInt8]
    package var variant: [UInt8]
    package var partition: [UInt8]
    package var head: [UInt8]
    package var userInfo: [UInt8]
    package var tags: [String]
    package var storedAtMilliseconds: UInt64
    package var appFlags: UInt32
    package var storedUncompressed: Bool
    package var softPurged: Bool
    package var bodySize: UInt64

    package init(_ record: StoredRecord) {
        key = record.key
        variant = record.variant
        partition = record.partition
        head = record.head
        userInfo = record.userInfo
        tags = record.tags
        storedAtMilliseconds = UInt64(max(0, (record.storedAt.timeIntervalSince1970 * 1000).rounded()))
        appFlags = record.appFlags
        storedUncompressed = !record.isCompressed
        softPurged = record.invalidatedAt != nil
        bodySize = UInt64(record.bodySize)
    }

    /// When it was stored, to the millisecond.
    package var storedAt: Date { Date(timeIntervalSince1970: Double(storedAtMilliseconds) / 1000) }

    /// The descriptor that stores it again as it was (other variants left alone: a snapshot
    /// holds a key's Vary spec and its variants as separate entries).
    package var descriptor: RecordDescriptor {
        RecordDescriptor(
            key: key, variant: variant, partition: partition, head: head, userInfo: userInfo, storedAt: storedAt,
            appFlags: appFlags, storeUncompressed: storedUncompressed, otherVariants: .leave, tags: tags)
    }

    var encoded: [UInt8] {
        var writer = ByteWriter(reservingCapacity: 64 + key.count + variant.count + head.count + userInfo.count)
        for field in [key, variant, partition, head, userInfo] {
            writer.appendUInt32(UInt32(field.count))
            writer.bytes += field
        }
        writer.appendUInt32(UInt32(tags.count))
        for tag in tags { writer.appendString(tag) }
        writer.appendUInt64(storedAtMilliseconds)
        writer.appendUInt32(appFlags)
        writer.bytes.append(
            (storedUncompressed ? SnapshotFormat.flagUncompressed : 0)
                | (softPurged ? SnapshotFormat.flagSoftPurged : 0))
        writer.appendUInt64(bodySize)
        return writer.bytes
    }

    /// Decodes a meta block whose checksum matched; `nil` when it does not parse (a writer of
    /// another version, or damage the checksum missed).
    init?(decoding bytes: [UInt8]) {
        var reader = ByteReader(bytes)
        var fields: [[UInt8]] = []
        for _ in 0..<5 {
            guard let length = reader.readUInt32(), let field = reader.readBytes(Int(length)) else { return nil }
            fields.append(Array(field))
        }
        guard let tagCount = reader.readUInt32(), Int(tagCount) <= bytes.count / 4 else { return nil }
        var tags: [String] = []
        for _ in 0..<tagCount {
            guard let tag = reader.readString() else { return nil }
            tags.append(tag)
        }
        guard let storedAt = reader.readUInt64(), let appFlags = reader.readUInt32(), let flags = reader.readUInt8(),
            let bodySize = reader.readUInt64(), reader.isAtEnd
        else { return nil }
        (key, variant, partition, head, userInfo) = (fields[0], fields[1], fields[2], fields[3], fields[4])
        self.tags = tags
        storedAtMilliseconds = storedAt
        self.appFlags = appFlags
        storedUncompressed = flags & SnapshotFormat.flagUncompressed != 0
        softPurged = flags & SnapshotFormat.flagSoftPurged != 0
        self.bodySize = bodySize
    }
}

extension UInt32 {
    var bigEndianBytes: [UInt8] {
        [UInt8(self >> 24), UInt8(self >> 16 & 0xFF), UInt8(self >> 8 & 0xFF), UInt8(self & 0xFF)]
    }
}

extension UInt64 {
    var bigEndianBytes: [UInt8] {
        stride(from: 56, through: 0, by: -8).map { UInt8(truncatingIfNeeded: self >> UInt64($0)) }
    }
}
