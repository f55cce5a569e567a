import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPCacheSemantics
import HTTPTypes

/// A response as the streaming flow answers it: the head at once, the body as it is read.
public struct CachedHTTPStreamingResponse: Sendable {
    /// The response head as answered, with `Age` on a stored response (RFC 9111 §5.1).
    public var response: HTTPResponse
    /// The body, read once; see ``CachedBody``.
    public var body: CachedBody
    /// How the cache answered (also suitable for an `X-Cache-Status` header).
    public var cacheStatus: CacheStatus
    /// How the cache answered, as its member of the `Cache-Status` field (RFC 9211).
    public var cacheStatusMember: CacheStatusMember

    /// - Parameter cacheStatusMember: defaults to what `cacheStatus` says alone.
    public init(
        response: HTTPResponse, body: CachedBody, cacheStatus: CacheStatus, cacheStatusMember: CacheStatusMember? = nil
    ) {
        self.response = response
        self.body = body
        self.cacheStatus = cacheStatus
        self.cacheStatusMember = cacheStatusMember ?? cacheStatus.cacheStatusMember
    }
}

/// How the flow handles bodies for one call.
struct BodyMode: Sendable {
    /// Large stored bodies are streamed from the store instead of read whole.
    var streamsHits: Bool
    /// The most body bytes stored from one origin response (besides `maximumEntrySizeBytes`).
    var maximumStoredBodyBytes: Int
    /// A body being stored on disk is read at the origin's pace, not the caller's (``TeePump``).
    var storesAtOriginPace = false

    /// The buffered API: bodies whole in memory, as before streaming existed.
    static let buffered = BodyMode(streamsHits: false, maximumStoredBodyBytes: .max)
}

extension HTTPCachingFlow {
    /// Sends a request to the origin and answers its head with the body still streaming.
    public typealias StreamingFetch = @Sendable (HTTPRequest, Data?) async throws -> (HTTPResponse, OriginBody)

    /// Answers `request` like ``response(for:body:policy:fetch:)`` — the same flow, the same
    /// RFC 9111 decisions — with bodies that stream both ways, so memory stays bounded whatever
    /// their size:
    /// - a hit whose stored body is large is read from the store chunk by chunk as the caller
    ///   reads ``CachedHTTPStreamingResponse/body`` (small ones come from memory);
    /// - an origin body that may be stored is teed: each chunk goes to the caller as it arrives
    ///   and into a body writer; the entry is committed after the last chunk, so nothing partial
    ///   is ever visible. Past `maximumStoredBodyBytes` (or the cache's `maximumEntrySizeBytes`),
    ///   when the origin fails mid-body or when the caller stops reading, nothing is stored and
    ///   the caller's stream goes on (or fails with the origin's error).
    ///
    /// ```swift
    /// let answer = try await flow.streamingResponse(for: request) { request, body in
    ///     let response = try await transport.send(request, body: body)
    ///     return (response.head, OriginBody(response.body))
    /// }
    /// for try await chunk in answer.body { try await output.write(chunk) }
    /// ```
    ///
    /// With a `willCacheResponse` hook (which sees the whole body) or a cache without a disk
    /// tier, a stored body is also collected in memory up to the cap and handed over at its end.
    /// - Parameters:
    ///   - request: the request (method, scheme, authority, path with query, header fields).
    ///   - body: the request body (unsafe methods).
    ///   - policy: one of the six URLRequest cache policies.
    ///   - maximumStoredBodyBytes: the largest origin body stored (larger ones are only passed on).
    ///   - fetch: sends a request to the origin.
    /// - Throws: as ``response(for:body:policy:fetch:)``. Reading the body throws the origin's
    ///   errors, or `CacheError` (`.corrupt`) when a stored body fails its check at its end
    ///   (the entry is then purged).
    public func streamingResponse(
        for request: HTTPRequest, body: Data? = nil, policy: RequestCachePolicy = .useProtocolCachePolicy,
        maximumStoredBodyBytes: Int = .max,
        fetch: @escaping StreamingFetch
    ) async throws -> CachedHTTPStreamingResponse {
        try await answer(
            for: request, body: body, policy: policy,
            mode: BodyMode(streamsHits: true, maximumStoredBodyBytes: maximumStoredBodyBytes), fetch: fetch)
    }

    /// ``streamingResponse(for:body:policy:maximumStoredBodyBytes:fetch:)`` with no request body
    /// of its own (`fetch` sends any), and the choice of reading a body being stored at the
    /// origin's pace whatever the caller's (``TeePump``): then a slow caller holds neither the
    /// store nor the requests collapsed behind it.
    package func streamingResponse(
        for request: HTTPRequest, policy: RequestCachePolicy, maximumStoredBodyBytes: Int, storesAtOriginPace: Bool,
        fetch: @escaping StreamingFetch
    ) async throws -> CachedHTTPStreamingResponse {
        let mode = BodyMode(
            streamsHits: true, maximumStoredBodyBytes: maximumStoredBodyBytes, storesAtOriginPace: storesAtOriginPace)
        return try await answer(for: request, body: nil, policy: policy, mode: mode, fetch: fetch)
    }

