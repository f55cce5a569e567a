import AsyncHTTPClient
import CoreMetrics
import Foundation
import HTTPCacheSemantics
import HTTPTypes
import NIOCore
import NIOHTTP1
import SharedURLCache

/// An AsyncHTTPClient `HTTPClient` with a shared on-disk HTTP cache in front of it: RFC 9111
/// through ``HTTPCachingFlow`` (fresh hits with no network, conditional revalidation, the six
/// cache policies, offline answers, Vary), on a directory many processes share.
///
/// Two lines of setup:
/// ```swift
/// let client = CachingHTTPClient(cache: try SharedCache(memoryCapacity: 8 << 20, diskCapacity: 1 << 30,
///                                                       directory: URL(fileURLWithPath: "/var/cache/api")))
/// let response = try await client.execute(HTTPClientRequest(url: "https://api.example.com/items"), timeout: .seconds(30))
/// ```
///
/// - Request collapsing: concurrent GETs of one URL that would reach the origin at once (a
///   miss, a revalidation) send one request; the others wait for it and are then answered from
///   the cache. Across processes too: the request that goes holds the directory's lease on the
///   URL, and other processes' requests wait for it (`OriginLease`). See
///   ``Configuration/collapsesRequests`` and `RequestCollapser` for what happens with `Vary` and
///   with responses that were not stored.
/// - Bodies stream both ways with bounded memory (``HTTPCachingFlow/streamingResponse(for:body:policy:maximumStoredBodyBytes:fetch:)``):
///   a miss is passed to the caller chunk by chunk as the origin sends it and written to the
///   store on the way, and committed only after its last chunk (a body past
///   ``Configuration/maximumBodyBytes``, an origin that fails mid-body or a caller that stops
///   reading stores nothing); a large hit is read from the store as the caller reads it, and a
///   stored body that fails its check at its end fails the caller's read (`CacheError`
///   `.corrupt`) and is purged.
/// - Parent caches (``Configuration/parents``, a ``ParentTier``): misses and revalidations go to
///   the URL's parent by rendezvous hashing before the origin, with failover and a direct
///   fallback, so several hosts with caches of their own send the origin one request per object.
/// - Redirects are followed by the `HTTPClient` (its configuration decides), and the final
///   response is stored under the URL that was asked for, as the URLSession integration does.
/// - The `HTTPClient` is not owned: shut down your own client yourself (the default,
///   ``defaultHTTPClient``, needs no shutdown). The default answers at once for an origin that
///   refuses connections (no connect retry): give your own client
///   ``originConfiguration(_:connectTimeout:)`` for the same.
///
/// ## Topics
/// - ``init(cache:httpClient:)``, ``init(cache:httpClient:configuration:)``, ``Configuration``
/// - ``execute(_:timeout:policy:)``, ``execute(_:deadline:policy:)``, ``CachingHTTPClientResponse``
public final class CachingHTTPClient: Sendable {
    /// The client that reaches the origin.
    public let httpClient: HTTPClient
    /// The flow (and through it the cache, in the client's partition).
    public let flow: HTTPCachingFlow
    /// The caching and origin settings the client was made with.
    public let configuration: Configuration
    private let collapser = RequestCollapser()

    /// How many requests wait on another's origin fetch of the same URL now (request
    /// collapsing). The package's tests hold an origin's answer until their followers are queued,
    /// so they do not depend on how fast a loaded machine schedules them.
    package var requestsWaitingOnLeaders: Int { collapser.waitingFollowers }
    /// Every answer counted by its `Cache-Status` member (``Configuration/metricsFactory``).
    let metrics: CacheStatusMetrics
    /// Where origin-bound GETs and HEADs go first (``Configuration/parents``); nil without parents.
    let parentRouter: ParentRouter?

    /// The cache the client reads and stores in (already in the client's partition).
    public var cache: SharedCache { flow.cache }

    /// Creates a shared-mode client on `cache`, in the cache's partition.
    /// - Parameters:
    ///   - cache: the shared cache (its directory, capacities and partition).
    ///   - httpClient: the client that reaches the origin (default ``defaultHTTPClient``).
    public convenience init(cache: SharedCache, httpClient: HTTPClient = CachingHTTPClient.defaultHTTPClient) {
        self.init(partitioned: cache, httpClient: httpClient, configuration: Configuration())
    }

