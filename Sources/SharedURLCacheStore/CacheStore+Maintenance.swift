import CSharedURLCache
import Foundation

/// What a compaction should do.
public struct CompactionPolicy: Sendable, Hashable {
    /// Evict entries (by the directory's eviction policy) until they take at most this many
    /// bytes, counted as ``DiskUsage/entryBytes`` and the capacity count them: records and
    /// body files (an inline body is part of its record); `nil`: no size target.
    public var targetBytes: Int?
    /// Bring the whole directory to at most this many bytes on disk as `du` counts them (index
    /// file included, which is rewritten into a new generation when that is what stands in the
    /// way; leftovers past the grace period removed), when it is over; `nil`: no such target.
    public var diskTargetBytes: Int?
    /// Also evict entries not used since this date.
    public var unusedBefore: Date?
    /// Orphan body files and temp files younger than this are left alone (an in-flight store).
    public var gracePeriod: Duration = .seconds(600)
    /// Entries per write transaction, at most: live writers wait at most one batch. A batch
    /// also ends after 4 ms of work, and is made smaller while its commit holds the write lock
    /// past about 8 ms (Benchmarks/RESULTS.md, compaction).
    public var batchSize = 500
    /// Report what would be evicted and removed, and change nothing.
    public var dryRun = false
    /// Wait for a running compaction instead of failing with `.busy`.
    public var waitForLock = false

    /// A policy with a size target and/or an age cutoff; the other settings keep their defaults.
    public init(targetBytes: Int? = nil, unusedBefore: Date? = nil) {
        self.targetBytes = targetBytes
        self.unusedBefore = unusedBefore
    }
}

/// What a compaction did (or, in a dry run, would do).
public struct CompactionReport: Sendable, Hashable, Codable {
    /// Entries evicted (to the size targets and for age).
    public var evictedEntries: Int
    /// The bytes the evicted entries took (records + body files).
    public var evictedBytes: Int
    /// The part of ``evictedEntries`` evicted for age (`unusedBefore`).
    public var expiredEntries: Int
    /// Body files no record points to, removed (past the grace period).
    public var orphanFiles: Int
    /// The bytes of those orphan files.
    public var orphanBytes: Int
    /// Temp files of abandoned stores, removed (past the grace period).
    public var tempFiles: Int
    /// Time-index keys that are not their entry's own, removed as the walk met them: keys a move
    /// left behind under least recently used (routine, not damage) and keys whose record is gone.
    public var strayIndexKeys: Int
    /// Write transactions committed (live writers waited at most one each).
    public var transactions: Int
    /// The directory's bytes on disk (allocated blocks, as `du`), measured before and after.
    public var diskBytesBefore: Int
    /// See ``diskBytesBefore``.
    public var diskBytesAfter: Int
    /// The index file and its lock file, before and after.
    public var indexBytesBefore: Int
    /// See ``indexBytesBefore``.
    public var indexBytesAfter: Int
    /// Index generations written.
    public var indexRewrites: Int
    /// The longest rewrite, from its start to the switch, in milliseconds. Stores go on
    /// during it: it holds the write lock only for its last step (``longestStorePauseMilliseconds``).
    public var longestRewriteMilliseconds: Int
    /// Entries were evicted, but the index file was left for a later run: why in
    /// ``indexRewriteDeferral`` (docs/Capacity.md).
    public var indexRewriteDeferred: Bool
    /// Of ``evictedEntries``, those evicted to hold partitions to their quotas (see
    /// `CacheStore.setPartitionQuota`), before any other eviction.
    public var quotaEvictedEntries: Int = 0
    /// The file system had no room for the rewritten index: entries were evicted and their
    /// files removed, and the index file was left for a later run (docs/Capacity.md).
    public var indexRewriteSkippedForSpace: Bool = false
    /// The longest this compaction held the index's write lock (an eviction batch, or a
    /// rewrite's switch), in milliseconds: the longest any store of any process waited for it.
    /// Lookups never wait.
    public var longestStorePauseMilliseconds: Int = 0
    /// Why the index was not rewritten, when ``indexRewriteDeferred``.
    public var indexRewriteDeferral: IndexRewriteDeferral? = nil
    /// Other processes' stores committed by this compaction's eviction batches: each waited
    /// for the write lock behind a batch and went in its commit instead of a commit of its own.
    public var carriedStores: Int = 0
}

