import CSharedURLCache

/// What a purge by tag (or, inside the package, by URL prefix) did.
public struct TagPurgeReport: Sendable, Hashable, Codable {
    /// Entries removed (a hard purge).
    public var removedEntries: Int
    /// Entries marked stale now (a soft purge; entries marked before are not counted again).
    public var invalidatedEntries: Int
    /// Index records the purge read: the entries the tag names, never the rest of the directory.
    public var recordsRead: Int
    /// Postings whose entries were gone (or, for a tag, no longer carried it), dropped on the way.
    public var stalePostings: Int

    /// What a posting purge of the core (`suc_purge_tag`, `suc_purge_url_prefix`) reported.
    init(_ report: suc_purge_report) {
        removedEntries = Int(report.removed)
        invalidatedEntries = Int(report.invalidated)
        recordsRead = Int(report.records_read)
        stalePostings = Int(report.stale_postings)
    }
}

extension CacheStore {
    /// Removes every entry stored with `tag` (in `partition` only, when given), or with `soft`
    /// marks them stale instead: they keep their bodies, so a layer above can still serve them
    /// where stale answers are allowed, and revalidates them (docs/Formats.md, "Tags and soft
    /// purge"). Reads only the entries the tag names, in write transactions of 1,000.
    /// - Throws: `.invalidInput` for an empty tag, a newline in it, or one over 1,024 bytes.
    /// The corresponding C function is `suc_purge_tag`.
    @discardableResult
    public func purge(tag: String, partition: [UInt8]? = nil, soft: Bool = false) throws(CacheError)
        -> TagPurgeReport
    {
        var report = suc_purge_report()
        var detail = suc_error()
        let flags = soft ? UInt32(SUC_PURGE_SOFT) : 0
        let rc = withHandle { handle in
            Array(tag.utf8).withUnsafeBytes { t in
                guard let partition else {
                    return suc_purge_tag(handle, t.baseAddress, t.count, nil, 0, flags, &report, &detail)
                }
                return partition.withUnsafeBytes { p in
                    // A non-NULL pointer selects the partition, even the empty one.
                    withUnsafeBytes(of: UInt8(0)) { empty in
                        suc_purge_tag(
                            handle, t.baseAddress, t.count, p.baseAddress ?? empty.baseAddress, p.count, flags, &report,
                            &detail)
                    }
                }
            }
        }
        guard rc == SUC_OK else { throw CacheError(core: rc, detail) }
        return TagPurgeReport(report)
    }

    /// Marks one variant, or every variant of `key` when `variant` is `nil`, stale (a soft
    /// purge): see ``purge(tag:partition:soft:)``.
    /// - Returns: how many entries were marked now.
    /// The corresponding C function is `suc_invalidate`.
    @discardableResult
    public func invalidate(key: [UInt8], variant: [UInt8]? = nil) throws(CacheError) -> Int {
        try keyOperation(suc_invalidate, key: key, variant: variant)
    }
}
