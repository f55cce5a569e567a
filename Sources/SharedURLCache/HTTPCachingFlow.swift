import CacheEntryFormat
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPCacheSemantics
import HTTPTypes

/// A response as the caching flow answers it.
public struct CachedHTTPResponse: Sendable {
    /// The response head as answered, with `Age` on a stored response (RFC 9111 §5.1).
    public var response: HTTPResponse
    /// The whole body (empty for HEAD, a 304 and the like).
    public var body: Data
    /// How the cache answered (also suitable for an `X-Cache-Status` header).
    public var cacheStatus: CacheStatus
    /// How the cache answered, as its member of the `Cache-Status` field (RFC 9211).
    public var cacheStatusMember: CacheStatusMember
}

/// The whole RFC 9111 dance, transport-neutral: look up, decide, send the conditional request,
/// merge a 304, store what is storable, invalidate on unsafe methods, serve stale when allowed,
/// revalidate in the background for `stale-while-revalidate`.
///
/// ```swift
/// let flow = HTTPCachingFlow(cache: try SharedCache(memoryCapacity: 8 << 20, diskCapacity: 1 << 30))
/// let answer = try await flow.response(for: request, body: nil) { request, body in
///     try await transport.send(request, body: body)   // → (HTTPResponse, Data)
/// }
/// ```
///
/// The policy decisions come from ``HTTPCacheSemantics`` (no I/O there); this type does the I/O.
public final class HTTPCachingFlow: Sendable {
    /// Sends a request to the origin: `(request, body) → (response head, body)`.
    public typealias Fetch = @Sendable (HTTPRequest, Data?) async throws -> (HTTPResponse, Data)

    /// The cache the flow looks up and stores in.
    public let cache: SharedCache
    /// The cache's engine: the flow's lookups and stores.
    var engine: CacheEngine { cache.engine }
    /// Policy, hooks, rules and clock.
    public let configuration: HTTPCachingConfiguration
    /// URLs being revalidated in the background by this process (one at a time per URL).
    private let revalidating = Locked<Set<String>>([])

    /// A flow over `cache`, with the default configuration unless one is given.
    public init(cache: SharedCache, configuration: HTTPCachingConfiguration = .init()) {
        self.cache = cache
        self.configuration = configuration
    }

    /// Answers `request` from the cache and/or the origin.
    /// - Parameters:
    ///   - request: the request (method, scheme, authority, path with query, header fields).
    ///   - body: the request body (unsafe methods).
    ///   - policy: one of the six URLRequest cache policies.
    ///   - fetch: sends a request to the origin.
    /// - Throws: ``HTTPCachingError/notCached(url:)`` for an offline miss; `fetch`'s errors
    ///   when the origin fails and nothing stored may be served.
    public func response(
        for request: HTTPRequest, body: Data? = nil, policy: RequestCachePolicy = .useProtocolCachePolicy,
        fetch: @escaping Fetch
    ) async throws -> CachedHTTPResponse {
        // The one flow, with bodies in memory: the origin's body arrives whole, so it is stored
        // before this returns, and stored bodies are read whole (memory tier included).
        let answer = try await answer(for: request, body: body, policy: policy, mode: .buffered) { request, body in
            let (response, data) = try await fetch(request, body)
            return (response, OriginBody(data))
        }
        return CachedHTTPResponse(
            response: answer.response, body: try await answer.body.collect(), cacheStatus: answer.cacheStatus,
            cacheStatusMember: answer.cacheStatusMember)
    }

