import ArgumentParser
import CacheMaintenance

struct Verify: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check the index against the body files both ways; exit 1 on damage.",
        discussion: """
            Finds unreadable records, missing and damaged bodies, stray index keys, counters that \
            do not match, orphan body files and temp files. Without --fix nothing changes. --fix \
            purges damaged entries, removes orphans and temp files older than 10 minutes and \
            recomputes the counters, then checks again; the exit status is 1 only if damage remains. \
            After losing the index, --fix --rebuild restores entries from the record copies in the \
            body files.
            """)

    @OptionGroup var options: CacheDirectoryOptions
    @Flag(help: "Repair: purge damaged entries, remove old orphans, recompute counters.") var fix = false
    @Flag(help: "Read every body and check its checksum (slow).") var checkBodies = false
    @Flag(help: "Restore missing records from body files (after index loss).") var rebuild = false
    @OptionGroup var output: OutputOptions

    func run() throws {
        let summary = try CacheMaintainer(directory: options.resolved).verify(
            fix: fix, checkBodies: checkBodies, rebuild: rebuild)
        output.emit(summary)
        if summary.damageRemaining { throw ExitCode(ExitStatus.findings.rawValue) }
    }
}
