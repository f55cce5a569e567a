import Foundation
import SharedURLCacheStore

/// What `urlcache compact` is asked to hold the directory to.
///
/// Policy: least recently used first (by last use, recorded lazily by every process's hits), because
/// an HTTP cache's value is in what is being requested now; the store's last-use index makes the
/// walk oldest-first without a scan. Size is what `du` shows for the directory (allocated blocks:
/// index file, bodies, leftovers, directories). Two marks: services evict online at their capacity
/// (`maxSize`, the same figure as `SharedCache.diskCapacity` or `urlcache proxy --disk-capacity`),
/// and a run that finds the directory over `lowWater` brings it down to `lowWater`, rewriting the
/// index when that is what stands in the way, so cron keeps headroom below the capacity
/// (docs/Capacity.md).
package struct CompactionOptions: Sendable, Hashable {
    /// The directory's capacity (bytes, or a percentage of its file system); `nil`: no size limit.
    package var maxSize: SizeLimit?
    /// Where size eviction stops: a percentage of `maxSize`, or bytes (at most `maxSize`).
    package var lowWater: SizeLimit = .percent(90)
    /// Entries not used for this long go whatever the size.
    package var maxAge: Duration?
    /// Keep at least this much of the file system free (bytes, or a percentage of it): when less is
    /// available, evict the shortfall.
    package var minFree: SizeLimit?
    /// How the run goes: the grace period of leftovers, entries per write transaction, dry run,
    /// waiting for a running compaction. Its targets are not read (the plan sets them from the
    /// marks above), and `waitForLock` is honoured by ``CacheMaintainer/compact(_:now:fileSystem:progress:)``,
    /// which plans again after the wait, not by the store.
    package var run = CompactionPolicy()

    package init() {}
}

/// The sizes a compaction worked from and the targets it gave the store.
///
/// `diskTargetBytes` is on what `du` shows (the store measures it, evicts, removes leftovers and
/// rewrites the index until the directory is under it); `targetBytes` (from `--min-free`) is on
/// `entryBytes` = bodies on disk (with their header and record copy) + index records.
package struct CompactionPlan: Sendable, Hashable, Codable {
    package var entryBytes: Int
    /// The index file in use (last page), informational.
    package var indexUsedBytes: Int
    package var fileSystem: FileSystemSpace?
    package var maxSizeBytes: Int?
    package var lowWaterBytes: Int?
    package var minFreeBytes: Int?
    /// The bound on `entryBytes` the store evicts down to (`--min-free`); `nil`: none.
    package var targetBytes: Int?
    /// The bound on the directory's bytes on disk (`du`) the store brings it down to when over
    /// it: the low-water mark of `maxSize`; `nil`: none.
    package var diskTargetBytes: Int?
    /// Entries last used before this go (`maxAge`).
    package var unusedBefore: Date?
    /// Why anything is evicted: `over-max-size`, `below-min-free`, `max-age`.
    package var reasons: [String]

    /// Computes the plan; pure, so the arithmetic is tested without a disk.
    /// - Throws: ``MaintenanceError/invalidArgument(_:)`` when the marks contradict each other, or a
    ///   percentage of the file system is asked for without `fileSystem`.
    package static func make(
        usage: DiskUsage, statistics: StoreStatistics, options: CompactionOptions, fileSystem: FileSystemSpace?,
        now: Date
    ) throws(MaintenanceError) -> CompactionPlan {
        try make(
            entryBytes: usage.entryBytes, indexUsedBytes: statistics.indexUsedBytes, options: options,
            fileSystem: fileSystem, now: now)
    }

    /// The same from the two figures it uses: the entries' bytes as the store's byte target
    /// counts them (``DiskUsage/entryBytes``: records and body files) and the index in use.
    package static func make(
        entryBytes: Int, indexUsedBytes: Int, options: CompactionOptions, fileSystem: FileSystemSpace?, now: Date
    ) throws(MaintenanceError) -> CompactionPlan {
        func resolveOnFileSystem(_ limit: SizeLimit?, _ name: String) throws(MaintenanceError) -> Int? {
            guard let limit else { return nil }
            if case .percent = limit, fileSystem == nil {
                throw .invalidArgument("\(name) as a percentage needs the file system size")
            }
            return limit.resolved(of: fileSystem?.totalBytes ?? 0)
        }
        var plan = CompactionPlan(
            entryBytes: entryBytes, indexUsedBytes: indexUsedBytes, fileSystem: fileSystem, maxSizeBytes: nil,
            lowWaterBytes: nil, minFreeBytes: nil, targetBytes: nil,
            diskTargetBytes: nil, unusedBefore: nil, reasons: [])
        var targets: [Int] = []
        if let maxSize = try resolveOnFileSystem(options.maxSize, "--max-size") {
            let lowWater = options.lowWater.resolved(of: maxSize)
            guard lowWater <= maxSize else {
                throw .invalidArgument("--low-water (\(lowWater) bytes) is above --max-size (\(maxSize) bytes)")
            }
            plan.maxSizeBytes = maxSize
            plan.lowWaterBytes = lowWater
            // Whether the directory is over it is measured by the store (du), not known here.
            plan.diskTargetBytes = lowWater
        }
        if let minFree = try resolveOnFileSystem(options.minFree, "--min-free"), let fileSystem {
            plan.minFreeBytes = minFree
            if fileSystem.availableBytes < minFree {
                targets.append(max(0, entryBytes - (minFree - fileSystem.availableBytes)))
                plan.reasons.append("below-min-free")
            }
        }
        plan.targetBytes = targets.min()
        if let maxAge = options.maxAge {
            plan.unusedBefore = now.addingTimeInterval(-maxAge.timeInterval)
            plan.reasons.append("max-age")
        }
        return plan
    }
}

