import ArgumentParser
import CacheMaintenance
import Foundation

struct Stats: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the directory's counters, index and reader use, and usage and quota per partition.",
        discussion: """
            With --prometheus the same figures are printed in Prometheus' text format; with \
            --output they replace FILE atomically, for node_exporter's textfile collector:
              */5 * * * * urlcache stats --prometheus --output /var/lib/node_exporter/urlcache.prom
            """)

    @OptionGroup var options: CacheDirectoryOptions
    @Flag(help: "Estimate the disk usage from the counters instead of stat'ing every file (instant).")
    var countersOnly = false
    @Flag(help: "Prometheus text exposition format instead of text or JSON.") var prometheus = false
    @Option(help: "Write the Prometheus text to this file (replaced atomically) instead of printing it.")
    var output: String?
    @OptionGroup var format: OutputOptions

    func validate() throws {
        if prometheus && format.json { throw ValidationError("--prometheus and --json exclude each other") }
        if output != nil && !prometheus { throw ValidationError("--output writes the --prometheus text") }
    }

    func run() throws {
        let report = try CacheMaintainer(directory: options.resolved).statistics(measure: !countersOnly)
        guard prometheus else { return format.emit(report) }
        let text = report.prometheusText()
        guard let output else { return print(text, terminator: "") }
        // A scraper must never read half a file: Foundation's atomic write goes to a temporary
        // file beside it and renames it over the old one.
        do { try Data(text.utf8).write(to: URL(fileURLWithPath: output), options: .atomic) } catch {
            throw MaintenanceError.system("cannot write \(output): \(error)")
        }
    }
}