/// What a verification found (and, with `fix`, repaired).
public struct VerificationReport: Sendable, Hashable, Codable {
    /// Entries checked.
    public var entries: Int
    /// Index records that do not decode.
    public var unreadableRecords: Int
    /// Records whose body file is missing.
    public var missingBodies: Int
    /// Bodies of the wrong size, header or (with `checkBodies`) checksum.
    public var damagedBodies: Int
    /// Body files no record points to (may be stores in flight: not damage).
    public var orphanFiles: Int
    /// Temp files (may be stores in flight: not damage).
    public var tempFiles: Int
    /// Time-index keys without their record, or with a value that names no entry's place (damage;
    /// keys a move left behind under least recently used are not counted, and `fix` drops them).
    public var strayIndexKeys: Int
    /// Problems `fix` repaired.
    public var repaired: Int
    /// The directory's counters equal the sums over its records.
    public var countersMatch: Bool
    /// Records a rebuild restored from the record copies in body files.
    public var rebuiltEntries: Int
    /// Entries whose body lives inside the index record: a rebuild after losing the index
    /// cannot restore them (rebuilds read body files).
    public var inlineEntries: Int
    /// Bytes of the orphan body files and temp files found (allocated blocks).
    public var leftoverBytes: Int
    /// Entries in a record format of another major version (written by another release): not
    /// damage, and never purged by this one.
    public var otherFormatEntries: Int
    /// Every partition's counters equal the sums over its records. A process of an earlier
    /// release, which keeps no partition counters, leaves them behind; `fix` counts them again.
    public var partitionCountersMatch: Bool = true
    /// With a complete URL order kept (`urlcache url-order --on`): postings missing for stored
    /// keys plus postings naming no stored key. A missing one would let a purge by URL prefix
    /// leave its entry; `fix` writes them again from the records.
    public var urlOrderMismatches: Int = 0

    /// Damage that `fix` repairs (orphans and temp files of running stores are not damage).
    public var isDamaged: Bool {
        unreadableRecords + missingBodies + damagedBodies + strayIndexKeys + urlOrderMismatches > 0 || !countersMatch
            || !partitionCountersMatch
    }
}

extension CacheStore {
    /// Walks every entry (record only, no body) in read transactions of `batchSize` entries;
    /// `body` runs outside any transaction and returns `false` to stop.
    /// - Returns: the number of unreadable records skipped.
    /// The corresponding C function is `suc_scan`.
    @discardableResult
    public func forEachRecord(batchSize: Int = 1000, _ body: (StoredRecord) -> Bool) throws(CacheError) -> Int {
        try withoutActuallyEscaping(body) { (body) throws(CacheError) -> Int in
            final class Box {
                let body: (StoredRecord) -> Bool; init(_ b: @escaping (StoredRecord) -> Bool) { body = b }
            }
            let box = Box(body)
            var detail = suc_error()
            var unreadable: UInt64 = 0
            let rc = withHandle { handle in
                suc_scan(
                    handle, UInt32(clamping: max(batchSize, 1)),
                    { ctx, view in
                        let box = Unmanaged<Box>.fromOpaque(ctx!).takeUnretainedValue()
                        return box.body(StoredRecord(view!.pointee, includesBody: false)) ? 0 : 1
                    }, Unmanaged.passUnretained(box).toOpaque(), &unreadable, &detail)
            }
            guard rc == SUC_OK else { throw CacheError(core: rc, detail) }
            return Int(unreadable)
        }
    }

