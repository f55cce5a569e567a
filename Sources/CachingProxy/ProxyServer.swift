import AsyncHTTPClient
import Logging
import NIOCore
import NIOExtras
import NIOHTTP1
import NIOPosix
import CacheMaintenance
import HTTPCacheSemantics
import HTTPTypes
import Prometheus
import SharedURLCache
import SharedURLCacheAsyncHTTPClient
import Synchronization

/// `urlcache proxy`: an HTTP/1.1 proxy on SwiftNIO whose every request goes through
/// ``CachingHTTPClient`` — the library's caching flow, store and partitions — so services in any
/// language and Swift services on the library share one cache directory.
///
/// ```swift
/// let cache = try SharedCache(memoryCapacity: 64 << 20, diskCapacity: 1 << 30, directory: directory)
/// let server = try await ProxyServer.start(
///     configuration: ProxyConfiguration(mode: .reverse(try .init("http://127.0.0.1:9000")), port: 8080), cache: cache)
/// // …
/// try await server.shutdown()   // stop accepting, finish in-flight requests, close
/// ```
///
/// Lifecycle: ``start(configuration:cache:logger:)`` binds and returns; ``shutdown()`` is
/// graceful (NIOExtras' `ServerQuiescingHelper`: the listening socket closes, idle connections
/// close at once, busy ones after their response), then the origin client and the event loops
/// stop. ``runUntilSignalled(configuration:cache:logger:ready:)`` wraps both for the CLI with
/// SIGTERM and SIGINT.
public final class ProxyServer: Sendable {
    /// Where it listens, what it forwards to, and how it answers.
    public let configuration: ProxyConfiguration
    /// The caching client every request goes through (its ``CachingHTTPClient/cache`` is the
    /// partition the proxy reads and writes).
    public let client: CachingHTTPClient
    /// The port the proxy listens on (the chosen one when the configuration said 0).
    public let port: Int
    /// The port `GET /metrics` is served on, when ``ProxyConfiguration/metricsAddress`` asked for it.
    public let metricsPort: Int?
    private let metricsChannel: (any Channel)?
    private let group: MultiThreadedEventLoopGroup
    private let httpClient: HTTPClient
    /// Released once it has done its work: its deinit completes a promise on the event loops,
    /// which must still be running then.
    private let quiescing: Mutex<ServerQuiescingHelper?>
    private let answers: AnswersInFlight
    private let logger: Logger

    private init(
        configuration: ProxyConfiguration, client: CachingHTTPClient, port: Int, metricsChannel: (any Channel)?,
        group: MultiThreadedEventLoopGroup, httpClient: HTTPClient, quiescing: ServerQuiescingHelper,
        answers: AnswersInFlight, logger: Logger
    ) {
        self.configuration = configuration
        self.client = client
        self.port = port
        self.metricsChannel = metricsChannel
        self.metricsPort = metricsChannel?.localAddress?.port
        self.group = group
        self.httpClient = httpClient
        self.quiescing = Mutex(quiescing)
        self.answers = answers
        self.logger = logger
    }

