import Logging
import NIOCore
import NIOHTTP1
import SharedURLCacheAsyncHTTPClient

/// What every client connection of a ``ProxyServer`` gets: the handlers in their order and the
/// settings they share. The server's child channel initializer calls ``addHandlers(to:)``, and
/// so does the request-path fuzz target (Fuzz/, docs/Reliability.md T12) on an in-memory channel,
/// so both run the same pipeline.
@_spi(Testing) public struct ProxyConnection: Sendable {
    let forwarder: ProxyForwarder
    let accessLog: AccessLog?
    let timeouts: ConnectionTimeouts
    let connectionLimit: ConnectionLimit?
    let cacheStatus: ProxyHandler.CacheStatusFields
    let maximumRequestBodyBytes: Int
    /// The server's count of answers running in tasks.
    let answers: AnswersInFlight

    init(
        configuration: ProxyConfiguration, client: CachingHTTPClient, metrics: ProxyMetrics?, logger: Logger,
        answers: AnswersInFlight
    ) {
        var forwarder = ProxyForwarder(
            client: client, mode: configuration.mode, upstreamTimeout: configuration.upstreamTimeout,
            metrics: metrics, purge: configuration.purge)
        forwarder.fieldRules = UpstreamFieldRules(passing: configuration.passedHeaders)
        forwarder.forwardAllowed = configuration.forwardAllowed
        self.forwarder = forwarder
        var accessLogger = Logger(label: "urlcache.proxy.access")
        accessLogger.logLevel = logger.logLevel
        accessLog = configuration.accessLog ? AccessLog(logger: accessLogger) : nil
        timeouts = ConnectionTimeouts(
            idle: configuration.idleTimeout, requestHead: configuration.requestHeadTimeout,
            requestBody: configuration.requestBodyTimeout, send: configuration.sendTimeout)
        connectionLimit = configuration.maximumConnections.map { ConnectionLimit(maximum: $0) }
        cacheStatus = ProxyHandler.CacheStatusFields(
            name: configuration.cacheStatusName, header: configuration.cacheStatusHeader)
        maximumRequestBodyBytes = configuration.maximumRequestBodyBytes
        self.answers = answers
    }

    /// The connection setup of a server with `configuration` in front of `client`, without
    /// metrics (test seam).
    @_spi(Testing) public init(configuration: ProxyConfiguration, client: CachingHTTPClient) {
        self.init(
            configuration: configuration, client: client, metrics: nil, logger: Logger(label: "urlcache.proxy"),
            answers: AnswersInFlight())
    }

    /// Adds the connection's handlers to `channel`'s pipeline; on the channel's event loop.
    @_spi(Testing) public func addHandlers(to channel: any Channel) throws {
        if let connectionLimit, !connectionLimit.admit(channel) {
            try channel.pipeline.syncOperations.addHandler(OverLimitHandler())
            return
        }
        // NIO's HTTP/1.1 server handlers as `configureHTTPServerPipeline` adds them (decoder,
        // pipelining assistance), with the proxy's own response encoder in place of NIO's
        // (ProxyResponseEncoder: same framing, a head in one buffer) and no outbound header
        // validation: response heads come from AsyncHTTPClient's parser or from the store, which
        // refuses forbidden bytes (HeaderViolation); the only other fields, the cache status
        // fields, are checked when the proxy starts.
        let encoder = ProxyResponseEncoder()
        let headClock = RequestHeadClock()
        try channel.pipeline.syncOperations.addHandlers([
            headClock, encoder, ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .dropBytes)),
            HTTPServerPipelineHandler(),
            ProxyHandler(
                forwarder: forwarder, encoder: encoder, cacheStatus: cacheStatus,
                maximumRequestBodyBytes: maximumRequestBodyBytes, accessLog: accessLog,
                timeouts: timeouts, headClock: headClock, answers: answers),
        ])
    }

    /// How many answers run in tasks now (on every connection set up by this value).
    @_spi(Testing) public var answersInFlight: Int { answers.count }
}