/// What `urlcache compact` did (or, with `dryRun`, would do).
package struct CompactionSummary: Sendable, Hashable, Codable {
    package var directory: String
    package var dryRun: Bool
    package var plan: CompactionPlan
    /// The store's report: evicted entries and bytes, expired, orphans, temp files, transactions.
    package var result: CompactionReport
    package var entriesBefore: Int
    package var entriesAfter: Int
    package var entryBytesBefore: Int
    package var entryBytesAfter: Int
    /// Why anything was evicted, as found by the run (`over-low-water` when the directory's
    /// measured size was over the plan's disk target), after the plan's own reasons.
    package var reasons: [String]
    /// The directory's eviction counter after the run (shared by every process, ever).
    package var evictionsCounter: Int
    package var seconds: Double
    /// Evicted entries per second of the run (0 when nothing was evicted).
    package var evictedPerSecond: Double
}

extension CacheMaintainer {
    /// Compacts the directory while services keep using it.
    ///
    /// Evicts least recently used entries until the directory is back under the low-water mark
    /// (when it was over `maxSize`) and under the `minFree` shortfall, entries unused for `maxAge`,
    /// then orphan body files and temp files older than the grace period. Works in write
    /// transactions of `batchSize` entries and unlinks bodies after each commit; evictions go into
    /// the directory's counters. DIR/compact.lock keeps two runs from overlapping.
    ///
    /// - Parameters:
    ///   - options: limits and mode.
    ///   - now: the clock (for `maxAge`).
    ///   - fileSystem: the file system's size and free space; measured with `statvfs` when `nil`.
    ///   - progress: called between transactions with (entries, bytes) evicted so far.
    /// - Throws: `CacheError` (`.busy` when another compaction runs and `waitForLock` is off),
    ///   ``MaintenanceError/invalidArgument(_:)`` for contradictory limits.
    package func compact(
        _ options: CompactionOptions, now: Date = Date(), fileSystem: FileSystemSpace? = nil,
        progress: ((Int, Int) -> Void)? = nil
    ) throws -> CompactionSummary {
        let start = ContinuousClock.now
        var attempt = try compactOnce(options, now: now, fileSystem: fileSystem, progress: progress)
        while attempt.result == nil {
            // Busy and asked to wait: wait for the running compaction with a dry run (it takes the
            // lock and changes nothing), then plan again from the sizes as they are now — a run that
            // waited must not evict by the sizes from before the other run.
            var wait = CompactionPolicy()
            wait.waitForLock = true
            wait.dryRun = true
            _ = try store.compact(wait)
            attempt = try compactOnce(options, now: now, fileSystem: fileSystem, progress: progress)
        }
        let before = attempt.before
        let plan = attempt.plan
        let result = attempt.result!
        let after = try store.statistics()
        let seconds = (ContinuousClock.now - start).timeInterval
        var reasons = plan.reasons
        if let target = plan.diskTargetBytes, result.diskBytesBefore > target {
            reasons.insert("over-low-water", at: 0)
        }
        // Other processes keep storing meanwhile, so "after" is the directory now, not before − evicted.
        return CompactionSummary(
            directory: directory, dryRun: options.run.dryRun, plan: plan, result: result,
            entriesBefore: before.entries,
            entriesAfter: options.run.dryRun ? before.entries - result.evictedEntries : after.entries,
            entryBytesBefore: plan.entryBytes,
            entryBytesAfter: options.run.dryRun
                ? plan.entryBytes - result.evictedBytes : try store.diskUsage(measure: false).entryBytes,
            reasons: reasons,
            evictionsCounter: after.evictions, seconds: seconds,
            evictedPerSecond: seconds > 0 ? Double(result.evictedEntries) / seconds : 0)
    }

    /// One planned compaction without waiting; `result == nil` when another one holds the lock
    /// and `options.run.waitForLock` asks to wait for it.
    private func compactOnce(
        _ options: CompactionOptions, now: Date, fileSystem: FileSystemSpace?, progress: ((Int, Int) -> Void)?
    ) throws -> (before: StoreStatistics, plan: CompactionPlan, result: CompactionReport?) {
        let space = try fileSystem ?? FileSystemSpace.of(directory: directory)
        let before = try store.statistics()
        let plan = try CompactionPlan.make(
            usage: store.diskUsage(measure: false), statistics: before, options: options, fileSystem: space, now: now)
        var policy = options.run
        policy.targetBytes = plan.targetBytes
        policy.unusedBefore = plan.unusedBefore
        policy.diskTargetBytes = plan.diskTargetBytes
        // Never wait inside the store: `compact` waits and plans again from the sizes as they are then.
        policy.waitForLock = false
        let outcome: Result<CompactionReport, CacheError>
        do {
            outcome = .success(try store.compact(policy, progress: progress))
        } catch {
            outcome = .failure(error)
        }
        switch outcome {
        case .success(let report): return (before, plan, report)
        case .failure(let error) where error.code == .busy && options.run.waitForLock: return (before, plan, nil)
        case .failure(let error): throw error
        }
    }
}
