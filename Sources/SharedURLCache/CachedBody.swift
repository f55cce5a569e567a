import Foundation
import SharedURLCacheStore

/// A body as the origin sends it to the streaming flow: chunks of bytes, read once.
///
/// ```swift
/// let body = OriginBody(response.body.map { Data($0.readableBytesView) })
/// ```
public struct OriginBody: AsyncSequence, Sendable {
    public typealias Element = Data

    private let makeNext: @Sendable () -> () async throws -> Data?
    /// Set when the whole body is already in memory (the buffered API's origin bodies).
    let buffered: Data?

    /// Wraps a sequence of chunks; it is iterated once.
    public init<Base: AsyncSequence & Sendable>(_ base: Base) where Base.Element == Data {
        buffered = nil
        makeNext = {
            var iterator = base.makeAsyncIterator()
            return { try await iterator.next() }
        }
    }

    /// A body already in memory (one chunk).
    public init(_ data: Data) {
        buffered = data
        makeNext = {
            var done = data.isEmpty
            return {
                if done { return nil }
                done = true
                return data
            }
        }
    }

    /// No body (HEAD, 204, 304).
    public static var empty: OriginBody { OriginBody(Data()) }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let nextChunk: () async throws -> Data?
        public mutating func next() async throws -> Data? { try await nextChunk() }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(nextChunk: makeNext()) }
}

/// A response body as the streaming flow answers it: an async sequence of `Data` chunks, read
/// once. Behind it is one of: bytes in memory (small or memory-tier bodies), a reader of the
/// stored body (large hits: at most one 64 KiB chunk in memory), the origin's stream, or the
/// origin's stream teed into the store (a miss being stored as it is read).
///
/// ```swift
/// let answer = try await flow.streamingResponse(for: request) { request, body in try await send(request) }
/// for try await chunk in answer.body { write(chunk) }
/// ```
///
/// A stored body is verified as its last chunk is read: a damaged one throws from that read
/// (`CacheError` `.corrupt`) instead of ending, and the entry is purged. A teed body is stored
/// only once its last chunk was read; stopping early (or dropping the body) stores nothing.
public struct CachedBody: AsyncSequence, Sendable {
    public typealias Element = Data
    /// Chunk size for bodies in memory and in the store.
    static let chunkBytes = 64 << 10

    indirect enum Source: Sendable {
        case data(Data)
        case stored(StoredBody)
        case origin(OriginBody)
        case tee(CachedBody, StoreSink)
    }

    let source: Source

    init(source: Source) { self.source = source }

    /// A body in memory.
    public init(_ data: Data) { source = .data(data) }

    /// The origin's body, passed through (nothing stored).
    public init(origin: OriginBody) {
        source = origin.buffered.map { .data($0) } ?? .origin(origin)
    }

    /// No body.
    public static var empty: CachedBody { CachedBody(Data()) }

    /// The bytes, when the whole body is in memory already.
    var inMemory: Data? {
        if case .data(let data) = source { return data }
        return nil
    }

    /// The length when it is known before reading (bodies in memory and in the store).
    public var knownLength: Int? {
        switch source {
        case .data(let data): data.count
        case .stored(let stored): stored.size
        case .origin: nil
        case .tee(let inner, _): inner.knownLength
        }
    }

    /// Whether what this body stores is settled; see ``StoreSettlement``.
    public var storeSettlement: StoreSettlement {
        if case .tee(_, let sink) = source { return StoreSettlement(completion: sink.completion) }
        return StoreSettlement(completion: nil)
    }

    /// Whether reading the body stores it (a tee), so a body nobody else reads must be drained.
    var stores: Bool {
        if case .tee = source { return true }
        return false
    }

    /// Reads the whole body into memory (the buffered API).
    /// - Throws: what reading throws.
    public func collect() async throws -> Data {
        if case .data(let data) = source { return data }
        var out = Data()
        if let length = knownLength { out.reserveCapacity(length) }
        for try await chunk in self { out.append(chunk) }
        return out
    }

