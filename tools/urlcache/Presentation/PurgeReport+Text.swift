import CacheMaintenance
import Foundation

extension PurgeReport: TextReport {
    var text: String {
        TextFormat.pairs([
            ("directory", directory),
            ("mode", dryRun ? "dry run (nothing removed)" : "purged"),
            ("matched", "\(matchedEntries) entries, \(TextFormat.bytes(matchedBytes))"),
            ("removed", "\(removedEntries) entries"),
        ])
    }
}
