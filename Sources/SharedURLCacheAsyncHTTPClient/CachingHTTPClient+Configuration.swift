import AsyncHTTPClient
import CoreMetrics
import NIOCore
import HTTPCacheSemantics
import SharedURLCache

extension CachingHTTPClient {
    /// How a ``CachingHTTPClient`` caches: shared or private mode, its partition, the body cap
    /// and request collapsing, plus the caching flow's rules, hook and clock.
    ///
    /// ```swift
    /// // A client acting for one user: private responses and Authorization answers are stored,
    /// // in a partition no other user's client reads.
    /// let client = try CachingHTTPClient(
    ///     cache: cache, configuration: .init(mode: .private, partition: "user-\(userID)"))
    /// ```
    public struct Configuration: Sendable {
        /// Whether the client's cache is shared between users (RFC 9111 §1) or private to one.
        public enum Mode: Sendable, Hashable {
            /// Shared (default): `s-maxage` applies; `private` responses, responses with
            /// `Set-Cookie` and answers to `Authorization` (unless `public`, `s-maxage` or
            /// `must-revalidate`, RFC 9111 §3.5) are not stored.
            case shared
            /// Private to one user: `private` responses and answers to `Authorization` are
            /// stored. Needs a partition of its own (see ``partition``).
            case `private`
        }

        /// Shared (default) or private mode; mapped onto
        /// `HTTPCachingConfiguration.policy.mode` (whatever ``caching`` says).
        public var mode: Mode
        /// The partition the client's entries live in; `nil` keeps the cache's own
        /// (`SharedCacheConfiguration.partition`, empty by default). Entries of one partition are
        /// invisible to every other one. A private-mode client must not use the empty partition,
        /// which shared clients read: what it stores (a user's `private` answers) would be served
        /// to everybody.
        public var partition: String?
        /// The largest origin body the client stores (default 64 MiB).
        ///
        /// Bodies stream: a larger one still reaches the caller whole, chunk by chunk as the
        /// origin sends it, and is not stored (its writer is abandoned at the cap, so nothing
        /// partial is ever visible); memory stays bounded either way. The cache's own
        /// `SharedCacheConfiguration.maximumEntrySizeBytes` (8 MiB by default, body + head +
        /// userInfo) also applies to what is stored.
        public var maximumBodyBytes: Int
        /// Collapse concurrent misses of one URL into one origin request (default true); see
        /// ``CachingHTTPClient``.
        public var collapsesRequests: Bool
        /// The caching flow's other settings: RFC 9111 knobs (cookies, heuristics, 5xx), rules,
        /// the `willCacheResponse` hook, background revalidation and the clock. Its
        /// `policy.mode` is replaced by ``mode``.
        public var caching: HTTPCachingConfiguration
        /// Where the client's counters go (`urlcache_responses_total{cache="hit"}` and the rest:
        /// every answer by its `Cache-Status`); `nil` (the default) uses the factory the
        /// application bootstrapped, `MetricsSystem.factory`.
        public var metricsFactory: (any MetricsFactory)?
        /// Parent caches asked before the origin for GET and HEAD (a miss, a revalidation);
        /// `nil` (the default) goes to the origin. See ``ParentTier``.
        public var parents: ParentTier?
        /// How long a collapsed request waits for another request's fetch of the same URL (in
        /// this process, or another on the directory) before it goes to the origin itself, as
        /// nginx's `proxy_cache_lock_timeout` bounds it: a leader stuck on a slow origin or a
        /// slow client then holds nobody else past it. `nil` (the default) waits for the leader
        /// until the request's own deadline; `urlcache proxy` sets 5 s, nginx's default.
        public var lockTimeout: TimeAmount?
        /// Whether a miss being stored is read from the origin at the origin's pace rather than
        /// the caller's (default false). With it, a caller that reads slowly (a proxy's slow
        /// client) holds neither the store nor the requests collapsed behind it: it reads through
        /// a bounded buffer (1 MiB) and, once further behind, the rest from the stored entry.
        /// Without it, the store follows the caller's reading, and a caller that stops reading
        /// stores nothing. Applies to the disk tier without a `willCacheResponse` hook;
        /// `urlcache proxy` sets it.
        public var storesAtOriginPace = false
        /// Test seam: answers every origin exchange in place of the client's `HTTPClient` (the
        /// proxy's request-path fuzz target uses a stand-in origin with no socket); nil, the
        /// default, sends them with the `HTTPClient`. Not for parents (``parents`` must be nil).
        @_spi(Testing) public var originExchange: OriginExchange?

        /// Creates a configuration.
        /// - Parameters:
        ///   - mode: shared (default) or private.
        ///   - partition: the partition of the client's entries; `nil` keeps the cache's.
        ///   - maximumBodyBytes: the largest body stored (default 64 MiB).
        ///   - collapsesRequests: collapse concurrent misses of one URL (default true).
        ///   - caching: the caching flow's settings (rules, hook, clock…).
        public init(
            mode: Mode = .shared, partition: String? = nil, maximumBodyBytes: Int = 64 << 20,
            collapsesRequests: Bool = true, caching: HTTPCachingConfiguration = .init()
        ) {
            self.mode = mode
            self.partition = partition
            self.maximumBodyBytes = maximumBodyBytes
            self.collapsesRequests = collapsesRequests
            self.caching = caching
        }

        /// The flow's configuration with ``mode`` applied.
        var flowConfiguration: HTTPCachingConfiguration {
            var flow = caching
            switch mode {
            case .shared: flow.policy.mode = .shared
            case .private: flow.policy.mode = .private
            }
            return flow
        }
    }
}

extension CachingHTTPClient {
    /// An origin exchange as ``Configuration/originExchange`` makes it in place of `HTTPClient.execute`.
    @_spi(Testing) public typealias OriginExchange =
        @Sendable (HTTPClientRequest, NIODeadline) async throws -> HTTPClientResponse
}
