import Foundation

/// Reads a body being stored at the origin's pace rather than its caller's, so that the store,
/// which the requests collapsed behind this one wait for, completes or fails however slowly the
/// caller reads (a slow client of a proxy would otherwise hold every other client of the URL).
///
/// A task reads the teed body to its end; the caller takes the chunks from a queue of at most
/// ``queueBytes``. A caller that falls further behind is detached from the store path: the queue
/// takes no more chunks, and once the store has committed, the caller reads the rest from the
/// stored entry (or fails, when the store gave the body up). Memory stays bounded by the queue,
/// never a whole body. Once the body is no longer being stored (past the cap), nothing waits on
/// the read, so the task waits for the caller instead, as a plain tee does.
///
/// A caller that drops the body before falling behind stores nothing, as with a plain tee; once
/// it has fallen behind, dropping it (a client cut off by a send timeout) does not stop the store.
final class TeePump: Sendable {
    /// The most bytes waiting for one caller.
    static let queueBytes = 1 << 20

    private let sink: StoreSink
    private let queue = Queue()
    private let task: Task<Void, Never>

    init(origin: CachedBody, sink: StoreSink) {
        self.sink = sink
        let queue = self.queue
        let tee = CachedBody(source: .tee(origin, sink))
        task = Task {
            var iterator = tee.makeAsyncIterator()
            do {
                while let chunk = try await iterator.next() {
                    guard await queue.offer(chunk, storing: sink.isStoring) else { return }
                }
                queue.end(nil) // after the tee's commit: the caller's end says the store is settled
            } catch {
                queue.end(error)
            }
        }
    }

    deinit {
        guard !queue.isDetached else { return }
        sink.abandon()
        queue.cancel()
        task.cancel()
    }

    /// What the caller gets next.
    func take() async -> Queue.Take { await queue.take() }

    /// The stored body once the store is settled; nil when it did not commit.
    func committedBody() async -> StoredBody? {
        await sink.completion.wait()
        return sink.committedBody
    }

    /// The chunks between the task and the caller.
    final class Queue: Sendable {
        enum Take {
            case chunk(Data)
            /// The body ended (with the origin's error, if it failed).
            case end((any Error)?)
            /// The caller fell behind: the rest is in the store, from this offset.
            case detached(at: Int)
        }

        private enum Offer {
            case queued(CheckedContinuation<Void, Never>?)
            case dropped
            case full
            case stop
        }

        private struct State {
            var chunks: [Data] = []
            var bytes = 0
            /// Every byte ever queued: where a detached caller resumes in the stored body.
            var total = 0
            var detached = false
            var cancelled = false
            var ended = false
            var error: (any Error)?
            /// The caller, waiting for a chunk or the end.
            var reader: CheckedContinuation<Void, Never>?
            /// The task, waiting for room (only while the body is not being stored).
            var writer: CheckedContinuation<Void, Never>?
        }

        private let state = Locked(State())

        var isDetached: Bool { state.withLock { $0.detached } }

        /// Queues a chunk for the caller, detaching a caller that fell behind while the body is
        /// being stored; false when the task may stop (nobody needs the rest).
        func offer(_ chunk: Data, storing: Bool) async -> Bool {
            while true {
                let outcome = state.withLock { state -> Offer in
                    if state.cancelled { return .stop }
                    if state.detached { return storing ? .dropped : .stop }
                    if state.bytes > 0 && state.bytes + chunk.count > TeePump.queueBytes {
                        guard storing else { return .full }
                        state.detached = true
                        return .dropped
                    }
                    state.chunks.append(chunk)
                    state.bytes += chunk.count
                    state.total += chunk.count
                    defer { state.reader = nil }
                    return .queued(state.reader)
                }
                switch outcome {
                case .queued(let reader):
                    reader?.resume()
                    return true
                case .dropped: return true
                case .stop: return false
                case .full:
                    await withCheckedContinuation { continuation in
                        let room = state.withLock { state -> Bool in
                            if state.cancelled || state.bytes + chunk.count <= TeePump.queueBytes { return true }
                            state.writer = continuation
                            return false
                        }
                        if room { continuation.resume() }
                    }
                }
            }
        }

        /// The next chunk, the end, or where to resume in the store; waits while none is ready.
        func take() async -> Take {
            while true {
                let (next, writer) = state.withLock { state -> (Take?, CheckedContinuation<Void, Never>?) in
                    if !state.chunks.isEmpty {
                        let chunk = state.chunks.removeFirst()
                        state.bytes -= chunk.count
                        defer { state.writer = nil }
                        return (.chunk(chunk), state.writer)
                    }
                    if state.detached { return (.detached(at: state.total), nil) }
                    if state.ended { return (.end(state.error), nil) }
                    return (nil, nil)
                }
                writer?.resume()
                if let next { return next }
                await withCheckedContinuation { continuation in
                    let ready = state.withLock { state -> Bool in
                        if !state.chunks.isEmpty || state.detached || state.ended { return true }
                        state.reader = continuation
                        return false
                    }
                    if ready { continuation.resume() }
                }
            }
        }

        func end(_ error: (any Error)?) {
            let reader = state.withLock { state -> CheckedContinuation<Void, Never>? in
                state.ended = true
                state.error = error
                defer { state.reader = nil }
                return state.reader
            }
            reader?.resume()
        }

        /// The caller is gone: a task waiting for room stops.
        func cancel() {
            let writer = state.withLock { state -> CheckedContinuation<Void, Never>? in
                state.cancelled = true
                defer { state.writer = nil }
                return state.writer
            }
            writer?.resume()
        }
    }
}
