import ArgumentParser
import CacheMaintenance

struct Stats: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the directory's counters, index and reader use, and usage per partition.")

    @OptionGroup var options: CacheDirectoryOptions
    @Flag(help: "Skip the per-partition walk over every record (counters only, instant).") var countersOnly = false
    @OptionGroup var output: OutputOptions

    func run() throws {
        output.emit(try CacheMaintainer(directory: options.resolved).statistics(includePartitions: !countersOnly))
    }
}
