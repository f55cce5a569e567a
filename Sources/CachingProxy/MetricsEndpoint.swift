import CacheMaintenance
import NIOCore
import NIOHTTP1
import NIOPosix
import Prometheus

/// `GET /metrics` on a listener of its own (loopback by default), in Prometheus' text format:
/// the counters in `registry` (the caching client's answers and the proxy's own, ``ProxyMetrics``),
/// then the directory's counters and sizes as `urlcache stats --prometheus` prints them (read
/// from the index at each scrape: no walk over the records). Every other request gets 404.
enum MetricsEndpoint {
    /// Text exposition format 0.0.4, what Prometheus and node_exporter read.
    static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// Binds the listener; the returned channel closes with the proxy.
    static func bind(
        host: String, port: Int, group: any EventLoopGroup, registry: PrometheusCollectorRegistry,
        directory: CacheMaintainer, allowed: AddressRanges? = nil
    ) async throws -> any Channel {
        let scrape: @Sendable () -> String = {
            // A directory that cannot be read now still leaves the proxy's own counters to scrape.
            let directoryText = (try? directory.statistics(measure: false).prometheusText()) ?? ""
            return registry.emitToString() + directoryText
        }
        return try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    // Outside the allowed ranges: 403, whatever is asked.
                    let refused = allowed.map { !$0.contains(channel.remoteAddress) } ?? false
                    try channel.pipeline.syncOperations.addHandler(
                        MetricsRequestHandler(scrape: scrape, refused: refused))
                }
            }
            .bind(host: host, port: port).get()
    }
}

/// Answers one scrape per request; the index read runs off the event loop.
private final class MetricsRequestHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let scrape: @Sendable () -> String
    /// The client is not among those allowed (``ProxyConfiguration/metricsFrom``).
    private let refused: Bool
    private var request: HTTPRequestHead?

    init(scrape: @escaping @Sendable () -> String, refused: Bool) {
        self.scrape = scrape
        self.refused = refused
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): request = head
        case .body: break
        case .end:
            guard let head = request else { return }
            request = nil
            if refused { return respond(.forbidden, body: "forbidden\n", to: head, context: context) }
            let path = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? head.uri
            guard (head.method == .GET || head.method == .HEAD) && path == "/metrics" else {
                return respond(.notFound, body: "not found: GET /metrics\n", to: head, context: context)
            }
            let loop = context.eventLoop
            let bound = NIOLoopBound((handler: self, context: context), eventLoop: loop)
            let scrape = scrape
            Task {
                let text = scrape()
                loop.execute { bound.value.handler.respond(.ok, body: text, to: head, context: bound.value.context) }
            }
        }
    }

    private func respond(
        _ status: HTTPResponseStatus, body: String, to request: HTTPRequestHead, context: ChannelHandlerContext
    ) {
        var buffer = context.channel.allocator.buffer(capacity: body.utf8.count)
        buffer.writeString(body)
        var headers = HTTPHeaders([
            ("Content-Type", MetricsEndpoint.contentType), ("Content-Length", String(buffer.readableBytes)),
        ])
        if !request.isKeepAlive { headers.add(name: "Connection", value: "close") }
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: request.version, status: status, headers: headers))),
            promise: nil)
        if request.method != .HEAD { context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil) }
        let written = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !request.isKeepAlive {
            let channel = context.channel
            written.whenComplete { _ in channel.close(promise: nil) }
        }
    }
}