    /// The flow both APIs share: every RFC 9111 decision is made here, once.
    func answer(
        for request: HTTPRequest, body: Data?, policy: RequestCachePolicy, mode: BodyMode,
        fetch originFetch: @escaping StreamingFetch
    ) async throws -> CachedHTTPStreamingResponse {
        guard let url = request.absoluteURLString else { throw HTTPCachingError.invalidRequest("no absolute URL") }
        let fetch = datingResponses(of: originFetch)
        // RFC 9111 §4.4: unsafe methods go to the origin and invalidate what they changed.
        guard request.method == .get || request.method == .head else {
            let (response, originBody) = try await fetch(request, body)
            if configuration.invalidatesOnUnsafeMethods {
                for target in CacheInvalidation.invalidatedURLs(
                    method: request.method, requestURL: url, status: response.status,
                    responseFields: response.headerFields)
                {
                    engine.httpInvalidate(url: target.string)
                }
            }
            return CachedHTTPStreamingResponse(
                response: response, body: CachedBody(origin: originBody), cacheStatus: .bypass,
                cacheStatusMember: CacheStatusMember(forward: .method, forwardStatus: response.status.code))
        }
        switch policy {
        case .reloadIgnoringLocalCacheData:
            return try await fetchAndStore(
                request, url: url, mode: mode, fetch: fetch, status: .bypass, forward: .request)
        case .reloadIgnoringLocalAndRemoteCacheData:
            var forced = request
            forced.headerFields[.cacheControl] = "no-cache"
            forced.headerFields[HTTPField.Name.pragmaField] = "no-cache"
            return try await fetchAndStore(
                forced, url: url, mode: mode, fetch: fetch, status: .bypass, forward: .request)
        case .returnCacheDataElseLoad, .returnCacheDataDontLoad:
            if let hit = lookup(request, url: url, mode: mode) {
                let age = hit.parsed.freshness(at: configuration.now())
                return serve(hit, for: request, age: age.currentAgeSeconds, status: age.isFresh ? .hit : .stale)
            }
            if policy == .returnCacheDataDontLoad { throw HTTPCachingError.notCached(url: url) }
            return try await fetchAndStore(
                request, url: url, mode: mode, fetch: fetch, status: .miss, forward: .uriMiss)
        case .reloadRevalidatingCacheData:
            guard let hit = lookup(request, url: url, mode: mode) else {
                return try await fetchAndStore(
                    request, url: url, mode: mode, fetch: fetch, status: .miss, forward: .uriMiss)
            }
            let revalidation = ReuseDecision.Revalidation(
                conditionalHeaders: ConditionalRequest.headers(for: hit.stored), reason: .requestNoCache,
                ageSeconds: 0, staleIfErrorUntil: nil)
            return try await revalidate(request, url: url, hit: hit, revalidation, mode: mode, fetch: fetch)
        case .useProtocolCachePolicy:
            return try await protocolPolicy(request, url: url, mode: mode, fetch: fetch)
        }
    }

    // MARK: RFC 9111 proper

    private func protocolPolicy(
        _ request: HTTPRequest, url: String, mode: BodyMode,
        fetch: @escaping StreamingFetch
    ) async throws -> CachedHTTPStreamingResponse {
        let hit = lookup(request, url: url, mode: mode)
        let decision = ReuseDecision.decide(
            request: reuseJudged(request), parsed: hit?.parsed, now: configuration.now())
        // Every decision but a miss and a 504 is about the stored response: those come with `hit`.
        switch (decision, hit) {
        case (.fresh(let age), let hit?):
            return serve(hit, for: request, age: age, status: .hit)
        case (.staleAllowed(let age, _), let hit?):
            return serve(hit, for: request, age: age, status: .stale)
        case (.staleWhileRevalidate(let age, let conditional), let hit?):
            if configuration.revalidatesInBackground {
                revalidateInBackground(request, url: url, hit: hit, conditional, mode: mode, fetch: fetch)
            }
            return serve(hit, for: request, age: age, status: .updating)
        case (.revalidate(let revalidation), let hit?):
            return try await revalidate(request, url: url, hit: hit, revalidation, mode: mode, fetch: fetch)
        case (.gatewayTimeout, _):
            // RFC 9111 §5.2.1.7: only-if-cached and nothing usable (neither a hit nor forwarded).
            return CachedHTTPStreamingResponse(
                response: HTTPResponse(status: .gatewayTimeout), body: .empty, cacheStatus: .miss,
                cacheStatusMember: CacheStatusMember())
        case (.miss(let reason), _):
            return try await fetchAndStore(
                request, url: url, mode: mode, fetch: fetch, status: .miss, forward: .init(reason))
        case (.fresh, nil), (.staleAllowed, nil), (.staleWhileRevalidate, nil), (.revalidate, nil):
            return try await fetchAndStore(
                request, url: url, mode: mode, fetch: fetch, status: .miss, forward: .uriMiss)
        }
    }

