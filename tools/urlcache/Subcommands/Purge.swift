import ArgumentParser
import CacheMaintenance
import Foundation

struct Purge: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Remove the entries matching every given criterion, or all entries.",
        discussion: """
            Criteria combine (AND): --url or --prefix, --since, --partition; --tag with --partition; \
            or --all alone. --tag finds the entries through the index (the tag's entries only, \
            never a walk of the directory). --soft marks the entries stale instead of removing \
            them: HTTP clients revalidate them, and may serve them within stale-while-revalidate \
            or stale-if-error meanwhile. Matching nothing is success (exit 0). --dry-run counts \
            without removing.
            """)

    @OptionGroup var options: CacheDirectoryOptions
    @Option(help: "Exactly this URL (every method and variant).") var url: String?
    @Option(help: "URLs starting with this prefix.") var prefix: String?
    @Option(
        help: "Entries stored at or after this date: 2025-06-01, 2025-06-01T12:00:00Z, or an age (2h = two hours ago).",
        transform: { try DateArgument.parse($0, now: Date()) })
    var since: Date?
    @Option(help: "Entries of this partition.") var partition: String?
    @Flag(help: "Every entry.") var all = false
    @Option(help: "Entries stored with this tag (a Surrogate-Key, Cache-Tag or xkey value).") var tag: String?
    @Flag(help: "Mark the entries stale instead of removing them.") var soft = false
    @Flag(help: "Count what would be removed; remove nothing.") var dryRun = false
    @OptionGroup var output: OutputOptions

    func validate() throws {
        do {
            _ = try PurgeSelection(
                url: url, urlPrefix: prefix, storedSince: since, partition: partition, all: all, tag: tag, soft: soft
            )
            .validated()
        } catch {
            throw ValidationError(error.description)
        }
    }

    func run() throws {
        let selection = PurgeSelection(
            url: url, urlPrefix: prefix, storedSince: since, partition: partition, all: all, tag: tag, soft: soft)
        output.emit(try CacheMaintainer(directory: options.resolved).purge(selection, dryRun: dryRun))
    }
}
