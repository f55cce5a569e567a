import Foundation
import SharedURLCacheStore

/// Operator actions on one cache directory: compaction, statistics, verification, listing and
/// purging, as library code the `urlcache` command calls in a few lines (and tests call directly).
///
/// ```swift
/// let maintainer = try CacheMaintainer(directory: "/var/cache/api")
/// var options = CompactionOptions()
/// options.maxSize = try SizeLimit("20GiB")
/// let summary = try maintainer.compact(options)
/// print(summary.text)
/// ```
///
/// Every operation is safe while services use the directory: reads walk the index in short read
/// transactions, deletions commit in bounded write transactions and unlink after the commit.
///
/// ## Topics
/// - ``compact(_:now:fileSystem:progress:)``
/// - ``statistics(measure:)``
/// - ``verify(fix:checkBodies:rebuild:)``
/// - ``list(_:)``, ``show(url:partition:)``
/// - ``purge(_:dryRun:now:)``
package struct CacheMaintainer: Sendable {
    package let store: CacheStore
    package var directory: String { store.directory }

    /// Opens an existing cache directory (a maintenance tool never creates one: a typo in a
    /// crontab must fail loudly, not start an empty cache).
    /// - Throws: `CacheError` (`.directoryNotFound`, `.notACache`, `.unsupportedVersion`…).
    package init(directory: String) throws(CacheError) {
        var configuration = CacheStoreConfiguration()
        configuration.createIfMissing = false
        store = try CacheStore(directory: directory, configuration: configuration)
    }

    /// Uses an already open store (tests, or a service embedding maintenance).
    package init(store: CacheStore) {
        self.store = store
    }
}