    /// The body of a storable exchange as the caller gets it, stored on the way, and whether it
    /// is stored: true when it was committed before this returns (a body in memory), false when
    /// the cache refused it, nil when that is decided later (a streamed body is committed once
    /// it has been read to its end within the size limits; its ``CachedBody/storeSettlement``
    /// says whether it was).
    func storeBody(
        _ body: OriginBody, request: HTTPRequest, url: String, stored: StoredResponse,
        mode: BodyMode
    ) async -> (CachedBody, stored: Bool?) {
        if let data = body.buffered {
            // Whole already (the buffered API): stored before the answer, exactly as before.
            let accepted = await storeProposal(stored, body: data, request: request, url: url)
            return (CachedBody(data), accepted)
        }
        if configuration.willCacheResponse == nil {
            let userInfo: [UInt8] = [] // no hook: no userInfo
            var final = stored
            final.headerFields = HopByHopFields.removing(from: stored.headerFields) // as storeProposal does
            let (sink, refused) = engine.httpStreamingSink(
                url: url, requestFields: request.headerFields, stored: final, userInfo: userInfo,
                maximumBodyBytes: mode.maximumStoredBodyBytes, now: configuration.now())
            if let sink {
                let origin = CachedBody(origin: body)
                return (CachedBody(source: mode.storesAtOriginPace ? .pumped(origin, sink) : .tee(origin, sink)), nil)
            }
            if refused { return (CachedBody(origin: body), false) }
        }
        // The hook needs the whole body, and so does a cache without a disk tier: collect it
        // (up to the cap) beside the caller's stream, and store it at the end.
        let cap = Swift.min(mode.maximumStoredBodyBytes, cache.configuration.maximumEntrySizeBytes)
        let sink = StoreSink(
            writer: nil, cap: cap,
            target: .buffer { [self] data in await storeProposal(stored, body: data, request: request, url: url) },
            refuse: { [engine] bytes, reason in engine.noteStreamRefusal(url: url, bytes: bytes, reason: reason) })
        return (CachedBody(source: .tee(CachedBody(origin: body), sink)), nil)
    }

    /// RFC 9111 §4.3.4: after a 304 the stored head is replaced and the body kept. The entry
    /// that was validated gets the new head in one index record, its body neither read nor
    /// written (``CacheEngine/httpRefresh(url:requestFields:stored:bodyBytes:memoryBody:userInfo:expecting:now:)``).
    /// Only when it changed meanwhile, or lives in memory only, is the whole response stored
    /// again: a body in memory at once, a body in the store copied into a new entry while it is
    /// read (by the caller, or in the background for a HEAD), so it is never held whole.
    func refreshHead(url: String, request: HTTPRequest, updated: StoredResponse, hit: HTTPCacheHit) -> CachedBody? {
        if let version = hit.version {
            let memoryBody: Data?
            let bodyBytes: Int
            switch hit.body {
            case .data(let data): (memoryBody, bodyBytes) = (data, data.count)
            case .stored(let stored): (memoryBody, bodyBytes) = (nil, stored.size)
            }
            let refreshed = engine.httpRefresh(
                url: url, requestFields: request.headerFields, stored: updated, bodyBytes: bodyBytes,
                memoryBody: memoryBody, userInfo: hit.userInfo, expecting: version, now: configuration.now())
            if refreshed != false { return nil } // refreshed, or the new head may not be stored
        }
        switch hit.body {
        case .data(let data):
            engine.httpStore(
                url: url, requestFields: request.headerFields, stored: updated, body: data,
                policy: .allowed, userInfo: hit.userInfo, now: configuration.now())
            return nil
        case .stored(let stored):
            let (sink, _) = engine.httpStreamingSink(
                url: url, requestFields: request.headerFields, stored: updated, userInfo: hit.userInfo,
                maximumBodyBytes: .max, now: configuration.now())
            guard let sink else { return nil }
            let copy = CachedBody(
                source: .tee(CachedBody(source: .stored(request.method == .head ? stored.another() : stored)), sink))
            guard request.method == .head else { return copy }
            Task.detached { try? await copy.drain() }
            return nil
        }
    }
}

extension CacheEngine {
    /// A response RFC 9111 §3 forbids storing (per reason, in ``SharedCacheStatistics/notStorable``).
    func countNotStorable(_ reason: NotStorableReason) {
        counters.notStorable.withLock { $0[reason.token, default: 0] += 1 }
    }

    /// A body collected for storing was given up (past the cap, or the origin failed).
    func noteStreamRefusal(url: String, bytes: Int, reason: String) {
        counters.refusals.add(1, ordering: .relaxed)
        logger.notice(
            "response not stored", metadata: ["reason": "\(reason) (after \(bytes) body bytes)", "url": "\(url)"])
    }
}
