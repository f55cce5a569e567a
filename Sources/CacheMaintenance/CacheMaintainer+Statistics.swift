import Foundation
import SharedURLCacheStore

/// Usage of one partition, from the counters the index keeps for it (no walk over the records).
package struct PartitionStatistics: Sendable, Hashable, Codable {
    /// The partition name (`""` is the default partition; `hex:…` when not UTF-8).
    package var name: String
    package var entries: Int
    /// Logical (uncompressed) body bytes.
    package var bodyBytes: Int
    /// Body bytes as stored (body files whole, inline bodies), as before the counters existed.
    package var storedBytes: Int
    /// What its entries take on disk as the capacity counts it (records + body files rounded to
    /// whole 4 KiB blocks): what its quota holds.
    package var diskBytes: Int
    /// Its byte quota (`urlcache quota`), or `nil`.
    package var quotaBytes: Int?
    /// No longer filled (`nil`, absent from JSON): they took a walk over every record, and the
    /// figures now come from the counters. Kept so that no field of the output is renamed.
    package var oldestStoredAt: Date?
    /// See ``oldestStoredAt``.
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
    /// Per partition, largest first, from the counters the index keeps per partition.
    package var partitions: [PartitionStatistics] = []
    /// The partitions' counters add up to the directory's. `false`: a process of an earlier
    /// release (which keeps no partition counters) stored or removed entries since they were
    /// counted, so the per-partition figures are off by that; `urlcache verify --fix` counts
    /// them again.
    package var partitionCountersExact = true
    /// No longer filled (`nil`, absent from JSON): it came from the walk the partitions took;
    /// `urlcache verify` counts unreadable records.
    package var unreadableRecords: Int?
}

extension CacheMaintainer {
    /// The directory's counters, its per-partition counters (both kept in the index: no walk
    /// over the records) and its disk usage, measured by stat'ing every file when `measure` (what
    /// `du` shows), else estimated from the counters (cheap enough for every scrape).
    /// - Throws: `CacheError`.
    package func statistics(measure: Bool = true) throws -> StatisticsReport {
        let stats = try store.statistics()
        let disk = try store.diskUsage(measure: measure)
        let counted = try store.partitionCounters()
        return StatisticsReport(
            directory: directory, diskBytes: disk.totalBytes, diskIndexBytes: disk.indexBytes,
            diskBodyFileBytes: disk.bodyFileBytes, diskLeftoverBytes: disk.leftoverBytes,
            diskLeftoverFiles: disk.leftoverFiles, diskOverheadBytes: disk.overheadBytes,
            diskEntryBytes: disk.entryBytes, diskMeasured: disk.measured, directoryFormat: stats.directoryFormat,
            entries: stats.entries, bodyBytes: stats.bodyBytes, storedBytes: stats.storedBytes,
            recordBytes: stats.recordBytes,
            compressionRatio: stats.storedBytes > 0 ? Double(stats.bodyBytes) / Double(stats.storedBytes) : 0,
            indexMapBytes: stats.indexMapBytes, indexUsedBytes: stats.indexUsedBytes,
            readerSlotsUsed: stats.readerSlotsUsed, readerSlotsMax: stats.readerSlotsMax,
            evictions: stats.evictions, corruptPurges: stats.corruptPurges,
            hits: stats.hits, misses: stats.misses, stores: stats.stores,
            fileSystem: try? FileSystemSpace.of(directory: directory),
            partitions: counted.partitions.map { counters in
                PartitionStatistics(
                    name: partitionName(counters.partition), entries: counters.entries, bodyBytes: counters.bodyBytes,
                    storedBytes: counters.storedBytes, diskBytes: counters.bytes, quotaBytes: counters.quotaBytes)
            }.sorted { ($0.diskBytes, $1.name) > ($1.diskBytes, $0.name) },
            partitionCountersExact: counted.exact)
    }
}
