import CachingProxy
import Foundation
import LoopbackOrigin
import SharedURLCache
import Synchronization
import TestProcess

/// A test clock the caching flow reads (RFC 9111 ages without sleeping).
final class TestClock: Sendable {
    private let offset = Mutex<TimeInterval>(0)
    func advance(seconds: TimeInterval) { offset.withLock { $0 += seconds } }
    var now: Date { Date().addingTimeInterval(offset.withLock { $0 }) }
}

/// An origin, a fresh cache directory and an in-process proxy in front of them.
final class ProxyFixture: Sendable {
    let directory: TemporaryDirectory
    let origin: LoopbackOrigin
    let server: ProxyServer
    let clock: TestClock

    var port: Int { server.port }

    private init(directory: TemporaryDirectory, origin: LoopbackOrigin, server: ProxyServer, clock: TestClock) {
        self.directory = directory
        self.origin = origin
        self.server = server
        self.clock = clock
    }

    /// Starts an origin with `handler` and a reverse proxy to it (or a forward proxy).
    static func start(
        forward: Bool = false, directory: TemporaryDirectory = TemporaryDirectory(prefix: "suc-proxy"),
        memoryCapacityBytes: Int = 1 << 20, configure: (inout ProxyConfiguration) -> Void = { _ in },
        _ handler: @escaping @Sendable (LoopbackOrigin.Request, Int) -> LoopbackOrigin.Response
    )
        async throws -> ProxyFixture
    {
        // The origin writes with write(2): a client that went away must not kill the test process.
        signal(SIGPIPE, SIG_IGN)
        let origin = try LoopbackOrigin(handler)
        let clock = TestClock()
        var configuration = ProxyConfiguration(
            mode: forward ? .forward : .reverse(try ProxyConfiguration.Upstream(origin.url)), port: 0)
        configuration.eventLoopThreads = 1
        configuration.forwardAllowed = .loopback // the test origin is on loopback
        configuration.accessLog = false
        // The whole suite shares two cores and one cooperative pool with every other test suite
        // in the run (many of them block threads on child processes): a request can wait minutes
        // for a thread. Generous limits keep that from turning into a 504 or an idle close;
        // tests that want a timeout set their own.
        configuration.upstreamTimeout = .seconds(240)
        configuration.connectTimeout = .seconds(30) // a refused connect still fails at once
        configuration.idleTimeout = .minutes(10)
        configuration.requestHeadTimeout = .minutes(10)
        configuration.requestBodyTimeout = .minutes(10)
        configuration.sendTimeout = .minutes(10)
        configuration.client.lockTimeout = .minutes(4) // collapsing tests hold leaders at a gate
        configuration.client.caching.now = { clock.now }
        // The tests read the nginx-style status (RawResponse.cacheStatus); Cache-Status is on by default.
        configuration.cacheStatusHeader = "X-Cache-Status"
        configure(&configuration)
        // The proxy process's cache settings (its default entry size), smaller capacities.
        let cache = try SharedCache(
            configuration: ProxyCacheSettings(
                directory: directory.root, memoryCapacityBytes: memoryCapacityBytes, diskCapacityBytes: 64 << 20
            ).sharedCacheConfiguration)
        let server = try await ProxyServer.start(configuration: configuration, cache: cache)
        return ProxyFixture(directory: directory, origin: origin, server: server, clock: clock)
    }

    /// A new keep-alive connection to the proxy.
    func connect() async throws -> RawConnection { try await RawConnection.open(port: port) }

    /// One request on a fresh connection.
    func send(_ method: String = "GET", _ target: String, headers: [(String, String)] = [], body: [UInt8]? = nil)
        async throws -> RawResponse
    {
        let connection = try await connect()
        defer { connection.close() }
        return try await connection.exchange(method, target, headers: headers, body: body)
    }

    func stop() async throws {
        try await server.shutdown()
        origin.stop()
    }
}
