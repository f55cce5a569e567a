import ArgumentParser
import CacheMaintenance

struct Show: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show every variant stored for one URL: key, partition, variant, sizes, times, version.",
        discussion: "Usage: urlcache show DIR URL (DIR is required here). Exit 1 when nothing is stored for URL.")

    @OptionGroup var options: CacheDirectoryOptions
    @Argument(help: "The absolute http(s) URL.") var url: String
    @Option(help: "Look only in this partition (direct lookup instead of a walk).") var partition: String?
    @OptionGroup var output: OutputOptions

    func run() throws {
        output.emit(try CacheMaintainer(directory: options.resolved).show(url: url, partition: partition))
    }
}
