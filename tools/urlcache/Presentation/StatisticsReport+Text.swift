import CacheMaintenance
import Foundation
import SharedURLCacheStore

extension StatisticsReport: TextReport {
    var text: String {
        var rows: [(String, String)] = [
            ("directory", directory),
            (
                "format",
                "directory format \(directoryFormat); this build writes records \(StoreFormats.record), bodies \(StoreFormats.body)"
            ),
            ("on disk (du)", "\(TextFormat.bytes(diskBytes)) (\(diskBytes))" + (diskMeasured ? "" : ", estimated")),
            ("  index file", TextFormat.bytes(diskIndexBytes)),
            ("  body files", TextFormat.bytes(diskBodyFileBytes)),
            (
                "  leftovers",
                "\(TextFormat.bytes(diskLeftoverBytes)) in \(diskLeftoverFiles) files (temp, orphan, old index; compact removes them after --grace)"
            ),
            ("  directories", TextFormat.bytes(diskOverheadBytes)),
            (
                "live entries",
                "\(TextFormat.bytes(diskEntryBytes)) (records + body files: what the online capacity holds)"
            ),
            ("entries", "\(entries)"),
            ("body bytes", "\(TextFormat.bytes(bodyBytes)) (\(bodyBytes))"),
            ("stored bytes", "\(TextFormat.bytes(storedBytes)) (\(storedBytes))"),
            ("record bytes", "\(TextFormat.bytes(recordBytes)) (\(recordBytes))"),
            ("compression ratio", String(format: "%.2f", compressionRatio)),
            ("index map", "\(TextFormat.bytes(indexUsedBytes)) used of \(TextFormat.bytes(indexMapBytes))"),
            ("reader slots", "\(readerSlotsUsed) of \(readerSlotsMax)"),
            (
                "hits / misses",
                "\(hits) / \(misses)"
                    + (hits + misses > 0
                        ? String(format: " (%.1f%% hit rate)", 100 * Double(hits) / Double(hits + misses)) : "")
            ),
            ("stores", "\(stores)"),
            ("evictions", "\(evictions)"),
            ("corrupt entries purged", "\(corruptPurges)"),
        ]
        if let fileSystem {
            rows.append(
                (
                    "file system",
                    "\(TextFormat.bytes(fileSystem.availableBytes)) free of \(TextFormat.bytes(fileSystem.totalBytes))"
                ))
        }
        if !partitionCountersExact {
            rows.append(
                (
                    "partition counters",
                    "do not add up to the directory's (an earlier release changed entries; run urlcache verify --fix)"
                ))
        }
        var text = TextFormat.pairs(rows)
        if !partitions.isEmpty {
            let table = partitions.map { partition in
                [
                    partition.name.isEmpty ? "(default)" : partition.name, "\(partition.entries)",
                    TextFormat.bytes(partition.bodyBytes), TextFormat.bytes(partition.diskBytes),
                    partition.quotaBytes.map(TextFormat.bytes) ?? "-",
                ]
            }
            text +=
                "\n\n"
                + TextFormat.table(
                    ["PARTITION", "ENTRIES", "BODY", "ON DISK", "QUOTA"], table, rightAligned: [1, 2, 3, 4])
        }
        return text
    }
}
