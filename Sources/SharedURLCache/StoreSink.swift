import Foundation
import SharedURLCacheStore

/// Where a teed body goes while the caller reads it: a ``BodyWriter`` (streamed to a temp file,
/// committed after the last chunk), or a buffer handed to a closure at the end (the
/// `willCacheResponse` hook needs the whole body; so does a cache without a disk tier). Past the
/// cap, on a write failure, when the source fails or when the body is dropped unread, the
/// writer is aborted and nothing is stored; the caller's stream is not affected.
final class StoreSink: Sendable {
    enum Target: Sendable {
        /// Stream to a writer; `commit` publishes it and gives the committed body back (nil: not
        /// committed).
        case disk(@Sendable (consuming BodyWriter, _ bytes: Int, _ small: Data?) -> StoredBody?)
        /// Collect, then hand the whole body over; the closure says whether it was stored.
        case buffer(@Sendable (Data) async -> Bool)
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
        /// The body as committed, for a reader that fell behind its store (``TeePump``).
        var committed: StoredBody?
    }

    let completion = StoreCompletion()
    private let state: Locked<State>
    private let cap: Int
    private let target: Target
    private let refuse: @Sendable (_ bytes: Int, _ reason: String) -> Void

    /// - Parameters:
    ///   - writer: the body writer for a `.disk` target (nil for `.buffer`).
    ///   - cap: the most body bytes to store.
    ///   - refuse: called once when the store is given up, with the bytes seen and why.
    init(
        writer: consuming sending BodyWriter?, cap: Int, target: Target,
        refuse: @escaping @Sendable (Int, String) -> Void
    ) {
        // buffer: the whole body for .buffer; a small body's copy for .disk
        state = Locked(State(box: WriterBox(writer), buffer: Data()))
        self.cap = cap
        self.target = target
        self.refuse = refuse
    }

    deinit { abandon() }

    /// Whether the body is still being stored (not given up, not finished).
    var isStoring: Bool { state.withLock { $0.open } }

    /// The stored body once the store has committed it (nil before, or when it did not).
    var committedBody: StoredBody? { state.withLock { $0.committed } }

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
                // A copy for the memory tier while the body is one a lookup would read whole.
                if state.buffer != nil {
                    if state.bytes <= BodyThresholds.wholeBodyBytes {
                        state.buffer!.append(chunk)
                    } else {
                        state.buffer = nil
                    }
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
        var committed = state.withLock { state -> Bool in
            guard state.open else { return false }
            state.open = false
            switch target {
            case .disk(let commit):
                guard let writer = state.box.writer.take() else { return false }
                state.committed = commit(writer, state.bytes, state.buffer.take())
                return state.committed != nil
            case .buffer:
                buffered = state.buffer.take()
                return false
            }
        }
        if case .buffer(let store) = target, let buffered { committed = await store(buffered) }
        completion.signal(committed: committed)
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
