import CSharedURLCache

/// One partition's counters, kept in the index in the same commit as every store and removal
/// (no walk over the entries reads them).
package struct PartitionCounters: Sendable, Hashable {
    /// The partition's bytes, as stored (the empty partition is the default one).
    package var partition: [UInt8]
    /// Entries of the partition (each `Vary` variant counts one).
    package var entries: Int
    /// What its entries take on disk as the capacity counts it: records + body files rounded up
    /// to whole 4 KiB blocks (docs/Capacity.md).
    package var bytes: Int
    /// Logical (uncompressed) body bytes.
    package var bodyBytes: Int
    /// Body bytes as stored, as ``StoredRecord/footprintSize`` counts them.
    package var storedBytes: Int
    /// The partition's byte quota, or `nil` when it has none.
    package var quotaBytes: Int?
}

/// What setting or removing a partition quota did.
package struct QuotaReport: Sendable, Hashable, Codable {
    /// Entries of the partition put into its own last-use order (one walk, when set).
    package var indexedEntries: Int
    /// Entries evicted to bring the partition under its new quota.
    package var evictedEntries: Int
    /// Write transactions committed (stores waited at most one each).
    package var transactions: Int
}

extension CacheStore {
    /// Every partition with entries or a quota, read from the index's counters in one short read
    /// transaction: O(partitions), never a walk over the entries.
    /// - Returns: the partitions, and `exact`: `false` when their sums differ from the
    ///   directory's counters (a process of an earlier release, which keeps no partition
    ///   counters, stored or removed entries since they were counted; `verify(fix: true)`
    ///   counts them again).
    /// The corresponding C function is `suc_partitions_list`.
    package func partitionCounters() throws(CacheError) -> (partitions: [PartitionCounters], exact: Bool) {
        final class Box { var items: [PartitionCounters] = [] }
        let box = Box()
        var exact: Int32 = 0
        var detail = suc_error()
        let rc = withHandle { handle in
            suc_partitions_list(
                handle,
                { ctx, info in
                    let info = info!.pointee
                    let name =
                        info.name_len == 0 ? [] : Array(UnsafeBufferPointer(start: info.name, count: info.name_len))
                    Unmanaged<Box>.fromOpaque(ctx!).takeUnretainedValue().items.append(
                        PartitionCounters(
                            partition: name, entries: Int(info.entries), bytes: Int(info.bytes),
                            bodyBytes: Int(info.body_bytes), storedBytes: Int(info.stored_bytes),
                            quotaBytes: info.quota_bytes == 0 ? nil : Int(info.quota_bytes)))
                    return 0
                }, Unmanaged.passUnretained(box).toOpaque(), &exact, &detail)
        }
        guard rc == SUC_OK else { throw CacheError(core: rc, detail) }
        return (box.items, exact != 0)
    }

    /// Sets (or with `nil` removes) the byte quota of `partition` for the whole directory: every
    /// process obeys it. A store that would take the partition over its quota first evicts that
    /// partition's own least recently used entries in its commit, never another partition's; an
    /// entry larger than the quota is refused with `.overCapacity`. Setting one walks the entries
    /// once (write transactions of 1,000) and evicts down to the quota.
    /// - Parameters:
    ///   - maxBytes: the quota, in bytes as the capacity counts them; `nil` removes it.
    ///   - allowNewPartition: set it even though the partition has no entries yet.
    /// - Throws: `.invalidInput` for a quota below 1 byte; `.notFound` for a partition without
    ///   entries (unless `allowNewPartition`); `.unsupportedVersion` while a process of an
    ///   earlier release, which would not obey it, has the directory open.
    /// The corresponding C function is `suc_partition_set_quota`.
    @discardableResult
    package func setPartitionQuota(_ partition: [UInt8], maxBytes: Int?, allowNewPartition: Bool = false)
        throws(CacheError) -> QuotaReport
    {
        if let maxBytes, maxBytes < 1 {
            throw CacheError(.invalidInput, "a partition quota must be at least 1 byte, not \(maxBytes)")
        }
        var report = suc_quota_report()
        var detail = suc_error()
        let flags = allowNewPartition ? UInt32(SUC_QUOTA_NEW_PARTITION) : 0
        let rc = withHandle { handle in
            partition.withUnsafeBytes { p in
                suc_partition_set_quota(
                    handle, p.baseAddress, p.count, maxBytes.map { UInt64($0) } ?? 0, flags, &report, &detail)
            }
        }
        guard rc == SUC_OK else { throw CacheError(core: rc, detail) }
        return QuotaReport(
            indexedEntries: Int(report.indexed_entries), evictedEntries: Int(report.evicted_entries),
            transactions: Int(report.transactions))
    }
}
