import NIOCore
import NIOHTTP1

/// Answers a request NIO's HTTP/1.1 parser rejects, then lets the connection close: like NIO's
/// `HTTPServerProtocolErrorHandler`, except that a method token the parser (llhttp) does not
/// know gets 501 Not Implemented (RFC 9110 §9.1: an unrecognised method), not 400: the request
/// may be well formed, and the client should learn that this proxy cannot forward it.
final class ProxyProtocolErrorHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// A response head went out and its end did not: no error response can be written then.
    private var responseInProgress = false

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        guard let parserError = error as? HTTPParserError else {
            context.fireErrorCaught(error)
            return
        }
        // Parser errors are fatal: the decoder closes the channel once this returns, so the
        // answer is written now or not at all.
        if !responseInProgress {
            let status: HTTPResponseStatus = parserError == .invalidMethod ? .notImplemented : .badRequest
            let headers = HTTPHeaders([("Connection", "close"), ("Content-Length", "0")])
            context.write(
                wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))),
                promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
        context.fireErrorCaught(error)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head) where head.status.code < 200: break // interim: the response goes on
        case .head: responseInProgress = true
        case .body: break
        case .end: responseInProgress = false
        }
        context.write(data, promise: promise)
    }
}
