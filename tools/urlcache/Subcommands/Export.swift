import ArgumentParser
import CacheMaintenance
import Foundation

/// `urlcache export DIR FILE`: a portable snapshot of a directory's entries.
struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write the directory's entries (all, or those matching the filters) to a snapshot file.",
        discussion: """
            The snapshot is versioned and checksummed (every entry and the whole file carry a \
            CRC-32), written as FILE.partial and renamed into place when complete. Entries are \
            read one at a time, bodies in chunks, while services keep using the directory; reads \
            do not count as uses. `urlcache import` stores the entries into another directory.
            """)

    @OptionGroup var options: CacheDirectoryOptions
    @Argument(help: "The snapshot file to write (replaced when it exists).") var file: String
    @Option(help: "Only entries of this partition.") var partition: String?
    @Option(help: "Only entries stored with this tag (Surrogate-Key, Cache-Tag or xkey value).") var tag: String?
    @Option(help: "Only entries whose URL starts with this (normalised as keys are).") var urlPrefix: String?
    @OptionGroup var output: OutputOptions

    func run() throws {
        let maintainer = try CacheMaintainer(directory: options.resolved)
        let progress = ProgressLine(enabled: !output.json && isatty(STDERR_FILENO) != 0)
        let report = try maintainer.export(
            to: file, filter: SnapshotFilter(partition: partition, tag: tag, urlPrefix: urlPrefix)
        ) { entries in progress.update("exporting: \(entries) entries") }
        progress.finish()
        output.emit(report)
    }
}
