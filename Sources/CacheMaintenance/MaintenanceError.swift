import SharedURLCacheStore

/// Failures of the maintenance layer itself; the store's own failures stay `CacheError`.
package enum MaintenanceError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A size, age, date, URL or combination of options that cannot be used.
    case invalidArgument(String)
    /// `show` found no entry for the URL.
    case notFound(String)
    /// The operating system refused something outside the store (e.g. `statvfs`).
    case system(String)

    package var description: String {
        switch self {
        case .invalidArgument(let message): message
        case .notFound(let message): message
        case .system(let message): message
        }
    }
}
