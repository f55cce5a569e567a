import ArgumentParser
import CacheMaintenance
import Foundation

struct Compact: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Hold the directory to a size on disk (du): evict least recently used entries, remove leftovers, shrink the index.",
        discussion: """
            When the entries (bodies on disk + index records, the measure of the services' online \
            hard cap) take more than --max-size, evicts least recently used entries until they take \
            --low-water; the index file adds its own pages on top and never shrinks, so leave \
            headroom. Also evicts entries unused for --max-age, evicts \
            the shortfall when the file system has less than --min-free available, and removes \
            orphan body files and temp files older than --grace. Works in write transactions of \
            --batch-size entries and unlinks after each commit, so running services are barely \
            delayed. Two runs never overlap: the second exits with 4 (or waits with --wait).

            Example (crontab): 17 * * * * urlcache compact /var/cache/api --max-size 20GiB --low-water 90% --max-age 30d
            """)

    @OptionGroup var options: CacheDirectoryOptions
    @Option(
        help: "Capacity, as du counts the directory: 20GiB, 500MB, bytes, or a percentage of the file system (50%).",
        transform: { try SizeLimit($0) })
    var maxSize: SizeLimit?
    @Option(
        help: "A directory over this is brought down to it: a percentage of --max-size or a size (default 90%).",
        transform: { try SizeLimit($0) })
    var lowWater: SizeLimit?
    @Option(help: "Evict entries not used for this long: 30d, 12h, 90m, 1d12h.", transform: { try AgeLimit.parse($0) })
    var maxAge: Duration?
    @Option(
        help: "Keep this much of the file system free: a size or a percentage (5%).", transform: { try SizeLimit($0) })
    var minFree: SizeLimit?
    @Option(
        help: "Leave orphan and temp files younger than this (stores in flight).", transform: { try AgeLimit.parse($0) }
    )
    var grace: Duration = .seconds(600)
    @Option(help: "Entries per write transaction, at most (stores of every process wait for one).")
    var batchSize = 500
    @Flag(help: "Print what would be evicted; change nothing.") var dryRun = false
    @Flag(help: "Wait for a running compaction instead of exiting with status 4.") var wait = false
    @OptionGroup var output: OutputOptions

    func validate() throws {
        if lowWater != nil && maxSize == nil { throw ValidationError("--low-water needs --max-size") }
        if batchSize < 1 { throw ValidationError("--batch-size must be at least 1") }
    }

    func run() throws {
        var compaction = CompactionOptions()
        compaction.maxSize = maxSize
        if let lowWater { compaction.lowWater = lowWater }
        compaction.maxAge = maxAge
        compaction.minFree = minFree
        compaction.run.gracePeriod = grace
        compaction.run.batchSize = batchSize
        compaction.run.dryRun = dryRun
        compaction.run.waitForLock = wait
        let progress = ProgressLine(enabled: !output.json && isatty(STDERR_FILENO) != 0)
        let summary = try CacheMaintainer(directory: options.resolved).compact(compaction) { entries, bytes in
            progress.update("compacting: evicted \(entries) entries, \(TextFormat.bytes(bytes))")
        }
        progress.finish()
        output.emit(summary)
    }
}

/// A self-overwriting status line on stderr, at most 5 updates a second; only on a terminal.
final class ProgressLine {
    private let enabled: Bool
    private var last = ContinuousClock.now - .seconds(1)
    private var shown = false

    init(enabled: Bool) { self.enabled = enabled }

    func update(_ text: String) {
        guard enabled, ContinuousClock.now - last >= .milliseconds(200) else { return }
        last = ContinuousClock.now
        shown = true
        FileHandle.standardError.write(Data("\r\u{1B}[K\(text)".utf8))
    }

    func finish() {
        if shown { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
    }
}
