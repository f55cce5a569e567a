import CacheMaintenance

extension ExportReport: TextReport {
    var text: String {
        TextFormat.pairs([
            ("directory", directory),
            ("file", "\(file) (\(TextFormat.bytes(fileBytes)))"),
            ("entries", "\(entries) (\(TextFormat.bytes(bodyBytes)) of bodies)"),
            ("vanished while exporting", "\(vanishedEntries)"),
            ("damaged, left out", "\(damagedEntries)"),
            ("unreadable records", "\(unreadableRecords)"),
            ("time", String(format: "%.2f s", seconds)),
        ])
    }
}

extension ImportReport: TextReport {
    var text: String {
        let refusedTotal = refused.values.reduce(0, +)
        let refusedText =
            refusedTotal == 0
            ? "0"
            : "\(refusedTotal) ("
                + refused.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
                .joined(separator: ", ") + ")"
        return TextFormat.pairs([
            ("directory", directory),
            ("file", file),
            ("entries in the file", "\(entries)"),
            (dryRun ? "imported (dry run)" : "imported", "\(imported)"),
            ("kept (directory's newer)", "\(keptNewer)"),
            ("refused by the store", refusedText),
            ("left out by the export", "\(abandoned)"),
            ("body bytes", TextFormat.bytes(bodyBytes)),
            ("time", String(format: "%.2f s", seconds)),
        ])
    }
}
