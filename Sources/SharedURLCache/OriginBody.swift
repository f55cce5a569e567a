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
