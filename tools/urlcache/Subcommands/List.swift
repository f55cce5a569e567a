import ArgumentParser
import CacheMaintenance

struct List: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List entries: last use, size, partition, variant, method and URL (raw keys in hex).")

    @OptionGroup var options: CacheDirectoryOptions
    @Option(help: "Only URLs starting with this prefix (normalised like keys: https://api.example.com/v1/).")
    var prefix: String?
    @Option(help: "Only this partition.") var partition: String?
    @Option(help: "Stop after this many entries.") var limit: Int?
    @OptionGroup var output: OutputOptions

    func run() throws {
        let filter = ListingFilter(urlPrefix: prefix, partition: partition, limit: limit)
        output.emit(try CacheMaintainer(directory: options.resolved).list(filter))
    }
}
