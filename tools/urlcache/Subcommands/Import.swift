import ArgumentParser
import CacheMaintenance
import Foundation

/// `urlcache import DIR FILE`: stores a snapshot's entries into a directory.
struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Store a snapshot's entries (from urlcache export) into the directory.",
        discussion: """
            Entries keep their stored times, so their freshness carries over, and go through the \
            store's normal path: --disk-capacity is held as a service holds its capacity (a store \
            past it evicts the least recently used), partition quotas apply, other processes keep \
            working. An entry the directory holds with a later stored time is kept unless \
            --replace-newer. Each entry is checked before it is stored: a damaged, truncated or \
            foreign file stops the import at the damage with exit status 5; the entries before it \
            stay stored. --dry-run checks the whole file and stores nothing.
            """)

    @OptionGroup var options: CacheDirectoryOptions
    @Argument(help: "The snapshot file to read.") var file: String
    @Option(help: "The capacity each store holds (as a service's disk capacity), e.g. 1GiB; default none.")
    var diskCapacity: String?
    @Flag(help: "Check the whole file; store nothing.") var dryRun = false
    @Flag(help: "Replace entries stored in the directory after the snapshot's copy.") var replaceNewer = false
    @OptionGroup var output: OutputOptions

    func validate() throws {
        if let diskCapacity {
            do { _ = try SizeLimit(diskCapacity).resolved(of: 0) } catch {
                throw ValidationError("--disk-capacity: \(error)")
            }
        }
    }

    func run() throws {
        let maintainer = try CacheMaintainer(directory: options.resolved)
        var settings = ImportOptions(
            capacityBytes: try diskCapacity.map { try SizeLimit($0).resolved(of: 0) }, dryRun: dryRun)
        settings.replaceNewer = replaceNewer
        let progress = ProgressLine(enabled: !output.json && isatty(STDERR_FILENO) != 0)
        defer { progress.finish() }
        let report = try maintainer.importSnapshot(from: file, options: settings) { entries in
            progress.update("importing: \(entries) entries")
        }
        progress.finish()
        output.emit(report)
    }
}

extension Import {
    /// Exit status 5: the snapshot was refused (damaged, truncated, foreign or of another
    /// version); an I/O failure on the file is a cache error (3), as for a directory.
    static func exitStatus(for error: any Error) -> Int32 {
        let snapshot = (error as? SnapshotImportError)?.error ?? error as? SnapshotError
        if case .io = snapshot { return ExitStatus.cacheError.rawValue }
        return 5
    }
}
