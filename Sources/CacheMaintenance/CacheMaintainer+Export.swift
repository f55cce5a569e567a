import Foundation
import SharedURLCacheStore

/// Which entries `urlcache export` writes: every one, or those matching every given criterion.
package struct SnapshotFilter: Sendable, Hashable {
    /// Entries of this partition only.
    package var partition: String?
    /// Entries stored with this tag only.
    package var tag: String?
    /// URL-level entries whose normalised URL starts with this only.
    package var urlPrefix: String?

    package init(partition: String? = nil, tag: String? = nil, urlPrefix: String? = nil) {
        self.partition = partition
        self.tag = tag
        self.urlPrefix = urlPrefix
    }

    /// Whether `record` is exported.
    func matches(_ record: StoredRecord, normalizedPrefix: String?) -> Bool {
        if let partition, record.partition != Array(partition.utf8) { return false }
        if let tag, !record.tags.contains(tag) { return false }
        if let normalizedPrefix {
            guard let key = StoredKey(decoding: record.key), key.url.hasPrefix(normalizedPrefix) else { return false }
        }
        return true
    }
}

/// What `urlcache export` prints.
package struct ExportReport: Sendable, Hashable, Codable {
    package var directory: String
    package var file: String
    /// Entries written to the snapshot.
    package var entries: Int
    /// Body bytes written (logical, uncompressed).
    package var bodyBytes: Int
    /// The snapshot's size.
    package var fileBytes: Int
    /// Entries removed or replaced by another process between the walk and their read
    /// (the walk's copy is gone; a replacement stored later is not in this snapshot).
    package var vanishedEntries: Int
    /// Entries whose body failed its check while being read (purged by the read; left out).
    package var damagedEntries: Int
    /// Records the walk could not decode.
    package var unreadableRecords: Int
    package var seconds: Double
}

extension CacheMaintainer {
    /// Writes the entries `filter` selects to a snapshot file at `path` (docs/Operating.md,
    /// "Starting warm"), one at a time: the index is walked in short read transactions, and
    /// each entry's record and body are read together (one version) and streamed to the file,
    /// so memory stays bounded and services keep storing meanwhile. Reads do not count as uses.
    /// - Parameter progress: called after each entry with the entries written so far.
    /// - Throws: `CacheError`, ``SnapshotError/io(_:)``.
    package func export(
        to path: String, filter: SnapshotFilter = SnapshotFilter(), progress: ((Int) -> Void)? = nil
    ) throws -> ExportReport {
        let started = ContinuousClock.now
        let writer = try SnapshotWriter(path: path)
        let prefix = filter.urlPrefix.map(StoredKey.normalizePrefix)
        var (bodyBytes, vanished, damaged) = (0, 0, 0)
        var failure: (any Error)?
        let unreadable = try store.forEachRecord { listed in
            guard filter.matches(listed, normalizedPrefix: prefix) else { return true }
            do {
                guard
                    let (record, body) = try store.openBody(for: listed.key, variant: listed.variant, countAsUse: false)
                else {
                    vanished += 1
                    return true
                }
                defer { body.close() }
                if try writer.append(SnapshotEntry(record), body: body) {
                    bodyBytes += record.bodySize
                    progress?(writer.entries)
                } else {
                    damaged += 1
                }
                return true
            } catch {
                failure = error
                return false
            }
        }
        if let failure { throw failure }
        try writer.finish()
        let elapsed = ContinuousClock.now - started
        return ExportReport(
            directory: directory, file: path, entries: writer.entries, bodyBytes: bodyBytes,
            fileBytes: writer.bytesWritten, vanishedEntries: vanished, damagedEntries: damaged,
            unreadableRecords: unreadable,
            seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }
}
