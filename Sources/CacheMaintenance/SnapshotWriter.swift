import Foundation
import SharedURLCacheStore

/// Writes a snapshot file one entry at a time through a 256 KiB buffer: memory holds one
/// entry's metadata and one body chunk, whatever the directory's size. The file is written as
/// `FILE.partial` and renamed into place by ``finish()``, so an export that fails or is killed
/// never leaves a file under the asked name.
package final class SnapshotWriter {
    private let path: String
    private let temporaryPath: String
    private let handle: FileHandle
    private var buffer: [UInt8] = []
    private var fileCRC = SnapshotCRC32()
    private var offset = 0
    /// Entries written whole.
    private(set) var entries = 0

    /// Creates `path.partial` and writes the header.
    /// - Throws: ``SnapshotError/io(_:)``.
    package init(path: String, created: Date = Date()) throws(SnapshotError) {
        self.path = path
        temporaryPath = path + ".partial"
        guard FileManager.default.createFile(atPath: temporaryPath, contents: nil),
            let handle = FileHandle(forWritingAtPath: temporaryPath)
        else { throw .io("cannot create \(temporaryPath)") }
        self.handle = handle
        var header = SnapshotFormat.magic + SnapshotFormat.version.bigEndianBytes + UInt32(0).bigEndianBytes
        header += UInt64(max(0, created.timeIntervalSince1970 * 1000)).bigEndianBytes
        header += SnapshotCRC32.checksum(header).bigEndianBytes
        try write(header)
    }

    deinit {
        try? handle.close()
        if FileManager.default.fileExists(atPath: temporaryPath) {
            try? FileManager.default.removeItem(atPath: temporaryPath)
        }
    }

    private func write(_ bytes: [UInt8]) throws(SnapshotError) {
        fileCRC.update(bytes)
        offset += bytes.count
        buffer += bytes
        if buffer.count >= 256 << 10 { try flush() }
    }

    private func flush() throws(SnapshotError) {
        guard !buffer.isEmpty else { return }
        do { try handle.write(contentsOf: buffer) } catch { throw .io("writing \(temporaryPath): \(error)") }
        buffer.removeAll(keepingCapacity: true)
    }

    /// Writes one entry: its metadata, then its body read chunk by chunk from `body`. When the
    /// body fails its read (damaged, removed under the reader), the entry is marked abandoned
    /// in the file and `false` returned: the snapshot stays valid without it.
    /// - Throws: ``SnapshotError/io(_:)`` when the file cannot be written.
    package func append(_ entry: SnapshotEntry, body: BodyReader) throws(SnapshotError) -> Bool {
        let meta = entry.encoded
        var head = [SnapshotFormat.entryTag] + UInt32(meta.count).bigEndianBytes + meta
        head += SnapshotCRC32.checksum(head).bigEndianBytes
        try write(head)
        var bodyCRC = SnapshotCRC32()
        while true {
            let chunk: [UInt8]
            do { chunk = try body.read(maxBytes: SnapshotFormat.chunkBytes) } catch {
                try write(SnapshotFormat.abandonedBody.bigEndianBytes)
                return false
            }
            if chunk.isEmpty { break }
            bodyCRC.update(chunk)
            try write(UInt32(chunk.count).bigEndianBytes + chunk)
        }
        try write(UInt32(0).bigEndianBytes + bodyCRC.value.bigEndianBytes)
        entries += 1
        return true
    }

    /// Writes the trailer, syncs the file and renames it into place.
    /// - Throws: ``SnapshotError/io(_:)``.
    package func finish() throws(SnapshotError) {
        let trailerOffset = offset
        var trailer = [SnapshotFormat.trailerTag] + UInt64(entries).bigEndianBytes
        trailer += UInt64(trailerOffset).bigEndianBytes + fileCRC.value.bigEndianBytes
        trailer += SnapshotCRC32.checksum(trailer).bigEndianBytes + SnapshotFormat.endMagic
        try write(trailer)
        try flush()
        do {
            try handle.synchronize()
            try handle.close()
            if FileManager.default.fileExists(atPath: path) { try FileManager.default.removeItem(atPath: path) }
            try FileManager.default.moveItem(atPath: temporaryPath, toPath: path)
        } catch { throw .io("finishing \(path): \(error)") }
    }

    /// Bytes written so far.
    package var bytesWritten: Int { offset }
}