    /// Creates a client with a configuration: shared or private mode, a partition, the body cap.
    ///
    /// ```swift
    /// let alice = try CachingHTTPClient(cache: cache, configuration: .init(mode: .private, partition: "alice"))
    /// ```
    /// - Parameters:
    ///   - cache: the shared cache. When ``Configuration/partition`` names another partition
    ///     than the cache's, the client opens the same directory again with that partition
    ///     (same capacities; one LMDB environment per process underneath, its own memory tier).
    ///   - httpClient: the client that reaches the origin (default ``defaultHTTPClient``).
    ///   - configuration: mode, partition, body cap, collapsing and the flow's settings.
    /// - Throws: `CacheError` when the directory cannot be opened for the partition.
    /// - Precondition: a private-mode client is not in the empty partition (shared clients read
    ///   it, and would be served one user's private responses).
    public convenience init(
        cache: SharedCache, httpClient: HTTPClient = CachingHTTPClient.defaultHTTPClient,
        configuration: Configuration
    ) throws {
        var partitioned = cache
        if let partition = configuration.partition, partition != cache.configuration.partition {
            var cacheConfiguration = cache.configuration
            cacheConfiguration.partition = partition
            partitioned = try SharedCache(configuration: cacheConfiguration)
        }
        self.init(partitioned: partitioned, httpClient: httpClient, configuration: configuration)
    }

    private init(partitioned cache: SharedCache, httpClient: HTTPClient, configuration: Configuration) {
        precondition(
            configuration.mode == .shared || !cache.configuration.partition.isEmpty,
            "CachingHTTPClient: a private-mode client needs a partition of its own (Configuration.partition); in the empty partition shared clients would serve what it stores"
        )
        precondition(configuration.maximumBodyBytes >= 0, "CachingHTTPClient: maximumBodyBytes must not be negative")
        self.httpClient = httpClient
        self.configuration = configuration
        self.flow = HTTPCachingFlow(cache: cache, configuration: configuration.flowConfiguration)
        self.metrics = CacheStatusMetrics(factory: configuration.metricsFactory ?? MetricsSystem.factory)
        self.parentRouter = configuration.parents.map(ParentRouter.init(tier:))
    }

    // MARK: Executing

    /// Answers `request` from the cache and/or the origin.
    ///
    /// ```swift
    /// let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(10),
    ///                                         policy: .returnCacheDataElseLoad)   // offline-friendly
    /// ```
    /// - Parameters:
    ///   - request: the request; GET and HEAD are answered from the cache, unsafe methods go to
    ///     the origin and invalidate what they changed (RFC 9111 §4.4). A GET or HEAD with a
    ///     body bypasses the cache.
    ///   - timeout: the time allowed for the whole answer, every origin exchange included
    ///     (a revalidation that turns into a full fetch shares it).
    ///   - policy: one of the six URLRequest cache policies (default RFC 9111).
    /// - Throws: `HTTPCachingError.notCached` for a `returnCacheDataDontLoad` miss;
    ///   ``CachingHTTPClientError``; AsyncHTTPClient's errors when the origin fails and nothing
    ///   stored may be served.
    public func execute(
        _ request: HTTPClientRequest, timeout: TimeAmount,
        policy: RequestCachePolicy = .useProtocolCachePolicy
    ) async throws -> CachingHTTPClientResponse {
        try await execute(request, deadline: .now() + timeout, policy: policy)
    }

