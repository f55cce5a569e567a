import Foundation
import HTTPCacheSemantics
import HTTPTypes

extension HTTPCachingFlow {
    /// The answer the cache alone gives `request` right now: a fresh stored response (or one the
    /// request accepts stale, `max-stale`), whose body is in memory (the memory tier, or a
    /// stored body small enough that a lookup reads it whole, unless compressed passthrough will
    /// send it as stored), under the protocol cache policy — with `Age`, and as a 304 when the
    /// client's own validators match (RFC 9111 §4.3.2). `nil` when anything else would
    /// happen (a miss, a revalidation, stale-while-revalidate, a large body): then call
    /// ``streamingResponse(for:body:policy:maximumStoredBodyBytes:fetch:)``, which looks up again
    /// and does the rest. Nothing is counted for a `nil`, so that second lookup counts once.
    ///
    /// Synchronous and never waits on the origin: one index read and at most one small body read
    /// on the calling thread. For callers on an event loop (the proxy), whose hits then skip a
    /// hop to the cooperative pool and back.
    public func storedResponse(for request: HTTPRequest) -> CachedHTTPResponse? {
        guard let (hit, age, status) = immediateHit(for: request) else { return nil }
        return Self.cachedResponse(serve(hit, for: request, age: age, status: status))
    }

    /// ``storedResponse(for:)``, with the commonest answer told apart: a memory-tier item sent as
    /// it is stored (its status, its fields with `Age`, its whole body or none for a HEAD), which
    /// a renderer may answer from what it kept with the item (``MemoryItemRendition``). Every
    /// other answer (a 304, a range, compressed passthrough, a body read from the store) comes as
    /// ``storedResponse(for:)`` gives it. The decisions are the same; only the form differs.
    package func storedAnswer(for request: HTTPRequest) -> StoredAnswer? {
        guard let (hit, age, status) = immediateHit(for: request) else { return nil }
        if let slot = hit.memoryItem, case .data(let body) = hit.body,
            case .asStored = answerForm(of: hit, content: hit.body.cachedBody, for: request)
        {
            return .memoryItem(
                MemoryItemAnswer(
                    status: hit.stored.status, storedFields: hit.stored.headerFields, body: body, age: age,
                    isHead: request.method == .head, cacheStatus: status,
                    cacheStatusMember: cacheStatusMember(of: hit, forwarded: nil), slot: slot))
        }
        return .response(Self.cachedResponse(serve(hit, for: request, age: age, status: status)))
    }

    /// The lookup both answers share: a stored response with its body in memory that may be served
    /// now, its `Age` and how it is served (counted as a hit), or nil (nothing counted).
    private func immediateHit(for request: HTTPRequest) -> (HTTPCacheHit, age: Int, status: CacheStatus)? {
        guard request.method == .get || request.method == .head, let url = request.absoluteURLString,
            let hit = engine.httpLookup(
                url: url, requestFields: request.headerFields, policy: configuration.policy,
                // A body that may go out as its stored stream is not read here (it stays `.stored`).
                delivery: passthroughCoding(for: request) != nil ? .streamingCompressed : .streamingLarge,
                counting: .deferred),
            case .data = hit.body
        else { return nil }
        let age: Int
        let status: CacheStatus
        switch ReuseDecision.decide(request: reuseJudged(request), parsed: hit.parsed, now: configuration.now()) {
        case .fresh(let ageSeconds): (age, status) = (ageSeconds, .hit)
        case .staleAllowed(let ageSeconds, _): (age, status) = (ageSeconds, .stale)
        default: return nil
        }
        engine.countHit(fromMemory: hit.fromMemory)
        return (hit, age, status)
    }

    private static func cachedResponse(_ answer: CachedHTTPStreamingResponse) -> CachedHTTPResponse {
        CachedHTTPResponse(
            response: answer.response, body: answer.body.inMemory ?? Data(), cacheStatus: answer.cacheStatus,
            cacheStatusMember: answer.cacheStatusMember)
    }
}
