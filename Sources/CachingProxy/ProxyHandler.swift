import AsyncHTTPClient
import Foundation
import HTTPCacheSemantics
import NIOCore
import NIOHTTP1
import SharedURLCache

/// One client connection: reads requests (NIO's HTTP/1.1 decoder, with pipelining assistance so
/// pipelined requests are answered in order), answers each through a ``ProxyForwarder`` in a task
/// off the event loop, and writes the answer back (serialised by ``ProxyResponseEncoder``, which it
/// tells the method each answer is for). A slow or failing origin holds only the task
/// of its own request; the event loops never wait. It also answers requests the parser rejects
/// and closes connections left idle: it is the only handler after NIO's, so each request and
/// response part passes through as few handlers as HTTP/1.1 needs.
final class ProxyHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// The response fields that say how the cache answered.
    struct CacheStatusFields: Sendable {
        /// The proxy's name in `Cache-Status` (RFC 9211), or nil for none.
        var name: String?
        /// The name of the nginx-style header (`X-Cache-Status: HIT`), or nil for none.
        var header: String?
    }

    private let forwarder: ProxyForwarder
    /// The connection's response encoder, told which method each response answers.
    private let encoder: ProxyResponseEncoder
    private let cacheStatus: CacheStatusFields
    private let maximumRequestBodyBytes: Int
    private let accessLog: AccessLog?
    /// How long each stage may stall before the connection is closed.
    private let timeouts: ConnectionTimeouts
    private var idleTimeout: TimeAmount { timeouts.idle }
    /// When the request head now arriving began (the handler ahead of NIO's decoder).
    private let headClock: RequestHeadClock
    /// The server's count of answers running in tasks (its shutdown waits for them).
    private let answers: AnswersInFlight

    /// The request being read.
    private var head: HTTPRequestHead?
    private var body: ByteBuffer?
    private var bodyTooLarge = false
    /// The request body going to the origin as it is read (unsafe methods), while it is read.
    private var bodyStream: RequestBodyStream?
    /// The request being read streams its body: its answer started with its head.
    private var streamsBody = false
    private var bodyBytes = 0
    /// The request declared a body too large to take: answered 413 at once, its bytes dropped.
    private var refusedBody = false
    /// Reading paused until the origin takes what was read (the body stream's back-pressure).
    private var readsPaused = false
    private var readPending = false
    /// When the client last gave the proxy a part of the request it was reading.
    private var lastClientRead = NIODeadline.now()
    /// Writes to the client not yet completed, and when one last completed (or the first began).
    private var writesOutstanding = 0
    private var lastWriteProgress = NIODeadline.now()
    /// The request being answered (at most one: HTTPServerPipelineHandler holds back the next).
    private var task: Task<Void, Never>?
    private var answering = false
    /// A response head went out and its end did not (an error can no longer be answered).
    private var responseStarted = false
    /// The answer going out is delimited by closing the connection (an HTTP/1.0 client's answer
    /// of unknown length), so the connection closes after it whatever the request asked.
    private var closesAfterAnswer = false
    /// An answer that closes the connection has ended: nothing more is answered on it (RFC 9112
    /// §9.6), not even bytes after it that the parser rejects.
    private var closing = false
    /// The last `Date` and `Cache-Status` values this connection sent, reused while they apply.
    private var renderedFields = RenderedFields()
    /// When the connection was last busy: opened, or the last answer's bytes were handed to the
    /// kernel.
    private var lastBusy = NIODeadline.now()
    /// Answers ended whose last write has not completed yet (a large body still going out to a
    /// slow reader): the connection is busy until they have.
    private var answersDraining = 0
    /// The next idle check, while the connection is open.
    private var idleCheck: Scheduled<Void>?

    init(
        forwarder: ProxyForwarder, encoder: ProxyResponseEncoder, cacheStatus: CacheStatusFields,
        maximumRequestBodyBytes: Int, accessLog: AccessLog?,
        timeouts: ConnectionTimeouts, headClock: RequestHeadClock, answers: AnswersInFlight
    ) {
        self.forwarder = forwarder
        self.encoder = encoder
        self.cacheStatus = cacheStatus
        self.maximumRequestBodyBytes = maximumRequestBodyBytes
        self.accessLog = accessLog
        self.timeouts = timeouts
        self.headClock = headClock
        self.answers = answers
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { scheduleIdleCheck(in: timeouts.tick, context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        if idleCheck == nil { scheduleIdleCheck(in: timeouts.tick, context: context) }
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        idleCheck?.cancel()
        idleCheck = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head) where head.method == .CONNECT:
            // No tunnels (https through a forward proxy): NIO's decoder hands the rest of the
            // connection over as tunnel bytes, so answer now and close.
            var headers = HTTPHeaders([("Content-Length", "0"), ("Connection", "close")])
            headers.add(name: "Allow", value: "GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS")
            encoder.answering(head.method)
            closing = true
            context.write(
                wrapOutboundOut(
                    .head(HTTPResponseHead(version: head.version, status: .methodNotAllowed, headers: headers))),
                promise: nil)
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
        case .head(let head):
            headClock.restart()
            self.head = head
            body = nil
            bodyTooLarge = false
            refusedBody = false
            streamsBody = false
            bodyBytes = 0
            answering = true
            lastClientRead = .now()
            let declaredLength = head.headers.first(name: "content-length").flatMap { Int($0) }
            if let declaredLength, declaredLength > maximumRequestBodyBytes {
                // Refused before a byte of it is read, and without `100 Continue`: the client
                // learns at once, and the connection closes after the 413 (the body is not read).
                refusedBody = true
                bodyTooLarge = true
                closesAfterAnswer = true
                write(
                    ProxyAnswer.error(.payloadTooLarge), chunks: [], finished: true, for: head,
                    started: ContinuousClock.now, context: context)
                return
            }
            // RFC 9110 §10.1.1: the proxy takes the body itself (the declared length is within
            // the limit), so it answers `100-continue` (as nginx does); never cached.
            if head.headers[canonicalForm: "expect"].contains(where: { $0.lowercased() == "100-continue" }) {
                context.writeAndFlush(
                    wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .continue))),
                    promise: nil)
            }
            guard head.headers.contains(name: "content-length") || head.headers.contains(name: "transfer-encoding")
            else { return }
            if head.method == .GET || head.method == .HEAD || declaredLength == 0 {
                // Kept whole: a GET or HEAD body decides whether the cache is bypassed (an empty
                // one is dropped), and an empty body needs no stream.
                body = context.channel.allocator.buffer(capacity: 0)
            } else {
                startStreaming(head, declaredLength: declaredLength, context: context)
            }
        case .body(var chunk):
            lastClientRead = .now()
            guard !bodyTooLarge else { return }
            bodyBytes += chunk.readableBytes
            if let bodyStream {
                if bodyBytes > maximumRequestBodyBytes {
                    // The answer's origin request fails with this, and it is answered 413.
                    bodyTooLarge = true
                    closesAfterAnswer = true
                    bodyStream.fail(RequestBodyTooLarge())
                    self.bodyStream = nil
                    resumeReading(context: context) // the rest is read and dropped
                } else if !bodyStream.yield(chunk) {
                    readsPaused = true
                }
            } else if bodyBytes > maximumRequestBodyBytes {
                bodyTooLarge = true
                body = nil
            } else if body == nil {
                body = chunk
            } else {
                body!.writeBuffer(&chunk)
            }
        case .end:
            guard let head else { return }
            self.head = nil
            if streamsBody || refusedBody {
                // Answered (or being answered) since its head.
                bodyStream?.finish()
                bodyStream = nil
                return
            }
            answer(head, body: body, context: context)
            body = nil
        }
    }

    /// Starts answering a request whose body streams to the origin as it is read.
    private func startStreaming(_ head: HTTPRequestHead, declaredLength: Int?, context: ChannelHandlerContext) {
        let loop = context.eventLoop
        let bound = NIOLoopBound((handler: self, context: context), eventLoop: loop)
        let resume: @Sendable () -> Void = {
            loop.execute { bound.value.handler.resumeReading(context: bound.value.context) }
        }
        let stream = RequestBodyStream(length: declaredLength, resume: resume, terminated: resume)
        bodyStream = stream
        streamsBody = true
        answer(head, body: nil, streamedBody: stream.body, context: context)
    }

    // MARK: Reading as fast as the origin takes a body

    func read(context: ChannelHandlerContext) {
        if readsPaused {
            readPending = true
        } else {
            context.read()
        }
    }

    private func resumeReading(context: ChannelHandlerContext) {
        guard readsPaused else { return }
        readsPaused = false
        lastClientRead = .now() // the client was not the one waiting
        if readPending {
            readPending = false
            context.read()
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        bodyStream?.fail(ChannelError.ioOnClosedChannel) // the origin request must not wait for more
        bodyStream = nil
        task?.cancel() // the client is gone: AsyncHTTPClient drops the origin request
        task = nil
        idleCheck?.cancel()
        idleCheck = nil
        context.fireChannelInactive()
    }

    // MARK: Idle connections

    // The handler keeps its own idle timer instead of NIO's IdleStateHandler, which tracks every
    // write with a promise and a callback of its own (three a response, a tenth of a cached
    // answer's instructions): a connection is idle when no answer runs and the last one's bytes
    // have left, and one callback a response says when that was.

    private func scheduleIdleCheck(in delay: TimeAmount, context: ChannelHandlerContext) {
        let bound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        idleCheck = context.eventLoop.scheduleTask(in: delay) {
            bound.value.handler.checkIdle(context: bound.value.context)
        }
    }

    /// Closes the connection when a stage has stalled past its timeout (``ConnectionTimeouts``),
    /// else looks again a tick later.
    private func checkIdle(context: ChannelHandlerContext) {
        guard context.channel.isActive else { return }
        let now = NIODeadline.now()
        let stalled: Bool
        if writesOutstanding > 0 && now - lastWriteProgress >= timeouts.send {
            stalled = true // the client stopped taking the answer
        } else if head != nil && !refusedBody && !readsPaused && now - lastClientRead >= timeouts.requestBody {
            stalled = true // the client stopped sending the body it declared
        } else if head == nil && !answering, let first = headClock.firstByte, now - first >= timeouts.requestHead {
            stalled = true // a request head begun and never finished
        } else {
            stalled = !(answering || answersDraining > 0) && now - lastBusy >= idleTimeout
        }
        if stalled {
            context.close(promise: nil)
        } else {
            scheduleIdleCheck(in: timeouts.tick, context: context)
        }
    }

    /// A write to the client whose completion the send timeout waits for.
    private func beginWrite() {
        if writesOutstanding == 0 { lastWriteProgress = .now() }
        writesOutstanding += 1
    }

    private func writeCompleted() {
        writesOutstanding -= 1
        lastWriteProgress = .now()
    }

    /// Answers a request NIO's HTTP/1.1 parser rejects, then closes: 400, except that a method
    /// token the parser (llhttp) does not know gets 501 Not Implemented (RFC 9110 §9.1: the
    /// request may be well formed, and the client should learn that this proxy cannot forward
    /// it). NIO's HTTPServerPipelineHandler holds such an error back until a response under way
    /// has ended; the decoder closes the channel once this returns, so the answer is written now
    /// or not at all. (This replaces NIO's HTTPServerProtocolErrorHandler, which answers 400 to
    /// both, and saves a handler that every request and response part would pass through.)
    func errorCaught(context: ChannelHandlerContext, error: Error) {
        if let parserError = error as? HTTPParserError, !responseStarted, !closing {
            // Once: the pipelining handler may hand on more than one error it held back.
            closing = true
            let status: HTTPResponseStatus = parserError == .invalidMethod ? .notImplemented : .badRequest
            let headers = HTTPHeaders([("Connection", "close"), ("Content-Length", "0")])
            context.write(
                wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))),
                promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
        context.close(promise: nil)
    }

    // MARK: Answering

    private func answer(
        _ head: HTTPRequestHead, body: ByteBuffer?, streamedBody: HTTPClientRequest.Body? = nil,
        context: ChannelHandlerContext
    ) {
        let started = ContinuousClock.now
        let loop = context.eventLoop
        let bound = NIOLoopBound((handler: self, context: context), eventLoop: loop)
        if bodyTooLarge {
            let answer = ProxyAnswer.error(.payloadTooLarge)
            write(answer, chunks: [], finished: true, for: head, started: started, context: context)
            return
        }
        // A fresh hit with its body in memory is answered here, on the event loop: one index read
        // and a small body read. A hop to the cooperative pool and back cost about half of a hit's
        // throughput on two cores (a constant answer written from a task: 7,660 requests/s; from
        // the loop: 14,600).
        if (body?.readableBytes ?? 0) == 0, streamedBody == nil,
            let (answer, bytes) = forwarder.storedAnswer(head, cacheStatusHeader: cacheStatus.header)
        {
            write(consume answer, chunks: [bytes], finished: true, for: head, started: started, context: context)
            return
        }
        let forwarder = self.forwarder
        let client = context.channel.remoteAddress
        let peer = client?.ipAddress
        // On the cooperative pool, not on the event loop (a TaskExecutor over the loop was tried:
        // on this 2-core machine under load it answered ~20% fewer cached requests per second,
        // and it would put the store's fdatasync of a miss on the loop).
        let answers = self.answers
        answers.begin()
        task = Task {
            defer { answers.end() }
            var forwarded = await forwarder.answer(
                head, body: body, streamedBody: streamedBody, clientAddress: client, peer: peer)
            // Gather what is ready (a stored or buffered body: all of it) so the usual answer
            // is one hop to the event loop: head, body and end in one flush.
            var iterator = forwarded.body.makeAsyncIterator()
            var chunks: [ByteBuffer] = []
            var gathered = 0
            var finished = false
            do {
                while gathered < 256 << 10 {
                    guard let chunk = try await iterator.next() else {
                        finished = true
                        break
                    }
                    gathered += chunk.readableBytes
                    chunks.append(chunk)
                }
            } catch {
                // the origin broke off before the head went out
                loop.execute { bound.value.context.close(promise: nil) }
                return
            }
            // A body read whole before its head goes out has settled its store: say `stored`
            // when an entry was committed (RFC 9211 §2.5), never before.
            if finished, forwarded.storeSettlement.isCommitted { forwarded.cacheStatusMember?.stored = true }
            let ready = chunks
            let complete = finished
            let answer = forwarded
            // Nothing is written once the client has gone (the connection closed on a timeout,
            // or by the client): NIO's pipelining handler takes no answer to a request whose
            // end it never received.
            let write: @Sendable () -> Bool = {
                guard bound.value.context.channel.isActive else { return false }
                bound.value.handler.write(
                    answer, chunks: ready, finished: complete, for: head, started: started,
                    context: bound.value.context)
                return true
            }
            let headWritten = loop.inEventLoop ? loop.makeSucceededFuture(write()) : loop.submit(write)
            guard !finished else { return }
            // A large origin stream (past CachingHTTPClient's body cap): one chunk in flight at a time.
            do {
                guard try await headWritten.get() else { return }
                var sent = gathered
                while let chunk = try await iterator.next() {
                    sent += chunk.readableBytes
                    try await loop.flatSubmit { () -> EventLoopFuture<Void> in
                        let handler = bound.value.handler
                        handler.beginWrite()
                        let written = bound.value.context.writeAndFlush(
                            handler.wrapOutboundOut(.body(.byteBuffer(chunk))))
                        written.assumeIsolated().whenComplete { _ in handler.writeCompleted() }
                        return written
                    }.get()
                }
                let total = sent
                try await loop.flatSubmit { () -> EventLoopFuture<Void> in
                    bound.value.handler.end(
                        for: head, status: answer.status, cacheStatus: answer.cacheStatus, bytes: total,
                        started: started, context: bound.value.context)
                }.get()
            } catch {
                loop.execute { bound.value.context.close(promise: nil) }
            }
        }
    }

    /// Writes the response head and the gathered chunks; ends the response when `finished`.
    private func write(
        _ answer: consuming ProxyAnswer, chunks: [ByteBuffer], finished: Bool, for request: HTTPRequestHead,
        started: ContinuousClock.Instant, context: ChannelHandlerContext
    ) {
        let code = Int(answer.status.code)
        let bodyAllowed = request.method != .HEAD && code != 204 && code != 304 && !(100..<200).contains(code)
        let bytes = chunks.reduce(0) { $0 + $1.readableBytes }
        var headers = HTTPHeaders()
        if let hasDate = answer.preparedHead?.prepared.hasDate {
            // A prepared head's Content-Length is its body's (PreparedStoredHead), which is the
            // body here; the answer's fields go after the prepared ones as bytes.
            var lines = AnswerFieldLines()
            addAnswerFields(to: &lines, headHasDate: hasDate, answer: answer, request: request)
            answer.preparedHead!.answerFields = lines.bytes
        } else {
            // The fields are moved out of the answer, not copied: a stored head's array is then
            // not shared, and the fields added below do not copy it (an allocation and a retain
            // per field).
            swap(&headers, &answer.headers)
            if !answer.isStored { headers = ProxyHeaders.downstreamResponse(headers) }
            if finished && bodyAllowed {
                // The whole body is here: frame it by its real length, whatever the head claimed
                // (usually the same length, which is then left as it is).
                let length = String(bytes)
                if headers.first(name: "content-length") != length {
                    headers.replaceOrAdd(name: "Content-Length", value: length)
                }
            } else if bodyAllowed && request.version.minor == 0 && !headers.contains(name: "content-length") {
                // RFC 9112 §6.3: HTTP/1.0 has no chunked coding, so an answer of unknown length
                // ends when the connection closes, even on a keep-alive connection; the client
                // must be told so, or it waits for the next response on a closed connection.
                closesAfterAnswer = true
            }
            addAnswerFields(
                to: &headers, headHasDate: headers.contains(name: "date"), answer: answer, request: request)
        }
        let head = HTTPResponseHead(version: request.version, status: answer.status, headers: headers)
        responseStarted = true
        encoder.answering(request.method, preparedHead: answer.preparedHead.take())
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if bodyAllowed {
            for chunk in chunks where chunk.readableBytes > 0 {
                context.write(wrapOutboundOut(.body(.byteBuffer(chunk))), promise: nil)
            }
        }
        if finished {
            end(
                for: request, status: answer.status, cacheStatus: answer.cacheStatus, bytes: bodyAllowed ? bytes : 0,
                started: started, context: context)
        } else {
            context.flush()
        }
    }

    /// Adds the fields every answer gets after its own: `Date` when the head has none (RFC 9110
    /// §6.6.1: a recipient with a clock appends it to a response forwarded without one), the cache
    /// status fields, and `Connection` when the client's version and request call for it.
    private func addAnswerFields(
        to fields: inout some AnswerFields, headHasDate: Bool, answer: borrowing ProxyAnswer,
        request: HTTPRequestHead
    ) {
        if !headHasDate { fields.add("Date", renderedFields.date()) }
        if let name = cacheStatus.header, let status = answer.cacheStatus {
            fields.replaceOrAdd(name, status.rawValue)
        }
        // RFC 9211 §2: appended after the members of the caches nearer the origin (kept as they
        // came, or as stored with the response).
        if let name = cacheStatus.name, let member = answer.cacheStatusMember {
            fields.add("Cache-Status", renderedFields.cacheStatus(member, cacheName: name))
        }
        if !request.isKeepAlive || closesAfterAnswer {
            fields.replaceOrAdd("Connection", "close")
        } else if request.version.minor == 0 {
            fields.replaceOrAdd("Connection", "keep-alive")
        }
    }

    /// Ends the response, logs it, and closes the connection when the client asked for that.
    @discardableResult
    private func end(
        for request: HTTPRequestHead, status: HTTPResponseStatus, cacheStatus: CacheStatus?, bytes: Int,
        started: ContinuousClock.Instant, context: ChannelHandlerContext
    ) -> EventLoopFuture<Void> {
        answering = false
        responseStarted = false
        task = nil
        headClock.restart()
        // The request's body is still coming (the origin answered early): the connection cannot
        // be reused for another request before it ends, so it closes after this answer.
        if head != nil { closesAfterAnswer = true }
        // Before the end goes out: NIO's pipelining handler hands on a parser error it held back
        // while the end is written.
        let closes = !request.isKeepAlive || closesAfterAnswer
        if closes { closing = true }
        let written = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        answersDraining += 1
        beginWrite()
        written.assumeIsolated().whenComplete { _ in
            self.answersDraining -= 1
            self.lastBusy = .now()
            self.writeCompleted()
        }
        accessLog?.record(
            method: request.method, target: request.uri, status: Int(status.code), cacheStatus: cacheStatus,
            bytes: bytes, duration: ContinuousClock.now - started)
        if closes {
            closesAfterAnswer = false
            let channel = context.channel
            written.whenComplete { _ in channel.close(promise: nil) }
        }
        return written
    }
}
