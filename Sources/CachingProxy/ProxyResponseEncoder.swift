import NIOCore
import NIOHTTP1

/// Serialises the proxy's responses (`HTTPServerResponsePart` to bytes), in place of NIO's
/// `HTTPResponseEncoder`, with the same framing and fewer instructions.
///
/// Why it exists: NIO's encoder writes a head with four `ByteBuffer` writes per field, each with
/// its own capacity and exclusivity checks, into a buffer of a fixed 256 bytes that grows by
/// copying, and writes head, body and end as separate writes; on a 1 KiB cached answer that was
/// about a quarter of the proxy's instructions (docs/Proxy.md; Benchmarks/RESULTS.md, "our own response encoder").
/// This one measures the head first, allocates one buffer of the right size (room for the body
/// too when the head's `Content-Length` says it is small), copies the status line and fields in
/// one pass over raw memory, and holds the head back until the body, the end or a flush arrives,
/// so a small answer leaves as one buffer and a large one as head and body in one `writev`.
///
/// The framing is NIO's (`correctlyFrameTransportHeaders` with `automaticallySetFramingHeaders`),
/// field for field, because ``ProxyHandler`` relies on it (RFC 9112 §6):
/// - a response that cannot have a body (1xx, 204, 304, or the answer to `CONNECT`) loses its
///   `Content-Length` and `Transfer-Encoding` fields;
/// - otherwise a response with `Content-Length` loses any `Transfer-Encoding`;
/// - otherwise an HTTP/1.1 response gets `transfer-encoding: chunked` (its body is chunked) and an
///   HTTP/1.0 one keeps its fields and is delimited by the connection's close, which
///   ``ProxyHandler`` asks for (`Connection: close`);
/// - the answer to `HEAD` keeps the fields a `GET` would have had (RFC 9110 §9.3.2) but no body
///   and no chunk terminator; a body written for it fails, as NIO's does.
///
/// NIO's request decoder tells NIO's encoder the method of each request it decoded; this encoder
/// is told by ``ProxyHandler`` instead (``answering(_:)``), which writes every final response
/// head and knows the request it answers. Requests are still parsed by NIO.
final class ProxyResponseEncoder: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = IOData

    /// Bodies up to this size are copied into the head's buffer (one write, one `iovec`);
    /// larger ones follow it as their own buffer (no copy, a `writev` of both).
    static let coalescedBodyLimit = 16 << 10

    /// The method of the request the next final response answers, when ``ProxyHandler`` said.
    private var nextMethod: HTTPMethod?
    /// The stored head prepared for the next final response, which precedes its own fields.
    private var nextPreparedHead: PreparedHeadUse?
    /// The response under way answers `HEAD` or `CONNECT`: no body, no chunk terminator.
    private var suppressesBody = false
    /// The response under way has a chunked body.
    private var isChunked = false
    /// A serialised head, with the body bytes written so far, not yet handed on.
    private var held: ByteBuffer?
    /// The promises of the writes in ``held``.
    private var heldPromise: EventLoopPromise<Void>?
    /// The `\r\n` after each chunk's data.
    private let chunkDataEnd: ByteBuffer = {
        var buffer = ByteBufferAllocator().buffer(capacity: 2)
        buffer.writeStaticString("\r\n")
        return buffer
    }()

    /// Says that the next final response head answers a request with `method` (HEAD and CONNECT
    /// answers carry no body), and when it is a memory item's answer, the stored head prepared
    /// for that item: the head's own fields (the per-request ones) then follow the prepared ones.
    func answering(_ method: HTTPMethod, preparedHead: PreparedHeadUse? = nil) {
        nextMethod = method
        nextPreparedHead = preparedHead
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head):
            writeHead(head, context: context, promise: promise)
        case .body(let part):
            writeBody(part, context: context, promise: promise)
        case .end(let trailers):
            writeEnd(trailers, context: context, promise: promise)
        }
    }

    func flush(context: ChannelHandlerContext) {
        writeHeld(context: context, promise: nil)
        context.flush()
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        // NIO's encoder would have passed the head on already; the channel fails what is unflushed.
        writeHeld(context: context, promise: nil)
        context.close(mode: mode, promise: promise)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        writeHeld(context: context, promise: nil)
    }

    // MARK: Parts

    private func writeHead(_ head: HTTPResponseHead, context: ChannelHandlerContext, promise: EventLoopPromise<Void>?) {
        writeHeld(context: context, promise: nil) // an interim head before this one
        let code = head.status.code
        // A 1xx other than 101 is followed by the final head, which answers the request.
        let isInterim = (100..<200).contains(code) && code != 101
        var respondingToConnect = false
        var prepared: PreparedHeadUse?
        if !isInterim, let method = nextMethod {
            nextMethod = nil
            suppressesBody = method == .HEAD || method == .CONNECT
            respondingToConnect = method == .CONNECT
            prepared = nextPreparedHead
            nextPreparedHead = nil
        }
        let mayHaveBody = !respondingToConnect && head.status.mayHaveResponseBody
        let head = SerialisedResponseHead(head, mayHaveBody: mayHaveBody, prepared: prepared)
        isChunked = !suppressesBody && head.isChunked
        // A body of unknown length, or a large one, goes in writes of its own after the head;
        // otherwise the head waits for the body and the end, in a buffer with room for the body
        // (ProxyHandler writes a whole body in one part or a few).
        let bodyLength = mayHaveBody && !suppressesBody ? head.contentLength ?? .max : 0
        let holds = !isChunked && bodyLength <= Self.coalescedBodyLimit
        var buffer = context.channel.allocator.buffer(capacity: head.byteCount + (holds ? bodyLength : 0))
        head.write(into: &buffer)
        if holds {
            held = buffer
            heldPromise = promise
        } else {
            context.write(wrapOutboundOut(.byteBuffer(buffer)), promise: promise)
        }
    }

    private func writeBody(_ part: IOData, context: ChannelHandlerContext, promise: EventLoopPromise<Void>?) {
        if suppressesBody {
            // RFC 9112 §6.3: no body after a HEAD or CONNECT answer (NIO's encoder fails the write too).
            promise?.fail(NIOHTTPResponseEncoderError.responseBodyNotAllowed)
            return
        }
        let count = part.readableBytes
        if isChunked && count > 0 { // an empty chunk would end the body (RFC 9112 §7.1)
            writeHeld(context: context, promise: nil)
            var sizeLine = context.channel.allocator.buffer(capacity: 18)
            sizeLine.writeString(String(count, radix: 16))
            sizeLine.writeStaticString("\r\n")
            context.write(wrapOutboundOut(.byteBuffer(sizeLine)), promise: nil)
            context.write(wrapOutboundOut(part), promise: nil)
            context.write(wrapOutboundOut(.byteBuffer(chunkDataEnd)), promise: promise)
            return
        }
        if held != nil, case .byteBuffer(var bytes) = part, held!.writableBytes >= count {
            held!.writeBuffer(&bytes)
            hold(promise)
            return
        }
        writeHeld(context: context, promise: nil)
        context.write(wrapOutboundOut(part), promise: promise)
    }

    private func writeEnd(_ trailers: HTTPHeaders?, context: ChannelHandlerContext, promise: EventLoopPromise<Void>?) {
        suppressesBody = false
        if isChunked {
            isChunked = false
            writeHeld(context: context, promise: nil)
            var buffer: ByteBuffer
            if let trailers {
                let serialised = SerialisedFields(trailers)
                buffer = context.channel.allocator.buffer(capacity: 3 + serialised.byteCount)
                buffer.writeStaticString("0\r\n")
                serialised.write(into: &buffer) // with the blank line
            } else {
                buffer = context.channel.allocator.buffer(capacity: 5)
                buffer.writeStaticString("0\r\n\r\n")
            }
            context.write(wrapOutboundOut(.byteBuffer(buffer)), promise: promise)
        } else if held != nil {
            writeHeld(context: context, promise: promise)
        } else if let promise {
            // Nothing to write, but the promise completes in order with the writes before it.
            context.write(wrapOutboundOut(.byteBuffer(context.channel.allocator.buffer(capacity: 0))), promise: promise)
        }
    }

    // MARK: The held head

    private func hold(_ promise: EventLoopPromise<Void>?) {
        guard let promise else { return }
        if let heldPromise {
            promise.futureResult.cascade(to: heldPromise)
        }
        heldPromise = promise
    }

    /// Hands on the held head and body, if any, with `promise` completed after them.
    private func writeHeld(context: ChannelHandlerContext, promise: EventLoopPromise<Void>?) {
        guard let buffer = held else { return }
        held = nil
        hold(promise)
        let promise = heldPromise
        heldPromise = nil
        context.write(wrapOutboundOut(.byteBuffer(buffer)), promise: promise)
    }
}
