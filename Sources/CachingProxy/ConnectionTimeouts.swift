import NIOCore

/// How long a client connection may keep the proxy waiting at each stage before it is closed,
/// as nginx's `keepalive_timeout`, `client_header_timeout`, `client_body_timeout` and
/// `send_timeout` bound them: a client that stalls holds a connection (and, for a body or an
/// answer, the buffers and the origin request behind it) only that long.
struct ConnectionTimeouts: Sendable {
    /// No answer running and none to read: the keep-alive wait for the next request.
    var idle: TimeAmount
    /// From the first byte of a request head to its end.
    var requestHead: TimeAmount
    /// Between two reads of a request body (while the proxy wants more of it).
    var requestBody: TimeAmount
    /// Between two writes of an answer to a client that does not take them.
    var send: TimeAmount

    /// How often a connection looks at its clocks: a quarter of the shortest timeout, so that a
    /// stall is ended within a quarter more than its timeout, at one timer per connection.
    var tick: TimeAmount {
        max(.milliseconds(10), TimeAmount.nanoseconds(min(idle, requestHead, requestBody, send).nanoseconds / 4))
    }
}

/// Notes when the first byte of a request head arrives, ahead of NIO's decoder (which hands on
/// a head only once it is whole), so that ``ProxyHandler`` can end a head that never completes
/// after ``ConnectionTimeouts/requestHead``. One comparison a read.
final class RequestHeadClock: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// When bytes arrived with no request head taken since (nil: none, or the head is done).
    private(set) var firstByte: NIODeadline?

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if firstByte == nil { firstByte = .now() }
        context.fireChannelRead(data)
    }

    /// A request head was taken (or an answer ended): the next bytes start the next head.
    func restart() { firstByte = nil }
}
