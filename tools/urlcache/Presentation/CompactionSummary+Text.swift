import CacheMaintenance
import Foundation

extension CompactionSummary: TextReport {
    var text: String {
        var rows: [(String, String)] = [
            ("directory", directory),
            ("mode", dryRun ? "dry run (nothing changed)" : "compacted"),
            (
                "on disk (du)",
                "\(TextFormat.bytes(result.diskBytesBefore)) → \(TextFormat.bytes(result.diskBytesAfter))"
            ),
            (
                "index file",
                "\(TextFormat.bytes(result.indexBytesBefore)) → \(TextFormat.bytes(result.indexBytesAfter))"
                    + (result.indexRewrites > 0
                        ? " (\(result.indexRewrites) rewrite\(result.indexRewrites == 1 ? "" : "s"), longest \(result.longestRewriteMilliseconds) ms)"
                        : "")
                    + (result.indexRewriteSkippedForSpace ? " (rewrite skipped: no room on the file system)" : "")
            ),
        ]
        if let deferral = result.indexRewriteDeferral {
            rows.append(("index rewrite deferred", deferral.message))
        }
        if let max = plan.maxSizeBytes, let low = plan.lowWaterBytes {
            rows.append(("max size / low water", "\(TextFormat.bytes(max)) / \(TextFormat.bytes(low))"))
        }
        if let minFree = plan.minFreeBytes, let fs = plan.fileSystem {
            rows.append(
                ("min free / available", "\(TextFormat.bytes(minFree)) / \(TextFormat.bytes(fs.availableBytes))"))
        }
        if let cutoff = plan.unusedBefore { rows.append(("evict unused before", TextFormat.date(cutoff))) }
        rows.append(
            (
                "reasons",
                reasons.isEmpty ? "none (within limits; swept leftovers only)" : reasons.joined(separator: ", ")
            ))
        let verb = dryRun ? "would evict" : "evicted"
        rows += [
            (
                verb,
                "\(result.evictedEntries) entries, \(TextFormat.bytes(result.evictedBytes)) (\(result.expiredEntries) for age)"
            ),
            ("entries", "\(entriesBefore) → \(entriesAfter)"),
            ("entry bytes", "\(TextFormat.bytes(entryBytesBefore)) → \(TextFormat.bytes(entryBytesAfter))"),
            ("orphan files", "\(result.orphanFiles) (\(TextFormat.bytes(result.orphanBytes)))"),
            ("temp files", "\(result.tempFiles)"),
            ("write transactions", "\(result.transactions)"),
            ("stores carried", "\(result.carriedStores) (other processes' stores committed with an eviction batch)"),
            (
                "longest store pause",
                "\(result.longestStorePauseMilliseconds) ms (the write lock held by this compaction)"
            ),
            (
                "time",
                String(format: "%.3f s", seconds)
                    + (result.evictedEntries > 0 && !dryRun
                        ? String(format: " (%.0f entries/s)", evictedPerSecond) : "")
            ),
        ]
        return TextFormat.pairs(rows)
    }
}
