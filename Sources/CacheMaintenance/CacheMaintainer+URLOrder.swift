import SharedURLCacheStore

/// What `urlcache url-order` prints.
package struct URLOrderSummary: Sendable, Hashable, Codable {
    package var directory: String
    /// The directory keeps its URL order (key-order postings): `purge --prefix` reads the keys
    /// under a prefix instead of walking every entry.
    package var kept: Bool
    /// Every entry has its posting (false once an earlier release stored or removed entries
    /// since they were built; `verify --fix` builds them again).
    package var complete: Bool
}

extension CacheMaintainer {
    /// Starts (`true`) or stops (`false`) keeping the directory's URL order, or with `nil`
    /// only reports it (``CacheStore/setKeyOrder(kept:)``). Starting walks the index once.
    /// - Throws: `CacheError`.
    package func setURLOrder(kept: Bool?) throws -> URLOrderSummary {
        if let kept { try store.setKeyOrder(kept: kept) }
        let state = try store.keyOrderState()
        return URLOrderSummary(directory: directory, kept: state.kept, complete: state.complete)
    }
}
