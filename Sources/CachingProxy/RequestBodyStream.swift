import AsyncHTTPClient
import NIOCore

/// A client's request body on its way to the origin, read from the client connection only as
/// fast as the origin takes it: at most ``highWatermark`` chunks wait between the two (a chunk is
/// one socket read, at most NIO's read buffer, 64 KiB), so an upload costs a few hundred KiB of
/// memory whatever its size, where buffering it whole cost its size (16 uploads of 32 MiB held
/// over 300 MiB).
///
/// The connection's handler yields each chunk it reads and stops reading when told to; the
/// sequence's consumer (AsyncHTTPClient's upload) asks for more through the delegate, which
/// resumes reading on the connection's event loop.
final class RequestBodyStream: Sendable {
    typealias Producer = NIOThrowingAsyncSequenceProducer<
        ByteBuffer, any Error, NIOAsyncSequenceProducerBackPressureStrategies.HighLowWatermark, Demand
    >

    /// Chunks buffered before the connection stops reading, and the level at which it reads again.
    static let highWatermark = 8
    static let lowWatermark = 2

    /// Tells the connection to read again (on its event loop), or that the consumer is gone.
    struct Demand: NIOAsyncSequenceProducerDelegate {
        let resume: @Sendable () -> Void
        let terminated: @Sendable () -> Void
        func produceMore() { resume() }
        func didTerminate() { terminated() }
    }

    /// The request body sent upstream: the bytes as they are read, with the client's length when
    /// it declared one (`Content-Length`), else chunked.
    let body: HTTPClientRequest.Body
    private let source: Producer.Source

    /// - Parameters:
    ///   - length: the declared `Content-Length`, or nil for a chunked body.
    ///   - resume: called when the consumer wants more after a `yield` said to stop.
    ///   - terminated: called when the consumer stopped reading (the origin request ended or failed).
    init(length: Int?, resume: @escaping @Sendable () -> Void, terminated: @escaping @Sendable () -> Void) {
        let made = Producer.makeSequence(
            backPressureStrategy: .init(lowWatermark: Self.lowWatermark, highWatermark: Self.highWatermark),
            finishOnDeinit: true, delegate: Demand(resume: resume, terminated: terminated))
        source = made.source
        body = .stream(made.sequence, length: length.map { .known(Int64($0)) } ?? .unknown)
    }

    /// Hands a chunk on; false when the connection should stop reading until `resume`.
    func yield(_ chunk: ByteBuffer) -> Bool {
        switch source.yield(contentsOf: CollectionOfOne(chunk)) {
        case .produceMore: return true
        case .stopProducing: return false
        case .dropped: return true // the consumer is gone: read on, the bytes are discarded
        }
    }

    /// The body ended.
    func finish() { source.finish() }

    /// The body cannot be completed (the client went away, or sent more than allowed).
    func fail(_ error: any Error) { source.finish(error) }
}

/// A request body larger than ``ProxyConfiguration/maximumRequestBodyBytes`` (answered 413).
struct RequestBodyTooLarge: Error {}