    /// RFC 9111 §4.3: a conditional request; a 304 refreshes the stored head (never the body).
    private func revalidate(
        _ request: HTTPRequest, url: String, hit: HTTPCacheHit, _ revalidation: ReuseDecision.Revalidation,
        mode: BodyMode, fetch: @escaping StreamingFetch
    ) async throws -> CachedHTTPStreamingResponse {
        var conditional = request
        // The origin is asked about the stored response only; the client's own validators are
        // evaluated against whatever is then served (``serve``).
        for name in ClientConditional.evaluatedFieldNames { conditional.headerFields[name] = nil }
        // Range and If-Range too: the cache wants the whole response to store, and cuts the
        // client's range from it itself (a 206 would not be stored, RFC 9111 §3).
        for name in RangeSelection.fieldNames { conditional.headerFields[name] = nil }
        for field in revalidation.conditionalHeaders { conditional.headerFields[field.name] = field.value }
        let forward = CacheStatusMember.Forward(revalidation.reason)
        let requestTime = configuration.now()
        let response: HTTPResponse
        let originBody: OriginBody
        do {
            (response, originBody) = try await fetch(conditional, nil)
        } catch let deferred as OriginRequestDeferred {
            throw deferred // another process asks the origin; not an unreachable origin
        } catch {
            // No answer at all (refused, closed, reset, timed out): no fwd-status.
            switch RevalidationOutcome.originUnreachable(
                stored: hit.stored, staleIfErrorUntil: revalidation.staleIfErrorUntil, now: configuration.now(),
                configuration: configuration.policy)
            {
            case .serveStale(let age):
                return serve(
                    hit, for: request, age: age, status: .stale, forwarded: CacheStatusMember(forward: forward))
            case .gatewayTimeout:
                return CachedHTTPStreamingResponse(
                    response: HTTPResponse(status: .gatewayTimeout), body: .empty, cacheStatus: .miss,
                    cacheStatusMember: CacheStatusMember(forward: forward))
            default: throw error
            }
        }
        let exchange = CacheStatusMember(forward: forward, forwardStatus: response.status.code)
        let responseTime = configuration.now()
        switch RevalidationOutcome.evaluate(
            response: response, stored: hit.stored, staleIfErrorUntil: revalidation.staleIfErrorUntil,
            requestTime: requestTime, responseTime: responseTime, now: responseTime, configuration: configuration.policy
        )
        {
        case .notModified(let updated):
            return refreshed(
                request, url: url, hit: hit, updated: updated, notModified: response.headerFields,
                responseTime: responseTime, exchange: exchange)
        case .notModifiedMismatch:
            return try await fetchAndStore(
                request, url: url, mode: mode, fetch: fetch, status: .expired, forward: forward)
        case .replace:
            return await store(
                request, url: url, response: response, body: originBody, requestTime: requestTime,
                responseTime: responseTime, status: .expired, forward: forward, replacing: true, mode: mode)
        case .serveStale(let age):
            return serve(hit, for: request, age: age, status: .stale, forwarded: exchange)
        case .forwardError:
            // RFC 9111 §4.3.3: a 5xx forwarded is a full response, stored when §3 allows (an
            // explicitly fresh 503 shields the origin); one that is not leaves the stored
            // response in place for stale-if-error later.
            return await store(
                request, url: url, response: response, body: originBody, requestTime: requestTime,
                responseTime: responseTime, status: .expired, forward: forward, replacing: false, mode: mode)
        case .gatewayTimeout:
            return CachedHTTPStreamingResponse(
                response: HTTPResponse(status: .gatewayTimeout), body: .empty, cacheStatus: .miss,
                cacheStatusMember: exchange)
        }
    }

