import Foundation

/// Reads a snapshot file record by record, checking each part's CRC-32 before handing it out,
/// through a 256 KiB buffer (memory holds one entry's metadata and one body chunk).
package final class SnapshotReader {
    /// What comes next in the file.
    package enum Item {
        /// An entry's metadata; read its body with ``readBody()`` until it ends.
        case entry(SnapshotEntry, offset: Int)
        /// The trailer, checked: the file is complete and its entry count matches.
        case end(entries: Int)
    }

    private let handle: FileHandle
    private var buffer: [UInt8] = []
    private var position = 0
    private var atEOF = false
    private var fileCRC = SnapshotCRC32()
    /// Bytes consumed so far (the offset errors name).
    package private(set) var offset = 0
    private var entries = 0
    private var bodyCRC: SnapshotCRC32?
    private var entryOffset = 0
    /// The current entry's body bytes read so far, against its declared length.
    private var bodyBytes: UInt64 = 0
    private var declaredBodyBytes: UInt64 = 0

    /// Opens `path` and checks its header.
    /// - Throws: ``SnapshotError``: `.io` when it cannot be opened, `.foreign`,
    ///   `.unsupportedVersion`, `.truncated`, `.damaged`.
    package init(path: String) throws(SnapshotError) {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw .io("cannot open \(path)") }
        self.handle = handle
        let header = try read(SnapshotFormat.headerBytes, magicCheck: true)
        guard SnapshotCRC32.checksum(header[0..<24]) == UInt32(bigEndian: header[24..<28]) else {
            throw .damaged(offset: 0, reason: "header checksum")
        }
        let version = UInt32(bigEndian: header[8..<12])
        guard version == SnapshotFormat.version else { throw .unsupportedVersion(version) }
    }

    deinit { try? handle.close() }

    private func fill() throws(SnapshotError) {
        if position > 0 {
            buffer.removeFirst(position)
            position = 0
        }
        do {
            if let data = try handle.read(upToCount: 256 << 10), !data.isEmpty { buffer += data } else { atEOF = true }
        } catch { throw .io("reading: \(error)") }
    }

    /// The next `count` bytes, counted in the file's running checksum.
    private func read(_ count: Int, magicCheck: Bool = false) throws(SnapshotError) -> [UInt8] {
        while buffer.count - position < count, !atEOF { try fill() }
        guard buffer.count - position >= count else {
            // A file shorter than the magic that does not start like one is foreign, not cut short.
            let available = Array(buffer[position...])
            if magicCheck, !SnapshotFormat.magic.starts(with: available.prefix(SnapshotFormat.magic.count)) {
                throw .foreign
            }
            throw .truncated(offset: offset + available.count)
        }
        let bytes = Array(buffer[position..<(position + count)])
        if magicCheck, !bytes.starts(with: SnapshotFormat.magic) { throw .foreign }
        position += count
        offset += count
        fileCRC.update(bytes)
        return bytes
    }

    /// The next entry or the trailer.
    /// - Throws: ``SnapshotError`` `.truncated` or `.damaged` (with the offset), `.io`.
    package func next() throws(SnapshotError) -> Item {
        precondition(bodyCRC == nil, "SnapshotReader.next: the previous entry's body was not read to its end")
        let start = offset
        let crcBefore = fileCRC.value
        let tag = try read(1)[0]
        switch tag {
        case SnapshotFormat.entryTag:
            let lengthBytes = try read(4)
            let length = Int(UInt32(bigEndian: lengthBytes[0..<4]))
            guard length <= SnapshotFormat.maximumMetaBytes else {
                throw .damaged(offset: start, reason: "entry length \(length) out of bounds")
            }
            let meta = try read(length)
            let crc = UInt32(bigEndian: try read(4)[0..<4])
            guard SnapshotCRC32.checksum([tag] + lengthBytes + meta) == crc else {
                throw .damaged(offset: start, reason: "entry checksum")
            }
            guard let entry = SnapshotEntry(decoding: meta) else {
                throw .damaged(offset: start, reason: "entry does not decode")
            }
            bodyCRC = SnapshotCRC32()
            bodyBytes = 0
            declaredBodyBytes = entry.bodySize
            entryOffset = start
            return .entry(entry, offset: start)
        case SnapshotFormat.trailerTag:
            let fields = try read(8 + 8 + 4 + 4)
            let count = UInt64(bigEndian: fields[0..<8])
            let trailerOffset = UInt64(bigEndian: fields[8..<16])
            let fileChecksum = UInt32(bigEndian: fields[16..<20])
            guard SnapshotCRC32.checksum([tag] + fields[0..<20]) == UInt32(bigEndian: fields[20..<24]) else {
                throw .damaged(offset: start, reason: "trailer checksum")
            }
            let end = try read(SnapshotFormat.endMagic.count)
            guard end == SnapshotFormat.endMagic else { throw .damaged(offset: start, reason: "trailer end mark") }
            guard trailerOffset == UInt64(start), count == UInt64(entries), fileChecksum == crcBefore else {
                throw .damaged(
                    offset: start,
                    reason: "trailer says \(count) entries and offset \(trailerOffset), read \(entries) and \(start)")
            }
            while buffer.count - position == 0, !atEOF { try fill() }
            guard buffer.count == position else { throw .damaged(offset: offset, reason: "bytes after the trailer") }
            return .end(entries: entries)
        default:
            throw .damaged(offset: start, reason: "unknown record tag \(tag)")
        }
    }

    /// A piece of the current entry's body.
    package enum BodyPiece {
        /// The next bytes.
        case chunk([UInt8])
        /// The body ended, its length and checksum matched.
        case end
        /// The export could not read this entry whole and left it out (not damage).
        case abandoned
    }

    /// The current entry's next body piece.
    /// - Throws: `.damaged` for a body whose checksum or length does not match; `.truncated`.
    package func readBody() throws(SnapshotError) -> BodyPiece {
        guard var crc = bodyCRC else { return .end }
        let start = offset
        let length = UInt32(bigEndian: try read(4)[0..<4])
        if length == SnapshotFormat.abandonedBody {
            bodyCRC = nil
            return .abandoned
        }
        if length == 0 {
            let expected = UInt32(bigEndian: try read(4)[0..<4])
            bodyCRC = nil
            guard crc.value == expected else { throw .damaged(offset: entryOffset, reason: "body checksum") }
            guard bodyBytes == declaredBodyBytes else {
                throw .damaged(offset: entryOffset, reason: "body of \(bodyBytes) bytes, \(declaredBodyBytes) declared")
            }
            entries += 1
            return .end
        }
        guard Int(length) <= SnapshotFormat.maximumChunkBytes, bodyBytes + UInt64(length) <= declaredBodyBytes else {
            throw .damaged(offset: start, reason: "body chunk length \(length) out of bounds")
        }
        let chunk = try read(Int(length))
        crc.update(chunk)
        bodyCRC = crc
        bodyBytes += UInt64(length)
        return .chunk(chunk)
    }
}

extension UInt32 {
    init(bigEndian bytes: ArraySlice<UInt8>) { self = bytes.reduce(0) { $0 << 8 | UInt32($1) } }
}

extension UInt64 {
    init(bigEndian bytes: ArraySlice<UInt8>) { self = bytes.reduce(0) { $0 << 8 | UInt64($1) } }
}
