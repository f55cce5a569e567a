import Foundation

extension CacheStore {
    /// The host's default cache directory: `$XDG_CACHE_HOME/SharedURLCache`, or
    /// `~/.cache/SharedURLCache`.
    ///
    /// The one definition every part uses (`SharedCache.shared`, `urlcache` with no directory
    /// argument, `urlcache proxy`), so that `urlcache compact` trims the directory the library
    /// fills.
    public static var defaultDirectory: String {
        defaultDirectory(environment: ProcessInfo.processInfo.environment)
    }

    /// The default directory under `environment` (`XDG_CACHE_HOME`, else `HOME`).
    public static func defaultDirectory(environment: [String: String]) -> String {
        if let xdg = environment["XDG_CACHE_HOME"], !xdg.isEmpty {
            return URL(fileURLWithPath: xdg).appendingPathComponent("SharedURLCache").path
        }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSTemporaryDirectory()
        return URL(fileURLWithPath: home).appendingPathComponent(".cache/SharedURLCache").path
    }
}