    /// RFC 9111 §4.3.4: the answer a 304 gives, with the stored body under the merged head.
    /// The merged head replaces the stored one only if it passes the storage rules a full
    /// response would (a 304 saying `no-store`, or `private` to a shared cache, removes the
    /// entry instead); the 304's `Set-Cookie` fields are never stored and go to this request's
    /// client alone (``NotModifiedUpdate/requestingClientOnlyFields(of:)``).
    private func refreshed(
        _ request: HTTPRequest, url: String, hit: HTTPCacheHit, updated: StoredResponse, notModified: HTTPFields,
        responseTime: Date, exchange: CacheStatusMember
    ) -> CachedHTTPStreamingResponse {
        var exchange = exchange
        var body: CachedBody?
        let decision = NotModifiedUpdate.storageDecision(
            request: request, updated: updated, configuration: configuration.policy)
        switch decision {
        case .store:
            // The stored body is kept and its head replaced, in one index record (refreshHead).
            body = refreshHead(url: url, request: request, updated: updated, hit: hit)
        case .notStorable(let reason):
            engine.countNotStorable(reason)
            exchange.detail = reason.token
        }
        let refreshed = HTTPCacheHit(
            parsed: ParsedStoredResponse(updated, configuration: configuration.policy), body: hit.body,
            userInfo: hit.userInfo)
        let age = refreshed.parsed.freshness(at: responseTime).currentAgeSeconds
        var answer = serve(refreshed, body: body, for: request, age: age, status: .revalidated, forwarded: exchange)
        // RFC 9111 §3, §4.3.3: what the origin now says may not be stored, so the old head is
        // stale for good. Removed once the answer holds the stored body it serves this client.
        if !decision.isStorable { engine.httpInvalidate(url: url) }
        for field in NotModifiedUpdate.requestingClientOnlyFields(of: notModified) {
            answer.response.headerFields.append(field)
        }
        return answer
    }

    /// RFC 5861 §3: serve now, revalidate once in the background (per URL, in this process).
    private func revalidateInBackground(
        _ request: HTTPRequest, url: String, hit: HTTPCacheHit, _ conditional: HTTPFields,
        mode: BodyMode, fetch: @escaping StreamingFetch
    ) {
        let claimed = revalidating.withLock { $0.insert(url).inserted }
        guard claimed else { return }
        let revalidation = ReuseDecision.Revalidation(
            conditionalHeaders: conditional, reason: .stale, ageSeconds: 0, staleIfErrorUntil: nil)
        var hit = hit
        if case .stored(let stored) = hit.body { hit.body = .stored(stored.another()) } // the caller reads the first
        Task.detached { [self, hit] in
            defer { _ = revalidating.withLock { $0.remove(url) } }
            // Nobody reads this answer: read a body that is being stored, so that it is.
            let answer = try? await revalidate(request, url: url, hit: hit, revalidation, mode: mode, fetch: fetch)
            if let answer, answer.body.stores { try? await answer.body.drain() }
        }
    }

    // MARK: Origin and storage

    /// RFC 9110 §6.6.1: a response received without `Date` gets one, the time it arrived, before
    /// it is stored, merged or forwarded. A 304 is dated too: its `Date` replaces the stored one
    /// in the merge, so the refreshed entry's age starts at the revalidation.
    private func datingResponses(of fetch: @escaping StreamingFetch) -> StreamingFetch {
        { [configuration] request, body in
            var (response, originBody) = try await fetch(request, body)
            if !response.headerFields.contains(.date) {
                response.headerFields[.date] = HTTPDate(configuration.now()).imfFixdate
            }
            return (response, originBody)
        }
    }

    private func fetchAndStore(
        _ request: HTTPRequest, url: String, mode: BodyMode, fetch: StreamingFetch,
        status: CacheStatus, forward: CacheStatusMember.Forward
    ) async throws -> CachedHTTPStreamingResponse {
        let requestTime = configuration.now()
        let (response, originBody) = try await fetch(request, nil)
        return await store(
            request, url: url, response: response, body: originBody, requestTime: requestTime,
            responseTime: configuration.now(), status: status, forward: forward, replacing: false, mode: mode)
    }

