import CacheMaintenance
import Foundation

extension ListingReport: TextReport {
    var text: String {
        let rows = entries.map { entry in
            [
                TextFormat.date(entry.lastUsed), TextFormat.bytes(entry.bodyBytes),
                entry.partition.isEmpty ? "-" : entry.partition,
                entry.variantHex.isEmpty
                    ? "-" : (entry.variant.map { StoredVariant.text(of: $0) } ?? "hex:" + entry.variantHex),
                entry.keyText,
            ]
        }
        var text = TextFormat.table(["LAST USED", "BODY", "PARTITION", "VARIANT", "KEY"], rows, rightAligned: [1])
        text += "\n\(entries.count) entries" + (truncated ? " (limit reached; more match)" : "")
        if unreadableRecords > 0 { text += ", \(unreadableRecords) unreadable records (run urlcache verify)" }
        return text
    }
}

extension StoredVariant {
    /// The selecting fields as `name=value; …` (`(absent)` for a field the request did not carry).
    static func text(of fields: [Field]) -> String {
        fields.isEmpty ? "(none)" : fields.map { "\($0.name)=\($0.value ?? "(absent)")" }.joined(separator: "; ")
    }
}
