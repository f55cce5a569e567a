import CSharedURLCache

/// What a cache directory takes on disk, in allocated blocks, as `du -s --block-size=1` counts
/// it: operators hold a cache to its size with `du` and `df`, so this is the figure to compare
/// with a capacity.
///
/// ```swift
/// let usage = try store.diskUsage()                 // cheap: counters, two fstat, tmp/
/// let exact = try store.diskUsage(measure: true)    // walks and stats every file
/// print(usage.totalBytes, usage.entryBytes)
/// ```
///
/// `totalBytes` = `indexBytes` + `bodyFileBytes` + `leftoverBytes` + `overheadBytes`.
public struct DiskUsage: Sendable, Hashable {
    /// Everything in the directory, the root included.
    public var totalBytes: Int
    /// The index file and its lock file.
    public var indexBytes: Int
    /// Body files of live entries.
    public var bodyFileBytes: Int
    /// Temp files, orphan body files and retired index generations.
    public var leftoverBytes: Int
    /// How many files ``leftoverBytes`` counts.
    public var leftoverFiles: Int
    /// Directories and the small control files.
    public var overheadBytes: Int
    /// What live entries take (their index records plus their body files): the figure the
    /// online capacity and compaction evict against.
    public var entryBytes: Int
    /// Every file was stat'ed just now; otherwise leftovers and directories are as the last
    /// measurement in this process found them (or the layout's directories as created).
    public var measured: Bool

    /// A usage figure; `CacheStore.diskUsage(measure:)` makes them.
    public init(
        totalBytes: Int, indexBytes: Int, bodyFileBytes: Int, leftoverBytes: Int, leftoverFiles: Int,
        overheadBytes: Int, entryBytes: Int, measured: Bool
    ) {
        self.totalBytes = totalBytes
        self.indexBytes = indexBytes
        self.bodyFileBytes = bodyFileBytes
        self.leftoverBytes = leftoverBytes
        self.leftoverFiles = leftoverFiles
        self.overheadBytes = overheadBytes
        self.entryBytes = entryBytes
        self.measured = measured
    }
}

extension CacheStore {
    /// What the directory takes on disk.
    /// - Parameter measure: `true` walks the directory and stats every file (exact, O(files));
    ///   `false` reads the index's counters, stats the index and lists `tmp/` (cheap enough for
    ///   every store).
    /// - Throws: `.index`, `.usedAfterFork`.
    /// The corresponding C function is `suc_cache_disk_usage`.
    public func diskUsage(measure: Bool = false) throws(CacheError) -> DiskUsage {
        let result: Result<suc_disk_usage, CacheError> = withHandle { handle in
            var detail = suc_error()
            var usage = suc_disk_usage()
            let rc = suc_cache_disk_usage(handle, measure ? UInt32(SUC_USAGE_MEASURE) : 0, &usage, &detail)
            return rc == SUC_OK ? .success(usage) : .failure(CacheError(core: rc, detail))
        }
        let usage = try result.get()
        return DiskUsage(
            totalBytes: Int(clamping: usage.total_bytes), indexBytes: Int(clamping: usage.index_bytes),
            bodyFileBytes: Int(clamping: usage.body_file_bytes), leftoverBytes: Int(clamping: usage.leftover_bytes),
            leftoverFiles: Int(clamping: usage.leftover_files), overheadBytes: Int(clamping: usage.overhead_bytes),
            entryBytes: Int(clamping: usage.entry_bytes), measured: usage.measured != 0)
    }
}