    /// Stores what RFC 9111 §3 (and the rules and hook) allow; answers the origin's response.
    /// The body is stored as the caller reads it (see ``storeBody(_:request:url:stored:mode:)``).
    /// Its `Cache-Status` member says why it went `forward`, what the origin answered, and
    /// whether it is stored or, when RFC 9111 §3 forbids it, why not (`detail`, counted).
    private func store(
        _ request: HTTPRequest, url: String, response: HTTPResponse, body: OriginBody, requestTime: Date,
        responseTime: Date, status: CacheStatus, forward: CacheStatusMember.Forward, replacing: Bool,
        mode: BodyMode
    ) async -> CachedHTTPStreamingResponse {
        var member = CacheStatusMember(forward: forward, forwardStatus: response.status.code)
        var answer = CachedHTTPStreamingResponse(
            response: response, body: CachedBody(origin: body), cacheStatus: status,
            cacheStatusMember: member)
        guard request.method == .get else { return answer } // a HEAD response has no body to store
        let rule = configuration.rules.first { $0.matches(request) }
        if rule?.neverStore == true { return answer }
        var candidate = response
        if let ttl = rule?.forcedTTLSeconds {
            candidate.headerFields[.cacheControl] = "max-age=\(max(0, ttl))"
            candidate.headerFields[.expires] = nil
            // RFC 9213 would override it
            for name in configuration.policy.targetedFields { candidate.headerFields[name] = nil }
            candidate.headerFields[HTTPField.Name.pragmaField] = nil
        }
        if !configuration.keyFields.isEmpty {
            candidate.headerFields = Self.varying(candidate.headerFields, on: configuration.keyFields)
        }
        if case .notStorable(let reason) = StorageDecision.evaluate(
            request: request, response: candidate,
            responseTime: responseTime, configuration: configuration.policy)
        {
            if replacing { engine.httpInvalidate(url: url) } // RFC 9111 §4.3.3: the old one is stale for good
            engine.countNotStorable(reason)
            answer.cacheStatusMember.detail = reason.token
            return answer
        }
        let stored = StoredResponse(
            request: request, response: candidate, requestTime: requestTime, responseTime: responseTime)
        let (storing, isStored) = await storeBody(body, request: request, url: url, stored: stored, mode: mode)
        // RFC 9211 §2.5: `stored` only for an entry committed; a streamed body's store is
        // settled after the head went out, so it is left out rather than guessed.
        member.stored = isStored == true
        if isStored != false {
            member.ttlSeconds =
                Freshness(stored: stored, now: responseTime, configuration: configuration.policy).ttlSeconds
        }
        return CachedHTTPStreamingResponse(
            response: response, body: storing, cacheStatus: status, cacheStatusMember: member)
    }

    /// Stores a storable exchange whose body is in memory: `proposal` → `willCacheResponse` hook
    /// → the cache. At once for the buffered API; after the last chunk when a hook or a cache
    /// without a disk tier needs the streamed body whole.
    /// - Returns: whether the cache took it (false: vetoed or refused).
    @discardableResult
    func storeProposal(_ stored: StoredResponse, body data: Data, request: HTTPRequest, url: String) async -> Bool {
        var proposal = ProposedCacheEntry(
            response: HTTPResponse(status: stored.status, headerFields: stored.headerFields), body: data,
            storagePolicy: .allowed, userInfo: [:], url: url)
        if let hook = configuration.willCacheResponse {
            guard let modified = await hook(proposal) else { return false } // vetoed
            proposal = modified
        }
        guard let userInfo = UserInfoCodec.encode(proposal.userInfo.isEmpty ? nil : proposal.userInfo) else {
            return false
        }
        var final = stored
        final.headerFields = HopByHopFields.removing(from: proposal.response.headerFields)
        final.status = proposal.response.status
        return engine.httpStore(
            url: url, requestFields: request.headerFields, stored: final, body: proposal.body,
            policy: proposal.storagePolicy, userInfo: userInfo, now: configuration.now())
    }

    private func lookup(_ request: HTTPRequest, url: String, mode: BodyMode) -> HTTPCacheHit? {
        let delivery: BodyDelivery =
            !mode.streamsHits ? .whole : passthroughCoding(for: request) != nil ? .streamingCompressed : .streamingLarge
        return engine.httpLookup(
            url: url, requestFields: request.headerFields, policy: configuration.policy, delivery: delivery)
    }

