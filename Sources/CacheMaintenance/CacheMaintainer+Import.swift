import Foundation
import SharedURLCacheStore

/// How `urlcache import` stores a snapshot's entries.
package struct ImportOptions: Sendable, Hashable {
    /// The capacity each store holds (as a service's `diskCapacity`): a store past it evicts the
    /// least recently used entries in its own commit; `nil` stores without a cap (the store
    /// handle's own `hardCapacityBytes` aside). Partition quotas apply either way.
    package var capacityBytes: Int?
    /// Check the whole file and store nothing.
    package var dryRun = false
    /// Replace entries the directory holds that were stored after the snapshot's copy (by
    /// default those are kept: they are newer).
    package var replaceNewer = false

    package init(capacityBytes: Int? = nil, dryRun: Bool = false) {
        self.capacityBytes = capacityBytes
        self.dryRun = dryRun
    }
}

/// What `urlcache import` prints.
package struct ImportReport: Sendable, Hashable, Codable {
    package var directory: String
    package var file: String
    /// Entries the snapshot holds (checked, all of them).
    package var entries: Int
    /// Entries stored.
    package var imported: Int
    /// Entries left out because the directory's copy was stored later.
    package var keptNewer: Int
    /// Entries the store refused, by reason (`too-large`, `over-capacity`, `disk-full`, …).
    package var refused: [String: Int]
    /// Entries the export had marked as unreadable (not in the snapshot).
    package var abandoned: Int
    /// Body bytes read from the snapshot.
    package var bodyBytes: Int
    package var dryRun: Bool
    package var seconds: Double
}

/// A snapshot that could not be imported to its end: the damage, and what was stored before it.
package struct SnapshotImportError: Error, CustomStringConvertible {
    /// Where and why reading stopped.
    package var error: SnapshotError
    /// Entries stored before the damage was found (each was whole and checked; they stay).
    package var importedBefore: Int

    package var description: String {
        switch error {
        case .foreign, .unsupportedVersion, .io: "\(error); nothing was stored"
        default: "\(error) (\(importedBefore) entries before it were imported and stay; nothing after it was stored)"
        }
    }
}

extension CacheMaintainer {
    /// Stores a snapshot's entries through the store's normal path (capacity, partition quotas,
    /// one commit each, other processes unaffected), keeping each entry's store time so its
    /// freshness carries over. Each entry is checked (metadata and body CRC-32) before it is
    /// committed; damage stops the import there: entries before it stay stored, nothing at or
    /// after it is. `dryRun` checks the whole file without storing.
    /// - Parameter progress: called after each entry with the entries read so far.
    /// - Throws: ``SnapshotImportError`` for a damaged, truncated or foreign file; `CacheError`
    ///   for environment failures of the directory.
    package func importSnapshot(
        from path: String, options: ImportOptions = ImportOptions(), progress: ((Int) -> Void)? = nil
    ) throws -> ImportReport {
        let started = ContinuousClock.now
        var report = ImportReport(
            directory: directory, file: path, entries: 0, imported: 0, keptNewer: 0, refused: [:], abandoned: 0,
            bodyBytes: 0, dryRun: options.dryRun, seconds: 0)
        do {
            let reader = try SnapshotReader(path: path)
            reading: while true {
                switch try reader.next() {
                case .end(let entries):
                    report.entries = entries
                    break reading
                case .entry(let entry, _):
                    try importEntry(entry, from: reader, options: options, into: &report)
                    progress?(report.entries + report.abandoned)
                }
            }
        } catch let error as SnapshotError {
            throw SnapshotImportError(error: error, importedBefore: report.imported)
        }
        let elapsed = ContinuousClock.now - started
        report.seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return report
    }

    /// One entry: its body streamed from the file into a body writer, committed only once the
    /// body's checksum matched.
    private func importEntry(
        _ entry: SnapshotEntry, from reader: SnapshotReader, options: ImportOptions, into report: inout ImportReport
    ) throws {
        var keep = !options.dryRun
        if keep, !options.replaceNewer,
            let existing = try store.record(
                for: entry.key, variant: entry.variant, includeBody: false, countAsUse: false),
            existing.storedAt >= entry.storedAt
        {
            keep = false
            report.keptNewer += 1
        }
        guard keep else {
            try skipBody(of: reader, into: &report)
            return
        }
        var writer = try store.makeBodyWriter(uncompressed: entry.storedUncompressed)
        var refusal: String?
        while true {
            switch try reader.readBody() {
            case .chunk(let bytes):
                report.bodyBytes += bytes.count
                guard refusal == nil else { continue }
                do { try writer.append(bytes) } catch { refusal = Self.refusalReason(error) }
            case .abandoned:
                report.abandoned += 1
                return // the writer is dropped: nothing stored
            case .end:
                report.entries += 1
                if let refusal {
                    report.refused[refusal, default: 0] += 1
                    return
                }
                do {
                    _ = try writer.commit(entry.descriptor, capacityBytes: options.capacityBytes)
                    if entry.softPurged { _ = try store.invalidate(key: entry.key, variant: entry.variant) }
                    report.imported += 1
                } catch {
                    report.refused[Self.refusalReason(error), default: 0] += 1
                }
                return
            }
        }
    }

    /// Reads (and checks) an entry's body without storing it.
    private func skipBody(of reader: SnapshotReader, into report: inout ImportReport) throws {
        while true {
            switch try reader.readBody() {
            case .chunk(let bytes): report.bodyBytes += bytes.count
            case .abandoned:
                report.abandoned += 1
                return
            case .end:
                report.entries += 1
                return
            }
        }
    }

    /// A store refusal's name in the report.
    private static func refusalReason(_ error: any Error) -> String {
        guard let error = error as? CacheError else { return "store-failed" }
        return switch error.code {
        case .tooLarge: "too-large"
        case .overCapacity: "over-capacity"
        case .diskFull: "disk-full"
        case .invalidInput: "invalid-entry"
        default: "store-failed-\(error.code)"
        }
    }
}
