import SharedURLCacheStore

/// What `urlcache upgrade` prints.
package struct FormatUpgradeSummary: Sendable, Hashable, Codable {
    package var directory: String
    package var upgrade: DirectoryFormatUpgrade
}

extension CacheMaintainer {
    /// Turns the directory into the format this release creates (``CacheStore/upgradeDirectoryFormat()``).
    /// - Throws: `CacheError` (`.busy` while a process of an earlier release has it open).
    package func upgradeFormat() throws -> FormatUpgradeSummary {
        FormatUpgradeSummary(directory: directory, upgrade: try store.upgradeDirectoryFormat())
    }
}