    /// The coding a stored stream may be sent in to this request (compressed passthrough), or nil.
    func passthroughCoding(for request: HTTPRequest) -> ContentCodingNegotiation.Coding? {
        guard configuration.compressedPassthrough, request.method == .get, request.headerFields[.range] == nil
        else { return nil }
        return ContentCodingNegotiation.accepted(by: request)
    }

    /// The stored zlib stream to send in the coding the request accepts (compressed
    /// passthrough), when the stored response is an identity 200 whose body is kept compressed in
    /// the store and the stream can be opened.
    private func passthroughBody(_ hit: HTTPCacheHit, content: CachedBody, for request: HTTPRequest) -> EncodedBody? {
        guard let coding = passthroughCoding(for: request), hit.stored.status == .ok,
            !hit.stored.headerFields.contains(.contentEncoding), case .stored(let stored) = content.source,
            let reader = stored.openEncoded?()
        else { return nil }
        return EncodedBody(reader: reader, coding: coding)
    }

    /// The stored fields (with `Age`) of a response sent as its stored stream `body`.
    private static func passthroughFields(_ fields: HTTPFields, body: EncodedBody) -> HTTPFields {
        var fields = fields
        fields[.contentEncoding] = body.coding.rawValue
        fields[.contentLength] = String(body.length)
        fields[.acceptRanges] = nil // ranges would count the encoded bytes; none are served here
        // RFC 9110 §8.8.1: another content coding is another representation; a strong validator
        // must not name both, a weak one may (and If-None-Match compares weakly, so it still
        // revalidates against the stored one).
        if let etag = fields[.eTag], !etag.hasPrefix("W/") { fields[.eTag] = "W/" + etag }
        let vary = fields[values: .vary].flatMap { $0.split(separator: ",") }
        if !vary.contains(where: { $0.trimmingCharacters(in: .whitespaces).lowercased() == "accept-encoding" }) {
            fields.append(HTTPField(name: .vary, value: "Accept-Encoding"))
        }
        return fields
    }

    /// How a stored response answers a request.
    enum AnswerForm {
        /// 304: the client's own validators match (RFC 9111 §4.3.2).
        case notModified
        /// The body as its stored stream (compressed passthrough).
        case encoded(EncodedBody)
        /// 206 with one range of the body (RFC 9110 §14).
        case partial(ClosedRange<Int>, length: Int)
        /// 416: the range starts past the end.
        case unsatisfiable(length: Int)
        /// The stored status and fields (with `Age`), the whole body (none for a HEAD).
        case asStored
    }

    /// The form of the answer `content` (the stored body, or one refreshed by a 304) gives
    /// `request`, decided in RFC 9110 §13.2.2's order: the client's preconditions, then `Range`.
    /// (Opens the stored stream for passthrough, which the answer then reads.)
    func answerForm(of hit: HTTPCacheHit, content: CachedBody, for request: HTTPRequest) -> AnswerForm {
        if ClientConditional.isNotModified(request: request, stored: hit.stored) { return .notModified }
        if let encoded = passthroughBody(hit, content: content, for: request) { return .encoded(encoded) }
        if let length = content.knownLength {
            switch RangeSelection.evaluate(request: request, stored: hit.stored, length: length) {
            case .whole: break
            case .partial(let range): return .partial(range, length: length)
            case .unsatisfiable: return .unsatisfiable(length: length)
            }
        }
        return .asStored
    }

    /// `request` as the reuse decision sees it: without its `Cache-Control` and `Pragma` when
    /// ``HTTPCachingConfiguration/honoursRequestCacheControl`` is false.
    func reuseJudged(_ request: HTTPRequest) -> HTTPRequest {
        guard !configuration.honoursRequestCacheControl,
            request.headerFields.contains(.cacheControl) || request.headerFields.contains(HTTPField.Name.pragmaField)
        else { return request }
        var judged = request
        judged.headerFields[.cacheControl] = nil
        judged.headerFields[HTTPField.Name.pragmaField] = nil
        return judged
    }