    /// Answers `request` from the cache and/or the origin before `deadline`; see
    /// ``execute(_:timeout:policy:)``.
    public func execute(
        _ request: HTTPClientRequest, deadline: NIODeadline,
        policy: RequestCachePolicy = .useProtocolCachePolicy
    ) async throws -> CachingHTTPClientResponse {
        let head = try Self.httpRequest(from: request)
        if (head.method == .get || head.method == .head) && request.body != nil {
            // A GET body has no defined meaning (RFC 9110 §9.3.1) and is not part of the key.
            let response: HTTPClientResponse
            if let originExchange = configuration.originExchange {
                response = try await originExchange(request, deadline)
            } else {
                response = try await httpClient.execute(request, deadline: deadline)
            }
            let member = CacheStatusMember(forward: .bypass, forwardStatus: Int(response.status.code))
            metrics.record(member)
            return CachingHTTPClientResponse(
                status: response.status, headers: response.headers, body: response.body, cacheStatus: .bypass,
                cacheStatusMember: member)
        }
        // Only a client with parents has a tier to trace: the others allocate nothing for it.
        let trace = parentRouter == nil ? nil : ParentRouter.Trace()
        let fetch = originFetch(deadline: deadline, body: request.body, trace: trace)
        let flow = self.flow
        do {
            var answer: CachedHTTPStreamingResponse
            let cap = configuration.maximumBodyBytes
            let atOriginPace = configuration.storesAtOriginPace
            if configuration.collapsesRequests, head.method == .get, policy.mayCollapse, let url = head.absoluteURL {
                let followed: RequestCollapser.Followed?
                let cache = flow.cache
                let lockTimeout = configuration.lockTimeout
                let waitingUntil = lockTimeout.map { NIODeadline.now() + $0 }
                (answer, followed) = try await collapser.run(url: url, request: head, lockTimeout: lockTimeout) { key in
                    try await OriginLease.run(
                        cache: cache, name: key, deadline: deadline, waitingUntil: waitingUntil, fetch: fetch
                    ) { fetch in
                        try await flow.streamingResponse(
                            for: head, policy: policy, maximumStoredBodyBytes: cap, storesAtOriginPace: atOriginPace,
                            fetch: fetch)
                    }
                } learn: { answer in
                    RequestCollapser.hint(vary: answer.response.headerFields[values: .vary])
                } settled: { answer in
                    answer.body.storeSettlement
                } forward: { answer in
                    answer.cacheStatusMember.forward
                }
                if let followed {
                    answer.cacheStatusMember = answer.cacheStatusMember.collapsed(behind: followed.leaderForward)
                }
            } else {
                answer = try await flow.streamingResponse(
                    for: head, policy: policy, maximumStoredBodyBytes: cap, storesAtOriginPace: atOriginPace,
                    fetch: fetch)
            }
            if let trace { answer.cacheStatusMember = trace.noting(answer.cacheStatusMember) }
            metrics.record(answer.cacheStatusMember)
            if !answer.cacheStatusMember.stored && answer.body.stores {
                // A streamed body's store is settled once it has been read: counted then, if committed.
                let settlement = answer.body.storeSettlement
                let metrics = self.metrics
                settlement.whenSettled { if settlement.isCommitted { metrics.recordCommittedAfterHead() } }
            }
            return Self.response(from: answer)
        }
    }

    /// The flow's answer as AsyncHTTPClient's types; the body streams through.
    static func response(from answer: CachedHTTPStreamingResponse) -> CachingHTTPClientResponse {
        let (status, headers) = head(of: answer.response)
        let body: HTTPClientResponse.Body =
            answer.body.knownLength == 0 ? HTTPClientResponse.Body() : .stream(ByteBufferChunks(body: answer.body))
        var response = CachingHTTPClientResponse(
            status: status, headers: headers, body: body, cacheStatus: answer.cacheStatus,
            cacheStatusMember: answer.cacheStatusMember)
        response.storeSettlement = answer.body.storeSettlement
        return response
    }

    /// A response head in NIO's types (header names as stored: as the origin spelled them).
    static func head(of response: HTTPResponse) -> (HTTPResponseStatus, HTTPHeaders) {
        // All at once: `HTTPHeaders.add` checks each name for non-ASCII bytes and for `Connection`
        // (a third of a proxy hit's conversion); HTTP types' names are tokens already.
        let headers = HTTPHeaders(response.headerFields.map { ($0.name.rawName, $0.value) })
        return (
            HTTPResponseStatus(statusCode: response.status.code, reasonPhrase: response.status.reasonPhrase), headers
        )
    }
}

extension RequestCachePolicy {
    /// Policies under which concurrent misses may wait for one origin request: the others either
    /// want the origin explicitly or never reach it.
    var mayCollapse: Bool { self == .useProtocolCachePolicy || self == .returnCacheDataElseLoad }

    /// Policies that answer from the origin whatever is stored (the flow's `.bypass`).
    var ignoresStoredData: Bool {
        self == .reloadIgnoringLocalCacheData || self == .reloadIgnoringLocalAndRemoteCacheData
    }
}
