import ArgumentParser
import Foundation
import SharedURLCacheStore

/// The cache directory argument shared by every subcommand.
struct CacheDirectoryOptions: ParsableArguments {
    @Argument(
        help:
            "The cache directory (default: $XDG_CACHE_HOME/SharedURLCache or ~/.cache/SharedURLCache, as the library's SharedCache.shared)."
    )
    var directory: String?

    var resolved: String { directory ?? CacheStore.defaultDirectory }
}
