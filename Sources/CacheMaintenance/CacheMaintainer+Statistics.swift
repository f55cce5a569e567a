import Foundation
import SharedURLCacheStore

/// Usage of one partition, summed over its records.
package struct PartitionStatistics: Sendable, Hashable, Codable {
    /// The partition name (`""` is the default partition; `hex:…` when not UTF-8).
    package var name: String
    package var entries: Int
    package var bodyBytes: Int
    package var storedBytes: Int
    package var oldestStoredAt: Date?
    package var lastUsed: Date?
}

/// What `urlcache stats` prints.
///
/// Every counter here is the directory's own, shared by every process: hits and misses reach it
/// with each process's next write (lookups never write), stores, evictions and checksum purges
/// in the same commit as the change.
package struct StatisticsReport: Sendable, Hashable, Codable {
    package var directory: String
    /// What the directory takes on disk as `du -s --block-size=1` counts it (allocated blocks),
    /// and its parts: the index file and lock file, body files of live entries, leftovers (temp
    /// files, orphans, retired index generations), directories and control files.
    package var diskBytes: Int
    package var diskIndexBytes: Int
    package var diskBodyFileBytes: Int
    package var diskLeftoverBytes: Int
    package var diskLeftoverFiles: Int
    package var diskOverheadBytes: Int
    /// What live entries take on disk (records + body files): what the online capacity holds.
    package var diskEntryBytes: Int
    /// Every file was stat'ed (the default); `--counters-only` estimates from the counters.
    package var diskMeasured: Bool
    /// The directory's format (it opened, so this build reads it); records of another major
    /// format are counted by `urlcache verify`.
    package var directoryFormat: Int
    package var entries: Int
    /// Logical (uncompressed) body bytes.
    package var bodyBytes: Int
    /// Body bytes on disk (compressed or raw, with headers, inline bodies included).
    package var storedBytes: Int
    package var recordBytes: Int
    /// bodyBytes / storedBytes (0 when empty).
    package var compressionRatio: Double
    package var indexMapBytes: Int
    package var indexUsedBytes: Int
    package var readerSlotsUsed: Int
    package var readerSlotsMax: Int
    /// Entries removed by compaction or the online hard cap, ever (every process).
    package var evictions: Int
    /// Entries purged because their data failed a check (checksum, size, header), ever.
    package var corruptPurges: Int
    /// Lookups answered / not answered and entries stored, ever, by every process.
    package var hits: Int = 0
    package var misses: Int = 0
    package var stores: Int = 0
    package var fileSystem: FileSystemSpace?
    /// Per partition, largest first; `nil` when not asked for (it walks every record).
    package var partitions: [PartitionStatistics]?
    /// Records the walk could not decode (run `urlcache verify`); `nil` without the walk.
    package var unreadableRecords: Int?
}

extension CacheMaintainer {
    /// The directory's counters and, with `includePartitions`, per-partition sums from a walk of
    /// every record (short read transactions; no body is read).
    /// - Throws: `CacheError`.
    package func statistics(includePartitions: Bool = true) throws -> StatisticsReport {
        let stats = try store.statistics()
        let disk = try store.diskUsage(measure: includePartitions)
        var report = StatisticsReport(
            directory: directory, diskBytes: disk.totalBytes, diskIndexBytes: disk.indexBytes,
            diskBodyFileBytes: disk.bodyFileBytes, diskLeftoverBytes: disk.leftoverBytes,
            diskLeftoverFiles: disk.leftoverFiles, diskOverheadBytes: disk.overheadBytes,
            diskEntryBytes: disk.entryBytes, diskMeasured: disk.measured, directoryFormat: StoreFormats.directory,
            entries: stats.entries, bodyBytes: stats.bodyBytes, storedBytes: stats.storedBytes,
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
            var partition =
                byName[record.partition]
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
