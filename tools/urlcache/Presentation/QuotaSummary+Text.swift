import CacheMaintenance

extension QuotaSummary: TextReport {
    var text: String {
        TextFormat.pairs([
            ("directory", directory),
            ("partition", partition.isEmpty ? "(default)" : partition),
            ("quota", maxBytes.map { "\(TextFormat.bytes($0)) (\($0))" } ?? "removed"),
            ("entries indexed", "\(report.indexedEntries)"),
            ("entries evicted", "\(report.evictedEntries)"),
        ])
    }
}