    /// Reads and discards the body, so that a tee stores it.
    func drain() async throws {
        for try await _ in self {}
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        indirect enum State {
            case data(Data, offset: Int)
            case stored(StoredBody, BodyReader?)
            case origin(OriginBody.AsyncIterator)
            case tee(CachedBody.AsyncIterator, StoreSink)
            case finished
        }

        var state: State

        public mutating func next() async throws -> Data? {
            switch state {
            case .finished:
                return nil
            case .data(let data, let offset):
                guard offset < data.endIndex else {
                    state = .finished
                    return nil
                }
                let end = Swift.min(offset + CachedBody.chunkBytes, data.endIndex)
                state = .data(data, offset: end)
                return Data(data[offset..<end]) // indices from 0, as a chunk's reader expects
            case .stored(let stored, let opened):
                state = .finished
                guard let reader = opened ?? stored.take() else { throw CachedBodyError.storedBodyChanged }
                let bytes: [UInt8]
                do {
                    bytes = try reader.read(maxBytes: CachedBody.chunkBytes)
                } catch {
                    stored.failed(error)
                    throw error
                }
                if bytes.isEmpty { return nil }
                state = .stored(stored, reader)
                return Data(bytes)
            case .origin(var iterator):
                state = .finished
                guard let chunk = try await iterator.next() else { return nil }
                state = .origin(iterator)
                return chunk
            case .tee(var inner, let sink):
                state = .finished
                let chunk: Data?
                do {
                    chunk = try await inner.next()
                } catch {
                    sink.abandon() // the source failed: nothing partial is stored
                    throw error
                }
                guard let chunk else {
                    await sink.finish()
                    return nil
                }
                sink.append(chunk)
                state = .tee(inner, sink)
                return chunk
            }
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        switch source {
        case .data(let data): AsyncIterator(state: .data(data, offset: data.startIndex))
        case .stored(let stored): AsyncIterator(state: .stored(stored, nil))
        case .origin(let origin): AsyncIterator(state: .origin(origin.makeAsyncIterator()))
        case .tee(let inner, let sink): AsyncIterator(state: .tee(inner.makeAsyncIterator(), sink))
        }
    }
}

/// Errors of reading a ``CachedBody`` (besides the origin's and the store's own).
public enum CachedBodyError: Error, Sendable, Equatable {
    /// The stored body was read a second time and the entry had been replaced or removed since
    /// it was looked up.
    case storedBodyChanged
}

/// Resolves once what a streamed answer stores is settled: committed after its last chunk was
/// read, or given up (too large, the origin failed, the body was dropped unread). Answers that
/// store nothing are settled at once. Request collapsing waits on it before followers look up.
public struct StoreSettlement: Sendable {
    let completion: StoreCompletion?

    /// Waits until the store is settled.
    public func wait() async {
        await completion?.wait()
    }

    /// Whether the store is settled already (always, for a body that stores nothing: a hit), so
    /// a caller need not wait.
    public var isSettled: Bool { completion?.isDone ?? true }
}

/// A one-shot signal with any number of waiters.
final class StoreCompletion: Sendable {
    private let state = Locked<(done: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func signal() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            if state.done { return [] }
            state.done = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    var isDone: Bool { state.withLock { $0.done } }

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state -> Bool in
                if state.done { return true }
                state.waiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }
}

/// A body in the store, read by a ``BodyReader`` opened at lookup (so the decision and the
/// bytes are of one version). A second reading reopens the entry, and only if it is still that
/// version (a background revalidation re-stores a body the caller is also reading).
final class StoredBody: Sendable {
    let size: Int
    private let first: Locked<BodyReader?>
    private let reopen: @Sendable () -> BodyReader?
    private let onFailure: @Sendable (CacheError) -> Void

    init(size: Int, reader: BodyReader?, reopen: @escaping @Sendable () -> BodyReader?,
         onFailure: @escaping @Sendable (CacheError) -> Void) {
        self.size = size
        first = Locked(reader)
        self.reopen = reopen
        self.onFailure = onFailure
    }

    /// The same body for another reader, which reopens it (only while it is still this version).
    func another() -> StoredBody {
        StoredBody(size: size, reader: nil, reopen: reopen, onFailure: onFailure)
    }

