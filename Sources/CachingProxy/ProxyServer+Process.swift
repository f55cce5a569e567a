import Dispatch
import Foundation
import Logging
import SharedURLCache
import SharedURLCacheStore
import Synchronization

/// The cache a proxy process opens (the CLI's options).
public struct ProxyCacheSettings: Sendable {
    /// The shared cache directory (created when missing).
    public var directory: String
    /// This proxy process's memory tier, in bytes; 0 keeps nothing in memory.
    public var memoryCapacityBytes: Int
    /// The directory's capacity, in bytes (records + body files): a full cache evicts its least
    /// recently used entries in each store's own commit.
    public var diskCapacityBytes: Int
    /// The largest entry stored (body + head + userInfo); by default whatever the store itself
    /// takes (``storeLimitBytes``).
    public var maximumEntrySizeBytes: Int

    /// The largest entry the store takes: a 64 MiB body (`CacheStoreConfiguration`'s limits)
    /// with its head. A proxy stores what its origin serves up to that, so that a large download
    /// is fetched once, not every time (the library's `SharedCacheConfiguration` default, 8 MiB,
    /// suits an in-process cache beside an app's memory).
    public static var storeLimitBytes: Int {
        let store = CacheStoreConfiguration()
        return store.maximumBodyBytes + store.maximumHeadBytes + store.maximumUserInfoBytes
    }

    /// Settings for `directory`: 64 MiB in memory and 1 GiB on disk unless given.
    public init(
        directory: String, memoryCapacityBytes: Int = 64 << 20, diskCapacityBytes: Int = 1 << 30,
        maximumEntrySizeBytes: Int = ProxyCacheSettings.storeLimitBytes
    ) {
        self.directory = directory
        self.memoryCapacityBytes = memoryCapacityBytes
        self.diskCapacityBytes = diskCapacityBytes
        self.maximumEntrySizeBytes = maximumEntrySizeBytes
    }

    /// The cache's configuration (the library's logger; the process sets its own).
    public var sharedCacheConfiguration: SharedCacheConfiguration {
        SharedCacheConfiguration(
            memoryCapacity: memoryCapacityBytes, diskCapacity: diskCapacityBytes,
            directory: URL(fileURLWithPath: directory), maximumEntrySizeBytes: maximumEntrySizeBytes)
    }
}

/// Process-level concerns of `urlcache proxy`: logging to stderr, the cache directory, signals.
extension ProxyServer {
    /// The whole `urlcache proxy` process: logs to stderr through swift-log at `logLevel`
    /// (`trace` … `critical`; access lines are `info`), opens the cache, serves until SIGTERM or
    /// SIGINT, shuts down gracefully. Blocks the calling thread.
    /// - Throws: `CacheError` (directory), NIO's bind errors, ``ProxyConfigurationError``.
    public static func runUntilSignalled(
        configuration: ProxyConfiguration, cache settings: ProxyCacheSettings,
        logLevel: String, ready: @Sendable (ProxyServer) -> Void
    ) throws {
        let level = Logger.Level(rawValue: logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        var logger = Logger(label: "urlcache.proxy")
        logger.logLevel = level
        try FileManager.default.createDirectory(atPath: settings.directory, withIntermediateDirectories: true)
        var cacheConfiguration = settings.sharedCacheConfiguration
        cacheConfiguration.logger = logger
        let cache = try SharedCache(configuration: cacheConfiguration)
        try runUntilSignalled(configuration: configuration, cache: cache, logger: logger, ready: ready)
    }

    /// Runs a proxy until SIGTERM or SIGINT, then shuts it down gracefully (see ``shutdown()``).
    /// Blocks the calling thread (the CLI's main thread; never call it from a task).
    ///
    /// - Parameters:
    ///   - configuration: the proxy's configuration.
    ///   - cache: the shared cache.
    ///   - logger: the server's logger.
    ///   - ready: called once the socket is bound (the CLI prints the address).
    /// - Throws: what ``start(configuration:cache:logger:)`` or ``shutdown()`` throw.
    public static func runUntilSignalled(
        configuration: ProxyConfiguration, cache: SharedCache, logger: Logger,
        ready: @Sendable (ProxyServer) -> Void
    ) throws {
        // The default action would kill the process mid-response; a dispatch source sees them instead.
        let signalled = DispatchSemaphore(value: 0)
        let sources = [SIGTERM, SIGINT].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                logger.info("received \(number == SIGTERM ? "SIGTERM" : "SIGINT")")
                signalled.signal()
            }
            source.resume()
            return source
        }
        defer { for source in sources { source.cancel() } }

        let server = try blocking {
            try await ProxyServer.start(configuration: configuration, cache: cache, logger: logger)
        }
        ready(server)
        signalled.wait()
        // Graceful, within a bound: an answer hung on the origin, or on a damaged directory,
        // must not keep the process from exiting (the supervisor's stop would end in SIGKILL).
        let grace = configuration.shutdownGracePeriod
        let stopped = DispatchSemaphore(value: 0)
        let outcome = Mutex<Result<Void, any Error>?>(nil)
        Task {
            let result: Result<Void, any Error>
            do { result = .success(try await server.shutdown()) } catch { result = .failure(error) }
            outcome.withLock { $0 = result }
            stopped.signal()
        }
        let seconds = Double(grace.nanoseconds) / 1e9
        if stopped.wait(timeout: .now() + seconds) == .timedOut {
            logger.warning(
                "shutdown grace period (\(Int(seconds)) s) over; exiting with \(server.answersInFlight) answers unfinished"
            )
            // The cache needs no cleanup: every store is committed or not (docs/Design.md), and
            // the event loops may still be busy with the hung answers, so nothing waits for them.
            exit(0)
        }
        try outcome.withLock { $0! }.get()
    }

    /// Runs `operation` in a task and waits for it on this (non-cooperative) thread.
    private static func blocking<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) throws -> T {
        let result = Mutex<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let outcome: Result<T, any Error>
            do { outcome = .success(try await operation()) } catch { outcome = .failure(error) }
            result.withLock { $0 = outcome }
            done.signal()
        }
        done.wait()
        return try result.withLock { $0! }.get()
    }
}
