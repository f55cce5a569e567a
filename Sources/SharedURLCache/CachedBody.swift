import Foundation
import SharedURLCacheStore

/// A response body as the streaming flow answers it: an async sequence of `Data` chunks, read
/// once. Behind it is one of: bytes in memory (small or memory-tier bodies), a reader of the
/// stored body (large hits: at most one 64 KiB chunk in memory), the origin's stream, or the
/// origin's stream teed into the store (a miss being stored as it is read); or a byte range
/// of one of those (a 206, RFC 9110 §14).
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
        /// A tee read at the origin's pace by a task of its own (``TeePump``).
        case pumped(CachedBody, StoreSink)
        case slice(CachedBody, ClosedRange<Int>)
        case encoded(EncodedBody)
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
        case .tee(let inner, _), .pumped(let inner, _): inner.knownLength
        case .slice(_, let range): range.count
        case .encoded(let encoded): encoded.length
        }
    }

    /// Whether what this body stores is settled; see ``StoreSettlement``.
    public var storeSettlement: StoreSettlement {
        if case .tee(_, let sink) = source { return StoreSettlement(completion: sink.completion) }
        if case .pumped(_, let sink) = source { return StoreSettlement(completion: sink.completion) }
        if case .slice(let inner, _) = source { return inner.storeSettlement }
        return StoreSettlement(completion: nil)
    }

    /// Whether reading the body stores it (a tee), so a body nobody else reads must be drained.
    package var stores: Bool {
        if case .tee = source { return true }
        if case .pumped = source { return true }
        if case .slice(let inner, _) = source { return inner.stores }
        return false
    }

    /// The bytes at `range` of this body (offsets from its start; `range` within its length).
    /// A body in memory is sliced at once; a stored body skips to the range's start (one stored
    /// uncompressed is not read before it, a compressed one is inflated through it) and is read
    /// up to the range's end and no further (its end-of-body check is then not made: only a whole
    /// read is checked); a body that stores as it is read (a tee) is still read to its end, so
    /// that it is stored.
    func slice(_ range: ClosedRange<Int>) -> CachedBody {
        if case .data(let data) = source {
            return CachedBody(Data(data[(data.startIndex + range.lowerBound)...(data.startIndex + range.upperBound)]))
        }
        return CachedBody(source: .slice(self, range))
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
            case pumped(TeePump)
            case slice(CachedBody.AsyncIterator, skip: Int, remaining: Int, drains: Bool)
            case encoded(EncodedBody.Iterator)
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
            case .encoded(var iterator):
                state = .finished
                guard let chunk = try iterator.next() else { return nil }
                state = .encoded(iterator)
                return chunk
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
            case .pumped(let pump):
                switch await pump.take() {
                case .chunk(let chunk):
                    return chunk
                case .end(let error):
                    state = .finished
                    if let error { throw error }
                    return nil
                case .detached(let offset):
                    // The caller fell behind the store: the rest comes from the committed entry.
                    state = .finished
                    guard let stored = await pump.committedBody(), let reader = stored.take() else {
                        throw CachedBodyError.storeGivenUp
                    }
                    state = .stored(stored, reader)
                    _ = try skipStored(offset)
                    return try await next()
                }
            case .slice(var inner, var skip, let remaining, let drains):
                state = .finished
                if skip > 0, try inner.skipStored(skip) { skip = 0 }
                while remaining > 0 {
                    guard let chunk = try await inner.next() else { return nil }
                    if skip >= chunk.count {
                        skip -= chunk.count
                        continue
                    }
                    let start = chunk.startIndex + skip
                    let end = start + Swift.min(remaining, chunk.count - skip)
                    state = .slice(inner, skip: 0, remaining: remaining - (end - start), drains: drains)
                    return Data(chunk[start..<end])
                }
                if drains { while try await inner.next() != nil {} }
                return nil
            }
        }

        /// Moves a stored body's reader `count` bytes forward without reading them into chunks
        /// (a body stored uncompressed is not read at all before them), for a range that starts
        /// deep in a large body. `false`, and nothing done, when this is not a stored body.
        mutating func skipStored(_ count: Int) throws -> Bool {
            guard case .stored(let stored, let opened) = state else { return false }
            state = .finished
            guard let reader = opened ?? stored.take() else { throw CachedBodyError.storedBodyChanged }
            do {
                try reader.skip(count)
            } catch {
                stored.failed(error)
                throw error
            }
            state = .stored(stored, reader)
            return true
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        switch source {
        case .data(let data): AsyncIterator(state: .data(data, offset: data.startIndex))
        case .stored(let stored): AsyncIterator(state: .stored(stored, nil))
        case .origin(let origin): AsyncIterator(state: .origin(origin.makeAsyncIterator()))
        case .encoded(let encoded): AsyncIterator(state: .encoded(EncodedBody.Iterator(body: encoded)))
        case .tee(let inner, let sink): AsyncIterator(state: .tee(inner.makeAsyncIterator(), sink))
        case .pumped(let origin, let sink): AsyncIterator(state: .pumped(TeePump(origin: origin, sink: sink)))
        case .slice(let inner, let range):
            AsyncIterator(
                state: .slice(
                    inner.makeAsyncIterator(), skip: range.lowerBound, remaining: range.count, drains: inner.stores))
        }
    }
}

/// Errors of reading a ``CachedBody`` (besides the origin's and the store's own).
public enum CachedBodyError: Error, Sendable, Equatable {
    /// The stored body was read a second time and the entry had been replaced or removed since
    /// it was looked up.
    case storedBodyChanged
    /// The caller fell behind a body being stored, to read the rest from the store, and the
    /// store gave the body up (past a limit, or a write failed): the rest is not there.
    case storeGivenUp
}
