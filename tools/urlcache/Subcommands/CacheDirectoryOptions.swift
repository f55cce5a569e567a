import ArgumentParser
import Foundation

/// The cache directory argument shared by every subcommand.
struct CacheDirectoryOptions: ParsableArguments {
    @Argument(help: "The cache directory (default: $XDG_CACHE_HOME/shared-url-cache or ~/.cache/shared-url-cache).")
    var directory: String?

    var resolved: String { directory ?? Self.defaultDirectory }

    static var defaultDirectory: String {
        let environment = ProcessInfo.processInfo.environment
        let base = environment["XDG_CACHE_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (environment["HOME"] ?? NSTemporaryDirectory()) + "/.cache"
        return base + "/shared-url-cache"
    }
}
