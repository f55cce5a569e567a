import Foundation
@testable import SharedURLCache
import SharedURLCacheStore
import Testing
import TestProcess

/// One default directory: the library's is the store's (`CacheStore.defaultDirectory`), which
/// `urlcache` also uses when given no directory (Tests/CacheMaintenanceTests checks the CLI).
@Suite(.blockingWaits) struct DefaultDirectoryTests {
    @Test func theLibrarysDefaultIsTheStoresDefault() {
        #expect(SharedCacheConfiguration.defaultDirectory.path == CacheStore.defaultDirectory)
        #expect(
            CacheStore.defaultDirectory == CacheStore.defaultDirectory(environment: ProcessInfo.processInfo.environment)
        )
    }

    @Test func itIsSharedURLCacheUnderTheXDGCacheHomeOrHomesCache() {
        #expect(
            CacheStore.defaultDirectory(environment: ["XDG_CACHE_HOME": "/x/cache", "HOME": "/home/u"])
                == "/x/cache/SharedURLCache")
        #expect(
            CacheStore.defaultDirectory(environment: ["XDG_CACHE_HOME": "", "HOME": "/home/u"])
                == "/home/u/.cache/SharedURLCache")
        #expect(CacheStore.defaultDirectory(environment: ["HOME": "/home/u"]) == "/home/u/.cache/SharedURLCache")
    }
}