    /// Evicts and sweeps while services keep running (see ``CompactionPolicy``).
    /// - Parameter progress: called between transactions with (entries, bytes) evicted so far.
    /// - Throws: `.busy` when another compaction runs (unless `waitForLock`).
    /// The corresponding C function is `suc_compact`.
    public func compact(_ policy: CompactionPolicy, progress: ((Int, Int) -> Void)? = nil) throws(CacheError)
        -> CompactionReport
    {
        final class Box { let progress: ((Int, Int) -> Void)?; init(_ p: ((Int, Int) -> Void)?) { progress = p } }
        let box = Box(progress)
        var params = suc_compact_params()
        params.target_bytes = policy.targetBytes.map { UInt64(max($0, 0)) } ?? UInt64.max
        params.disk_target_bytes = policy.diskTargetBytes.map { UInt64(max($0, 1)) } ?? UInt64.max
        params.unused_before_ms = policy.unusedBefore.map { CacheStore.milliseconds($0) } ?? 0
        let grace = policy.gracePeriod.components
        params.grace_ms = UInt64(max(0, grace.seconds * 1000 + grace.attoseconds / 1_000_000_000_000_000))
        params.batch = UInt32(clamping: max(policy.batchSize, 1))
        params.dry_run = policy.dryRun ? 1 : 0
        params.wait_for_lock = policy.waitForLock ? 1 : 0
        if progress != nil {
            params.progress = { ctx, entries, bytes in
                Unmanaged<Box>.fromOpaque(ctx!).takeUnretainedValue().progress?(Int(entries), Int(bytes))
            }
        }
        params.progress_ctx = Unmanaged.passUnretained(box).toOpaque()
        var report = suc_compact_report()
        var detail = suc_error()
        let rc = withExtendedLifetime(box) { withHandle { suc_compact($0, &params, &report, &detail) } }
        guard rc == SUC_OK else { throw CacheError(core: rc, detail) }
        return CompactionReport(
            evictedEntries: Int(report.evicted_entries), evictedBytes: Int(report.evicted_bytes),
            expiredEntries: Int(report.expired_entries), orphanFiles: Int(report.orphan_files),
            orphanBytes: Int(report.orphan_bytes), tempFiles: Int(report.temp_files),
            strayIndexKeys: Int(report.stray_index_keys), transactions: Int(report.transactions),
            diskBytesBefore: Int(report.disk_bytes_before), diskBytesAfter: Int(report.disk_bytes_after),
            indexBytesBefore: Int(report.index_bytes_before), indexBytesAfter: Int(report.index_bytes_after),
            indexRewrites: Int(report.index_rewrites), longestRewriteMilliseconds: Int(report.longest_rewrite_ms),
            indexRewriteDeferred: report.index_rewrite_deferred != 0,
            quotaEvictedEntries: Int(report.quota_evicted_entries),
            indexRewriteSkippedForSpace: report.index_rewrite_skipped_for_space != 0,
            longestStorePauseMilliseconds: Int(report.longest_lock_ms),
            indexRewriteDeferral: IndexRewriteDeferral(report), carriedStores: Int(report.carried_stores))
    }

    /// Rewrites the index compactly into a new generation now; every process follows at its
    /// next operation (stores wait for the copy, lookups never do). `compact` does this by itself
    /// when the index stands between the directory and its disk target.
    /// - Returns: the entries copied.
    /// - Throws: `.busy` when a compaction runs (unless `waitForLock`).
    /// The corresponding C function is `suc_rewrite_index`.
    @discardableResult
    public func rewriteIndex(waitForLock: Bool = true) throws(CacheError) -> Int {
        var entries: UInt64 = 0
        var detail = suc_error()
        let rc = withHandle { suc_rewrite_index($0, waitForLock ? 1 : 0, &entries, &detail) }
        guard rc == SUC_OK else { throw CacheError(core: rc, detail) }
        return Int(entries)
    }

    /// Checks the index against the body files both ways.
    /// - Parameters:
    ///   - fix: purge damaged entries, drop stray index keys, remove orphans older than 10 min,
    ///     recompute the counters.
    ///   - checkBodies: read and check every body (slow), not only sizes and headers.
    ///   - rebuild: restore records from body files whose record is missing (after index loss).
    /// The corresponding C function is `suc_verify`.
    public func verify(fix: Bool = false, checkBodies: Bool = false, rebuild: Bool = false) throws(CacheError)
        -> VerificationReport
    {
        var flags: UInt32 = 0
        if fix { flags |= UInt32(SUC_VERIFY_FIX) }
        if checkBodies { flags |= UInt32(SUC_VERIFY_BODIES) }
        if rebuild { flags |= UInt32(SUC_VERIFY_REBUILD) }
        var report = suc_verify_report()
        var detail = suc_error()
        let rc = withHandle { suc_verify($0, flags, &report, &detail) }
        guard rc == SUC_OK else { throw CacheError(core: rc, detail) }
        return VerificationReport(
            entries: Int(report.entries), unreadableRecords: Int(report.unreadable_records),
            missingBodies: Int(report.missing_bodies), damagedBodies: Int(report.damaged_bodies),
            orphanFiles: Int(report.orphan_files), tempFiles: Int(report.temp_files),
            strayIndexKeys: Int(report.stray_index_keys), repaired: Int(report.repaired),
            countersMatch: report.counters_match != 0, rebuiltEntries: Int(report.rebuilt),
            inlineEntries: Int(report.inline_entries), leftoverBytes: Int(report.leftover_bytes),
            otherFormatEntries: Int(report.other_format_entries),
            partitionCountersMatch: report.partition_counters_match != 0,
            urlOrderMismatches: Int(report.key_order_mismatches))
    }
}
