import CSharedURLCache

extension CacheStore {
    /// Removes (or with `soft` marks stale) every entry of `partition` and `method` whose URL
    /// starts with `urlPrefix`, for keys in the URL layout the cache's own layers write
    /// (`KeyLayout`; docs/Formats.md, "Key-order postings"). The index keeps those keys in URL
    /// order, so this reads the keys under the prefix and their records, never the rest of the
    /// directory. Entries an earlier release stored have no posting: ask ``keyOrderIsComplete()``
    /// first and walk the records when it is `false`.
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
        return TagPurgeReport(
            removedEntries: Int(report.removed), invalidatedEntries: Int(report.invalidated),
            recordsRead: Int(report.records_read), stalePostings: Int(report.stale_postings))
    }

    /// Whether every entry has its key-order posting: `false` once an earlier release stored or
    /// removed entries since the postings were built (`urlcache verify --fix` builds them again).
    package func keyOrderIsComplete() throws(CacheError) -> Bool {
        var complete: Int32 = 0
        var detail = suc_error()
        let rc = withHandle { suc_key_order_complete($0, &complete, &detail) }
        guard rc == SUC_OK else { throw CacheError(core: rc, detail) }
        return complete != 0
    }
}
