import ArgumentParser
import CacheMaintenance
import Foundation

struct Purge: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Remove the entries matching every given criterion, or all entries.",
        discussion: """
            Criteria combine (AND): --url or --prefix, --since, --partition; or --all alone. \
            Matching nothing is success (exit 0). --dry-run counts without removing.
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
    @Flag(help: "Count what would be removed; remove nothing.") var dryRun = false
    @OptionGroup var output: OutputOptions

    func validate() throws {
        do {
            _ = try PurgeSelection(url: url, urlPrefix: prefix, storedSince: since, partition: partition, all: all)
                .validated()
        } catch {
            throw ValidationError(error.description)
        }
    }

    func run() throws {
        let selection = PurgeSelection(url: url, urlPrefix: prefix, storedSince: since, partition: partition, all: all)
        output.emit(try CacheMaintainer(directory: options.resolved).purge(selection, dryRun: dryRun))
    }
}