    /// `fields` with `Vary` naming `names` too (``HTTPCachingConfiguration/keyFields``): the
    /// missing ones appended in a `Vary` field of their own; nothing for `Vary: *`.
    static func varying(_ fields: HTTPFields, on names: [HTTPField.Name]) -> HTTPFields {
        let vary = VaryFields(responseFields: fields)
        guard !vary.isWildcard else { return fields }
        let named = Set(vary.names.map(\.canonicalName))
        let missing = names.filter { !named.contains($0.canonicalName) }
        guard !missing.isEmpty else { return fields }
        var fields = fields
        fields.append(HTTPField(name: .vary, value: missing.map(\.rawName).joined(separator: ", ")))
        return fields
    }

    /// The stored fields with an answer's `Age` (RFC 9111 §5.1): in place of the first stored
    /// `Age` (the others go), else after the stored fields.
    static func fields(_ stored: HTTPFields, age: Int) -> HTTPFields {
        var fields = stored
        fields[.age] = String(max(0, age))
        return fields
    }

    /// A stored response's `Cache-Status` member: a hit, or `forwarded` (the exchange that led to
    /// serving it), with the remaining freshness as `ttl`.
    func cacheStatusMember(of hit: HTTPCacheHit, forwarded: CacheStatusMember?) -> CacheStatusMember {
        var member = forwarded ?? CacheStatusMember(hit: true)
        member.ttlSeconds = hit.parsed.freshness(at: configuration.now()).ttlSeconds
        return member
    }

    /// A stored response as the answer: its head with `Age` (RFC 9111 §5.1), its body (none for
    /// a HEAD request) or the range of it the client asked for (RFC 9110 §14), and its
    /// `Cache-Status` member (``cacheStatusMember(of:forwarded:)``).
    func serve(
        _ hit: HTTPCacheHit, body: CachedBody? = nil, for request: HTTPRequest, age: Int,
        status: CacheStatus, forwarded: CacheStatusMember? = nil
    ) -> CachedHTTPStreamingResponse {
        let member = cacheStatusMember(of: hit, forwarded: forwarded)
        let fields = Self.fields(hit.stored.headerFields, age: age)
        let content = body ?? hit.body.cachedBody
        switch answerForm(of: hit, content: content, for: request) {
        case .notModified:
            // A refreshed head whose body is copied as it is read (a large stored body after a
            // 304) is stored only if someone reads it: nobody will, so read it here.
            if let body, body.stores { Task.detached { try? await body.drain() } }
            return CachedHTTPStreamingResponse(
                response: HTTPResponse(
                    status: .notModified, headerFields: ClientConditional.notModifiedFields(from: fields)),
                body: .empty, cacheStatus: status, cacheStatusMember: member)
        case .encoded(let encoded):
            return CachedHTTPStreamingResponse(
                response: HTTPResponse(status: .ok, headerFields: Self.passthroughFields(fields, body: encoded)),
                body: CachedBody(source: .encoded(encoded)), cacheStatus: status, cacheStatusMember: member)
        case .partial(let range, let length):
            return CachedHTTPStreamingResponse(
                response: HTTPResponse(
                    status: .partialContent,
                    headerFields: RangeSelection.partialFields(from: fields, range: range, length: length)),
                body: content.slice(range), cacheStatus: status, cacheStatusMember: member)
        case .unsatisfiable(let length):
            if content.stores { Task.detached { try? await content.drain() } } // as for a 304 above
            return CachedHTTPStreamingResponse(
                response: HTTPResponse(
                    status: .rangeNotSatisfiable,
                    headerFields: RangeSelection.unsatisfiableFields(from: fields, length: length)),
                body: .empty, cacheStatus: status, cacheStatusMember: member)
        case .asStored:
            return CachedHTTPStreamingResponse(
                response: HTTPResponse(status: hit.stored.status, headerFields: fields),
                body: request.method == .head ? .empty : content, cacheStatus: status, cacheStatusMember: member)
        }
    }
}

extension HTTPField.Name {
    /// `Pragma` (RFC 9111 §5.4), which swift-http-types does not name.
    static let pragmaField = HTTPField.Name("Pragma")!
}

extension HTTPRequest {
    /// `scheme://authority/path?query`, or nil when scheme or authority is missing.
    var absoluteURLString: String? {
        guard let scheme, let authority, !authority.isEmpty else { return nil }
        return scheme + "://" + authority + (path ?? "/")
    }
}
