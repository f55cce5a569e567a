import CacheMaintenance
import Foundation

extension PurgeReport: TextReport {
    var text: String {
        var pairs = [
            ("directory", directory),
            ("mode", dryRun ? "dry run (nothing removed)" : selection.soft ? "marked stale (soft purge)" : "purged"),
            ("method", method),
            (
                "matched",
                method == "tag-index"
                    ? "\(matchedEntries) entries" : "\(matchedEntries) entries, \(TextFormat.bytes(matchedBytes))"
            ),
            selection.soft
                ? ("marked stale", "\(invalidatedEntries) entries") : ("removed", "\(removedEntries) entries"),
        ]
        if let recordsRead { pairs.append(("records read", "\(recordsRead)")) }
        return TextFormat.pairs(pairs)
    }
}
