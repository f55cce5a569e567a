import CacheEntryFormat
import CacheMaintenance
import Foundation

extension EntryDetailReport: TextReport {
    var text: String {
        var blocks: [String] = []
        for entry in entries {
            let variant =
                entry.variantHex.isEmpty
                ? "(none)" : entry.variant.map { StoredVariant.text(of: $0) } ?? "hex:" + entry.variantHex
            let body =
                "\(TextFormat.bytes(entry.bodyBytes)) (\(entry.bodyBytes) bytes), \(TextFormat.bytes(entry.storedBytes)) stored, "
                + (entry.isInline ? "inline" : "file") + (entry.isCompressed ? ", compressed" : ", raw")
            let rows: [(String, String)] = [
                ("key", entry.keyText),
                ("partition", entry.partition.isEmpty ? "(default)" : entry.partition),
                ("variant", variant),
                ("body", body),
                ("head / userInfo", "\(entry.headBytes) / \(entry.userInfoBytes) bytes"),
                ("stored at", TextFormat.date(entry.storedAt)),
                ("last used", TextFormat.date(entry.lastUsed)),
                ("version", "\(entry.version)"),
                ("record kind", RecordKind(rawValue: entry.appFlags).map(\.displayName) ?? "\(entry.appFlags)"),
            ]
            blocks.append(TextFormat.pairs(rows))
        }
        return blocks.joined(separator: "\n\n") + "\n\n\(entries.count) entries for \(url)"
    }
}
