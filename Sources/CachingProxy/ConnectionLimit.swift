import NIOCore
import Synchronization

/// The most client connections served at once (``ProxyConfiguration/maximumConnections``), like
/// nginx's `worker_connections` and Varnish's `max_connections`: past it a new connection is
/// answered `503 Service Unavailable` at once and closed, so a flood of idle or stalled
/// connections meets a bound instead of the process's descriptor limit, where accept(2) itself
/// fails and nobody is answered.
final class ConnectionLimit: Sendable {
    let maximum: Int
    private let open = Atomic<Int>(0)

    init(maximum: Int) { self.maximum = maximum }

    /// Counts `channel` in while it is open, or says no (then it is not counted).
    func admit(_ channel: any Channel) -> Bool {
        let (_, admitted) = open.wrappingAdd(1, ordering: .relaxed)
        guard admitted <= maximum else {
            open.wrappingSubtract(1, ordering: .relaxed)
            return false
        }
        channel.closeFuture.whenComplete { [self] _ in open.wrappingSubtract(1, ordering: .relaxed) }
        return true
    }
}

/// The whole pipeline of a connection past the limit: a 503 written at once, then the
/// connection's output closed. What the client sends meanwhile is read and dropped until it
/// closes or a second has passed (closing with its request unread would reset the connection,
/// and a reset can destroy the 503 before the client reads it).
final class OverLimitHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private static let answer = Array(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nRetry-After: 1\r\nConnection: close\r\n\r\n".utf8)

    private var answered = false

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { answer(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        answer(context: context)
        context.fireChannelActive()
    }

    private func answer(context: ChannelHandlerContext) {
        guard !answered else { return }
        answered = true
        let channel = context.channel
        let buffer = channel.allocator.buffer(bytes: Self.answer)
        context.writeAndFlush(NIOAny(buffer)).whenComplete { _ in
            channel.close(mode: .output, promise: nil)
        }
        channel.eventLoop.scheduleTask(in: .seconds(1)) { channel.close(promise: nil) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {} // dropped

    func errorCaught(context: ChannelHandlerContext, error: any Error) { context.close(promise: nil) }
}
