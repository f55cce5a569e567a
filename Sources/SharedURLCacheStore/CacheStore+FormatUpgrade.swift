import CSharedURLCache

/// What ``CacheStore/upgradeDirectoryFormat()`` did.
public struct DirectoryFormatUpgrade: Sendable, Hashable, Codable {
    /// The directory's format before the call.
    public var formatBefore: Int
    /// Its format after (2 once the upgrade finished).
    public var formatAfter: Int
    /// Entries stored ahead of their last use (a stored time in the future), moved in the use
    /// order to their stored time, where remove-since finds them in format 2.
    public var rekeyedEntries: Int
    /// Keys of the stored-time order dropped (format 2 keeps none).
    public var droppedStoredTimeKeys: Int
}

extension CacheStore {
    /// Turns a directory of format 1 into format 2 (one recency order, fewer pages per store)
    /// while other processes use it; a directory of format 2 is left as it is. Every process of
    /// this release follows from its next write. Stop every process of an earlier release
    /// first: one that opened the directory as format 1 would go on keeping and walking the
    /// order format 2 drops (docs/Formats.md, "One recency order").
    /// - Throws: `.busy` while a process of a release before index generations has the
    ///   directory open (or when that cannot be told); nothing changed.
    /// The corresponding C function is `suc_directory_upgrade`.
    public func upgradeDirectoryFormat() throws(CacheError) -> DirectoryFormatUpgrade {
        var report = suc_upgrade_report()
        var detail = suc_error()
        let rc = withHandle { suc_directory_upgrade($0, &report, &detail) }
        guard rc == SUC_OK else { throw CacheError(core: rc, detail) }
        return DirectoryFormatUpgrade(
            formatBefore: Int(report.format_before), formatAfter: Int(report.format_after),
            rekeyedEntries: Int(report.rekeyed_entries), droppedStoredTimeKeys: Int(report.dropped_keys))
    }
}
