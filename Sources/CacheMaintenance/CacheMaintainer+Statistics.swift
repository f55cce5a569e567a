import Foundation
import SharedURLCacheStore

/// Usage of one partition, summed over its records.
public struct PartitionStatistics: Sendable, Hashable, Codable {
    /// The partition name (`""` is the default partition; `hex:…` when not UTF-8).
    public var name: String
    public var entries: Int
    public var bodyBytes: Int
    public var storedBytes: Int
    public var oldestStoredAt: Date?
    public var lastUsed: Date?
}

/// What `urlcache stats` prints.
///
/// Every counter here is the directory's own, shared by every process: hits and misses reach it
/// with each process's next write (lookups never write), stores, evictions and checksum purges
/// in the same commit as the change.
public struct StatisticsReport: TextReport, Sendable, Hashable, Codable {
    public var directory: String
    /// What the directory takes on disk as `du -s --block-size=1` counts it (allocated blocks),
    /// and its parts: the index file and lock file, body files of live entries, leftovers (temp
    /// files, orphans, retired index generations), directories and control files.
    public var diskBytes: Int
    public var diskIndexBytes: Int
    public var diskBodyFileBytes: Int
    public var diskLeftoverBytes: Int
    public var diskLeftoverFiles: Int
    public var diskOverheadBytes: Int
    /// What live entries take on disk (records + body files): what the online capacity holds.
    public var diskEntryBytes: Int
    /// Every file was stat'ed (the default); `--counters-only` estimates from the counters.
    public var diskMeasured: Bool
    /// The directory's format (it opened, so this build reads it); records of another major
    /// format are counted by `urlcache verify`.
    public var directoryFormat: Int
    public var entries: Int
    /// Logical (uncompressed) body bytes.
    public var bodyBytes: Int
    /// Body bytes on disk (compressed or raw, with headers, inline bodies included).
    public var storedBytes: Int
    public var recordBytes: Int
    /// bodyBytes / storedBytes (0 when empty).
    public var compressionRatio: Double
    public var indexMapBytes: Int
    public var indexUsedBytes: Int
    public var readerSlotsUsed: Int
    public var readerSlotsMax: Int
    /// Entries removed by compaction or the online hard cap, ever (every process).
    public var evictions: Int
    /// Entries purged because their data failed a check (checksum, size, header), ever.
    public var corruptPurges: Int
    /// Lookups answered / not answered and entries stored, ever, by every process.
    public var hits: Int = 0
    public var misses: Int = 0
    public var stores: Int = 0
    public var fileSystem: FileSystemSpace?
    /// Per partition, largest first; `nil` when not asked for (it walks every record).
    public var partitions: [PartitionStatistics]?
    /// Records the walk could not decode (run `urlcache verify`); `nil` without the walk.
    public var unreadableRecords: Int?

