import ArgumentParser
import CacheMaintenance
import Foundation
import SharedURLCacheStore

/// Subcommands built on SwiftNIO and AsyncHTTPClient, absent from SUC_CORE_ONLY=1 builds.
#if canImport(CachingProxy)
private let networkingSubcommands: [any ParsableCommand.Type] = [Proxy.self, Warm.self]
#else
private let networkingSubcommands: [any ParsableCommand.Type] = []
#endif

/// `urlcache`: the operators' command line for a SharedURLCache directory.
@main
struct URLCacheCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "urlcache",
        abstract: "Operate a SharedURLCache directory shared by several processes.",
        discussion: """
            Every command is safe while services use the directory. --json prints one JSON object \
            (snake_case keys, ISO 8601 dates) on stdout; errors go to stderr.

            Exit codes:
              0  success (a purge or list that matches nothing is success)
              1  verify: damage (after --fix: damage left); show: no entry
              2  usage: bad option, size, age, date or URL; conflicting options
              3  cache error: directory missing, unsafe, not a cache; I/O
              4  busy: another compaction holds the lock (compact --wait waits)
              5  import: the snapshot is damaged, truncated or not a snapshot
            """,
        version: "urlcache \(StoreFormats.release): \(StoreFormats.summary)",
        subcommands: [
            Compact.self, Stats.self, Quota.self, URLOrder.self, Eviction.self, Upgrade.self, Verify.self, List.self,
            Show.self,
            Purge.self,
            Export.self, Import.self,
            Bench.self,
            BenchWorker.self,
            BenchOps.self,
            BenchTrace.self,
            BenchPause.self,
        ]
            + networkingSubcommands
    )

    /// ArgumentParser exits 64 on usage errors; the documented code is 2, and store and
    /// maintenance errors map to 3 and 4 (``ExitStatus``).
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch let error where error is SnapshotImportError || error is SnapshotError {
            FileHandle.standardError.write(Data("urlcache: \(error)\n".utf8))
            Foundation.exit(Import.exitStatus(for: error))
        } catch let error where error is CacheError || error is MaintenanceError {
            FileHandle.standardError.write(Data("urlcache: \(ExitStatus.message(for: error))\n".utf8))
            Foundation.exit(ExitStatus(for: error).rawValue)
        } catch {
            if exitCode(for: error) == .validationFailure {
                FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
                Foundation.exit(ExitStatus.usage.rawValue)
            }
            exit(withError: error)
        }
    }
}