    func take() -> BodyReader? {
        if let reader = first.withLock({ value -> BodyReader? in defer { value = nil }; return value }) { return reader }
        return reopen()
    }

    func failed(_ error: CacheError) { onFailure(error) }
}

/// Where a teed body goes while the caller reads it: a ``BodyWriter`` (streamed to a temp file,
/// committed after the last chunk), or a buffer handed to a closure at the end (the
/// `willCacheResponse` hook needs the whole body; so does a cache without a disk tier). Past the
/// cap, on a write failure, when the source fails or when the body is dropped unread, the
/// writer is aborted and nothing is stored; the caller's stream is not affected.
final class StoreSink: Sendable {
    enum Target: Sendable {
        /// Stream to a writer; `commit` publishes it.
        case disk(@Sendable (consuming BodyWriter, _ bytes: Int, _ small: Data?) -> Void)
        /// Collect, then hand the whole body over.
        case buffer(@Sendable (Data) async -> Void)
    }

    /// Holds the noncopyable writer inside the copyable state `Locked` needs (Locked, an NSLock,
    /// rather than Synchronization.Mutex: the thread sanitizer can follow it, see Locked.swift).
    private final class WriterBox {
        var writer: BodyWriter?
        init(_ writer: consuming BodyWriter?) { self.writer = writer }
    }

    private struct State {
        var box: WriterBox
        var buffer: Data?
        var bytes = 0
        var open = true
    }

    /// Bodies up to this size are also kept in memory while streaming, for the memory tier.
    static let smallBodyBytes = 256 << 10

    let completion = StoreCompletion()
    private let state: Locked<State>
    private let cap: Int
    private let target: Target
    private let refuse: @Sendable (_ bytes: Int, _ reason: String) -> Void

    /// - Parameters:
    ///   - writer: the body writer for a `.disk` target (nil for `.buffer`).
    ///   - cap: the most body bytes to store.
    ///   - refuse: called once when the store is given up, with the bytes seen and why.
    init(writer: consuming sending BodyWriter?, cap: Int, target: Target, refuse: @escaping @Sendable (Int, String) -> Void) {
        // buffer: the whole body for .buffer; a small body's copy for .disk
        state = Locked(State(box: WriterBox(writer), buffer: Data()))
        self.cap = cap
        self.target = target
        self.refuse = refuse
    }

    deinit { abandon() }

    /// Appends a chunk the caller is being given.
    func append(_ chunk: Data) {
        let givenUp = state.withLock { state -> (Int, String)? in
            guard state.open else { return nil }
            state.bytes += chunk.count
            if state.bytes > cap {
                close(&state)
                return (state.bytes, "body exceeds the limit of \(cap) bytes")
            }
            if var writer = state.box.writer.take() {
                do {
                    try writer.append(chunk)
                } catch {
                    close(&state)
                    return (state.bytes, (error as? CacheError)?.detailedDescription() ?? "\(error)")
                }
                state.box.writer = consume writer
                if state.buffer != nil {
                    if state.bytes <= Self.smallBodyBytes { state.buffer!.append(chunk) } else { state.buffer = nil }
                }
            } else {
                state.buffer?.append(chunk)
            }
            return nil
        }
        if let (bytes, reason) = givenUp {
            refuse(bytes, reason)
            completion.signal()
        }
    }

    /// The last chunk was read: store what was collected.
    func finish() async {
        var buffered: Data?
        state.withLock { state in
            guard state.open else { return }
            state.open = false
            switch target {
            case .disk(let commit):
                if let writer = state.box.writer.take() { commit(writer, state.bytes, state.buffer.take()) }
            case .buffer:
                buffered = state.buffer.take()
            }
        }
        if case .buffer(let store) = target, let buffered { await store(buffered) }
        completion.signal()
    }

    /// Stores nothing (the source failed, or the body was dropped before its end).
    func abandon() {
        let wasOpen = state.withLock { state -> Bool in
            guard state.open else { return false }
            close(&state)
            return true
        }
        if wasOpen { completion.signal() }
    }

    private func close(_ state: inout State) {
        state.open = false
        state.box.writer = nil // aborts: the temp file is removed, nothing was published
        state.buffer = nil
    }
}