    public var text: String {
        var rows: [(String, String)] = [
            ("directory", directory),
            ("format", "directory format \(directoryFormat); this build writes records \(StoreFormats.record), bodies \(StoreFormats.body)"),
            ("on disk (du)", "\(TextFormat.bytes(diskBytes)) (\(diskBytes))" + (diskMeasured ? "" : ", estimated")),
            ("  index file", TextFormat.bytes(diskIndexBytes)),
            ("  body files", TextFormat.bytes(diskBodyFileBytes)),
            ("  leftovers", "\(TextFormat.bytes(diskLeftoverBytes)) in \(diskLeftoverFiles) files (temp, orphan, old index; compact removes them after --grace)"),
            ("  directories", TextFormat.bytes(diskOverheadBytes)),
            ("live entries", "\(TextFormat.bytes(diskEntryBytes)) (records + body files: what the online capacity holds)"),
            ("entries", "\(entries)"),
            ("body bytes", "\(TextFormat.bytes(bodyBytes)) (\(bodyBytes))"),
            ("stored bytes", "\(TextFormat.bytes(storedBytes)) (\(storedBytes))"),
            ("record bytes", "\(TextFormat.bytes(recordBytes)) (\(recordBytes))"),
            ("compression ratio", String(format: "%.2f", compressionRatio)),
            ("index map", "\(TextFormat.bytes(indexUsedBytes)) used of \(TextFormat.bytes(indexMapBytes))"),
            ("reader slots", "\(readerSlotsUsed) of \(readerSlotsMax)"),
            ("hits / misses", "\(hits) / \(misses)" + (hits + misses > 0 ? String(format: " (%.1f%% hit rate)", 100 * Double(hits) / Double(hits + misses)) : "")),
            ("stores", "\(stores)"),
            ("evictions", "\(evictions)"),
            ("corrupt entries purged", "\(corruptPurges)"),
        ]
        if let fileSystem {
            rows.append(("file system", "\(TextFormat.bytes(fileSystem.availableBytes)) free of \(TextFormat.bytes(fileSystem.totalBytes))"))
        }
        if let unreadableRecords, unreadableRecords > 0 { rows.append(("unreadable records", "\(unreadableRecords) (run urlcache verify)")) }
        var text = TextFormat.pairs(rows)
        if let partitions, !partitions.isEmpty {
            let table = partitions.map { partition in
                [
                    partition.name.isEmpty ? "(default)" : partition.name, "\(partition.entries)",
                    TextFormat.bytes(partition.bodyBytes), TextFormat.bytes(partition.storedBytes),
                    partition.lastUsed.map(TextFormat.date) ?? "-",
                ]
            }
            text += "\n\n" + TextFormat.table(["PARTITION", "ENTRIES", "BODY", "STORED", "LAST USED"], table, rightAligned: [1, 2, 3])
        }
        return text
    }
}

extension CacheMaintainer {
    /// The directory's counters and, with `includePartitions`, per-partition sums from a walk of
    /// every record (short read transactions; no body is read).
    /// - Throws: `CacheError`.
    public func statistics(includePartitions: Bool = true) throws -> StatisticsReport {
        let stats = try store.statistics()
        let disk = try store.diskUsage(measure: includePartitions)
        var report = StatisticsReport(
            directory: directory, diskBytes: disk.totalBytes, diskIndexBytes: disk.indexBytes,
            diskBodyFileBytes: disk.bodyFileBytes, diskLeftoverBytes: disk.leftoverBytes,
            diskLeftoverFiles: disk.leftoverFiles, diskOverheadBytes: disk.overheadBytes,
            diskEntryBytes: disk.entryBytes, diskMeasured: disk.measured, directoryFormat: StoreFormats.directory, entries: stats.entries, bodyBytes: stats.bodyBytes, storedBytes: stats.storedBytes,
            recordBytes: stats.recordBytes,
            compressionRatio: stats.storedBytes > 0 ? Double(stats.bodyBytes) / Double(stats.storedBytes) : 0,
            indexMapBytes: stats.indexMapBytes, indexUsedBytes: stats.indexUsedBytes,
            readerSlotsUsed: stats.readerSlotsUsed, readerSlotsMax: stats.readerSlotsMax,
            evictions: stats.evictions, corruptPurges: stats.corruptPurges,
            hits: stats.hits, misses: stats.misses, stores: stats.stores,
            fileSystem: try? FileSystemSpace.of(directory: directory), partitions: nil, unreadableRecords: nil)
        guard includePartitions else { return report }
        var byName: [[UInt8]: PartitionStatistics] = [:]
        report.unreadableRecords = try store.forEachRecord { record in
            var partition = byName[record.partition]
                ?? PartitionStatistics(name: partitionName(record.partition), entries: 0, bodyBytes: 0, storedBytes: 0)
            partition.entries += 1
            partition.bodyBytes += record.bodySize
            partition.storedBytes += record.footprintSize
            partition.oldestStoredAt = min(partition.oldestStoredAt ?? record.storedAt, record.storedAt)
            partition.lastUsed = max(partition.lastUsed ?? record.lastUsed, record.lastUsed)
            byName[record.partition] = partition
            return true
        }
        report.partitions = byName.values.sorted { ($0.storedBytes, $1.name) > ($1.storedBytes, $0.name) }
        return report
    }
}
