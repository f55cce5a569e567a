import SharedURLCacheStore

/// Failures of the maintenance layer itself; the store's own failures stay `CacheError`.
public enum MaintenanceError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A size, age, date, URL or combination of options that cannot be used.
    case invalidArgument(String)
    /// `show` found no entry for the URL.
    case notFound(String)
    /// The operating system refused something outside the store (e.g. `statvfs`).
    case system(String)

    public var description: String {
        switch self {
        case .invalidArgument(let message): message
        case .notFound(let message): message
        case .system(let message): message
        }
    }
}

/// The exit codes of `urlcache`: part of its interface, so scripts and cron can rely on them.
///
/// | code | meaning |
/// |---|---|
/// | 0 | success (also: purge or list matched nothing — the cache is already in the asked state) |
/// | 1 | findings: `verify` found damage (after `--fix`: damage it could not repair); `show` found no entry |
/// | 2 | usage: unknown option, bad size/age/date/URL, conflicting options |
/// | 3 | cache error: the directory is missing, unsafe, not a cache, of another format; I/O failure |
/// | 4 | busy: another compaction holds the directory's lock (cron overlap; use `--wait` to wait) |
public enum ExitStatus: Int32, Sendable, Hashable, CaseIterable {
    case success = 0
    case findings = 1
    case usage = 2
    case cacheError = 3
    case busy = 4

    /// The exit status for an error thrown by a maintenance operation.
    public init(for error: any Error) {
        switch error {
        case let error as CacheError: self = error.code == .busy ? .busy : .cacheError
        case MaintenanceError.invalidArgument: self = .usage
        case MaintenanceError.notFound: self = .findings
        default: self = .cacheError
        }
    }

    /// A one-line message for stderr.
    public static func message(for error: any Error) -> String {
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
