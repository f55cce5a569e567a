import ArgumentParser
import CacheMaintenance

/// `--json`, shared by every reporting subcommand.
struct OutputOptions: ParsableArguments {
    @Flag(help: "Print one JSON object (stable snake_case keys) instead of aligned text.") var json = false

    func emit(_ report: some TextReport) {
        print(json ? ReportEncoding.json(report) : report.text)
    }
}
