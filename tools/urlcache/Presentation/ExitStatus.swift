import CacheMaintenance
import SharedURLCacheStore

/// The exit codes of `urlcache`: part of its interface, so scripts and cron can rely on them.
///
/// | code | meaning |
/// |---|---|
/// | 0 | success (also: purge or list matched nothing — the cache is already in the asked state) |
/// | 1 | findings: `verify` found damage (after `--fix`: damage it could not repair); `show` found no entry |
/// | 2 | usage: unknown option, bad size/age/date/URL, conflicting options |
/// | 3 | cache error: the directory is missing, unsafe, not a cache, of another format; I/O failure |
/// | 4 | busy: another compaction holds the directory's lock (cron overlap; use `--wait` to wait); `upgrade`: a process of an earlier release has the directory open |
enum ExitStatus: Int32, Sendable, Hashable, CaseIterable {
    case success = 0
    case findings = 1
    case usage = 2
    case cacheError = 3
    case busy = 4

    /// The exit status for an error thrown by a maintenance operation.
    init(for error: any Error) {
        switch error {
        case let error as CacheError: self = error.code == .busy ? .busy : .cacheError
        case MaintenanceError.invalidArgument: self = .usage
        case MaintenanceError.notFound: self = .findings
        default: self = .cacheError
        }
    }

    /// A one-line message for stderr.
    static func message(for error: any Error) -> String {
        switch error {
        case let error as CacheError:
            var text = "\(error.code): \(error.message)"
            if let cause = error.cause, cause.errno != 0 || cause.libraryCode != 0 {
                text += " (\(cause.operation): errno \(cause.errno), rc \(cause.libraryCode))"
            }
            return text
        default: return "\(error)"
        }
    }
}
