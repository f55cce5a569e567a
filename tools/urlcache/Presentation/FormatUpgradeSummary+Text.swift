import CacheMaintenance

extension FormatUpgradeSummary: TextReport {
    var text: String {
        TextFormat.pairs([
            ("directory", directory),
            ("directory format", "\(upgrade.formatBefore) → \(upgrade.formatAfter)"),
            ("entries moved in the use order", "\(upgrade.rekeyedEntries)"),
            ("stored-time keys dropped", "\(upgrade.droppedStoredTimeKeys)"),
        ])
    }
}