    /// Binds the listening socket and starts answering.
    /// - Parameters:
    ///   - configuration: address, mode, upstream, cache status header, limits.
    ///   - cache: the shared cache (its directory and partition; the proxy uses
    ///     `configuration.client.partition` when set).
    ///   - logger: the server's logger; the access log goes to a logger labelled
    ///     `urlcache.proxy.access` with the same level.
    /// - Throws: a `CacheError` when the partition cannot be opened, NIO's errors when the
    ///   address cannot be bound.
    public static func start(
        configuration: ProxyConfiguration, cache: SharedCache,
        logger: Logger = Logger(label: "urlcache.proxy")
    ) async throws -> ProxyServer {
        if let name = configuration.cacheStatusHeader {
            precondition(
                HTTPField.Name(name) != nil, "ProxyConfiguration.cacheStatusHeader is not a field name: \(name)")
        }
        if let name = configuration.cacheStatusName {
            precondition(
                CacheStatusMember.isValidCacheName(name),
                "ProxyConfiguration.cacheStatusName is not a cache name: \(name)")
        }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, configuration.eventLoopThreads))
        // A refused connect fails at once (no retry): a stale entry or the gateway error is the
        // answer to a dead upstream, not a wait until the deadline.
        var clientConfiguration = CachingHTTPClient.originConfiguration(
            HTTPClient.Configuration(
                redirectConfiguration: .disallow, // a proxy hands redirects to its client
                timeout: .init(read: configuration.upstreamTimeout),
                // AsyncHTTPClient's default (8 connections per origin) would queue a ninth request
                // behind eight slow ones; the proxy's client connections are the real limit.
                connectionPool: .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 1024),
                decompression: .disabled // bodies go through byte for byte
            ), connectTimeout: configuration.connectTimeout)
        clientConfiguration.httpVersion = .automatic
        let httpClient = HTTPClient(eventLoopGroupProvider: .shared(group), configuration: clientConfiguration)
        // Answers are counted into a registry of the proxy's own when it serves /metrics (a
        // library never bootstraps the process-wide MetricsSystem).
        let registry = configuration.metricsAddress.map { _ in PrometheusCollectorRegistry() }
        let metricsFactory = registry.map { PrometheusMetricsFactory(registry: $0) }
        var clientSettings = configuration.client
        if let metricsFactory { clientSettings.metricsFactory = metricsFactory }
        let client: CachingHTTPClient
        do {
            client = try CachingHTTPClient(cache: cache, httpClient: httpClient, configuration: clientSettings)
        } catch {
            try? await httpClient.shutdown()
            try? await group.shutdownGracefully()
            throw error
        }
        let answers = AnswersInFlight()
        let connection = ProxyConnection(
            configuration: configuration, client: client, metrics: metricsFactory.map { ProxyMetrics(factory: $0) },
            logger: logger, answers: answers)
        let quiescing = ServerQuiescingHelper(group: group)

        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(
                ChannelOptions.Types.SocketOption(level: .socket, name: .init(rawValue: SO_REUSEPORT)),
                value: configuration.reusePort ? 1 : 0
            )
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(quiescing.makeServerChannelHandler(channel: channel))
                }
            }
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(.maxMessagesPerRead, value: 16)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try connection.addHandlers(to: channel) }
            }
        let channel: Channel
        var metricsChannel: (any Channel)?
        do {
            if let registry, let address = configuration.metricsAddress {
                metricsChannel = try await MetricsEndpoint.bind(
                    host: address.host, port: address.port, group: group, registry: registry,
                    directory: try CacheMaintainer(directory: cache.configuration.directory.path),
                    allowed: configuration.metricsFrom)
            }
            channel = try await bootstrap.bind(host: configuration.host, port: configuration.port).get()
        } catch {
            try? await metricsChannel?.close()
            try? await httpClient.shutdown()
            try? await group.shutdownGracefully()
            throw error
        }
        let port = channel.localAddress?.port ?? configuration.port
        let upstream: String
        switch configuration.mode {
        case .reverse(let origin): upstream = "reverse proxy to \(origin)"
        case .forward: upstream = "forward proxy"
        }
        logger.info(
            "listening on \(configuration.host):\(port), \(upstream), cache \(cache.configuration.directory.path) partition '\(client.cache.configuration.partition)'"
        )
        if let tier = configuration.parents {
            let fallback = tier.fallback == .direct ? "direct to the origin" : "fail"
            logger.info(
                "parents \(tier.parents.map(\.description).joined(separator: ", ")); with all down: \(fallback)")
        }
        if let address = configuration.metricsAddress, let metricsPort = metricsChannel?.localAddress?.port {
            logger.info("metrics on http://\(address.host):\(metricsPort)/metrics")
        }
        return ProxyServer(
            configuration: configuration, client: client, port: port, metricsChannel: metricsChannel, group: group,
            httpClient: httpClient, quiescing: quiescing, answers: answers, logger: logger)
    }

    /// Graceful shutdown: stop accepting, let in-flight requests finish (each within the
    /// upstream timeout), close every connection, then stop the origin client and the loops.
    public func shutdown() async throws {
        logger.info("shutting down: no new connections; finishing requests in flight")
        guard let closed = quiesce() else { return } // already shut down
        try await closed.get()
        try? await metricsChannel?.close()
        try await httpClient.shutdown() // fails what still waits on an origin
        await answers.waitUntilNone() // their tasks still write to (or close on) the loops
        try await group.shutdownGracefully()
        logger.info("stopped")
    }

    /// The answers still running (each in a task of its own).
    var answersInFlight: Int { answers.count }

    /// Starts the quiescing and drops the helper (in a scope of its own, so that even a debug
    /// build releases it before the event loops stop).
    private func quiesce() -> EventLoopFuture<Void>? {
        guard let quiescing = quiescing.withLock({ $0.take() }) else { return nil }
        let closed = group.next().makePromise(of: Void.self)
        quiescing.initiateShutdown(promise: closed)
        return closed.futureResult
    }
}
