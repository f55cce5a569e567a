import CSharedURLCache

extension CacheStore {
    /// Removes (or with `soft` marks stale) every entry of `partition` and `method` whose URL
    /// starts with `urlPrefix`, for keys in the URL layout the cache's own layers write
    /// (`KeyLayout`; docs/Formats.md, "Key-order postings"). The index keeps those keys in URL
    /// order, so this reads the keys under the prefix and their records, never the rest of the
    /// directory, in a directory that keeps them (``setKeyOrder(kept:)``). Entries an earlier
    /// release stored have no posting: ask ``keyOrderState()`` first and walk the records unless
    /// it says complete.
    /// The corresponding C function is `suc_purge_url_prefix`.
    package func purge(urlPrefix: String, partition: String, method: String, soft: Bool) throws(CacheError)
        -> TagPurgeReport
    {
        var report = suc_purge_report()
        var detail = suc_error()
        let flags = soft ? UInt32(SUC_PURGE_SOFT) : 0
        let (p, m, u) = (Array(partition.utf8), Array(method.utf8), Array(urlPrefix.utf8))
        let rc = withHandle { handle in
            p.withUnsafeBytes { p in
                m.withUnsafeBytes { m in
                    u.withUnsafeBytes { u in
                        suc_purge_url_prefix(
                            handle, p.baseAddress, p.count, m.baseAddress, m.count, u.baseAddress, u.count, flags,
                            &report, &detail)
                    }
                }
            }
        }
        guard rc == SUC_OK else { throw CacheError(core: rc, detail) }
        return TagPurgeReport(report)
    }

    /// Starts (`true`: builds them by one walk of the index, in one transaction) or stops
    /// (`false`: drops them) keeping key-order postings, for every process sharing the directory
    /// from its next store. They cost one index key per stored URL, about the URL's length plus
    /// 20 bytes (docs/Formats.md, "Key-order postings").
    /// The corresponding C function is `suc_key_order_set`.
    package func setKeyOrder(kept: Bool) throws(CacheError) {
        var detail = suc_error()
        let rc = withHandle { suc_key_order_set($0, kept ? 1 : 0, &detail) }
        guard rc == SUC_OK else { throw CacheError(core: rc, detail) }
    }

    /// Whether the directory keeps key-order postings, and whether every entry has its posting:
    /// not once an earlier release stored or removed entries since they were built (`urlcache
    /// verify --fix` builds them again).
    package func keyOrderState() throws(CacheError) -> (kept: Bool, complete: Bool) {
        var kept: Int32 = 0
        var complete: Int32 = 0
        var detail = suc_error()
        let rc = withHandle { suc_key_order_state($0, &kept, &complete, &detail) }
        guard rc == SUC_OK else { throw CacheError(core: rc, detail) }
        return (kept != 0, complete != 0)
    }
}
