import Foundation
import NIOCore

/// Parent caches over plain HTTP (Varnish, Traffic Server, nginx, a CDN) that a
/// ``CachingHTTPClient`` asks before the origin, so that several hosts, each with its own cache
/// directory, send the origin one request per object instead of one per host.
///
/// ```swift
/// var configuration = CachingHTTPClient.Configuration()
/// configuration.parents = try ParentTier(["http://10.0.0.5:6081", "http://10.0.0.6:6081"])
/// let client = try CachingHTTPClient(cache: cache, configuration: configuration)
/// ```
///
/// A GET or HEAD that the local cache cannot answer (a miss, a revalidation) goes to one parent,
/// chosen by rendezvous hashing of the request's absolute URL: every child picks the same parent
/// for a URL, so each object is stored on one parent and the tier's capacity adds up. The
/// request is the one the origin would get (`Host` is the origin's, the path and query are the
/// origin's, conditional fields only where the cache or its caller put them), sent to the parent's
/// address. Other methods go straight to the origin.
///
/// A parent that refuses or resets the connection, or gives no response head within
/// ``timeout``, is marked down for ``retryAfter`` (doubling with each further failure, up to
/// ``maximumRetryAfter``) and the request moves on to the next parent in that URL's order; once
/// the back-off has passed, the next request for one of its URLs tries it again (with a
/// ``probe``, it stays down until the probe is answered instead). A parent that
/// answers 502, 503 or 504 (it could not reach the origin) is not marked down, but the request
/// goes direct. With every parent down the request goes to the origin (``Fallback/direct``,
/// the default) or fails (``Fallback/fail``).
public struct ParentTier: Sendable, Hashable {
    /// What a request does when no parent can take it.
    public enum Fallback: Sendable, Hashable {
        /// Go to the origin itself (default): a dead tier never costs an answer the origin can give.
        case direct
        /// Fail with ``CachingHTTPClientError/parentsUnavailable``; the cache still answers with a
        /// stale entry where `stale-if-error` allows.
        case fail
    }

    /// One parent cache: `http(s)://host[:port]`.
    public struct Parent: Sendable, Hashable, CustomStringConvertible {
        /// `http` or `https`.
        public let scheme: String
        /// `host[:port]` as written (IPv6 literals in brackets).
        public let authority: String

        /// Parses a parent's URL.
        /// - Throws: ``ParentTierError/invalidParent(_:)`` for anything but an absolute http(s)
        ///   URL with a host and no path, query, fragment or user info.
        public init(_ text: String) throws(ParentTierError) {
            guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
                scheme == "http" || scheme == "https", let host = components.percentEncodedHost, !host.isEmpty,
                components.percentEncodedPath.isEmpty || components.percentEncodedPath == "/",
                components.query == nil, components.fragment == nil, components.user == nil
            else { throw .invalidParent(text) }
            self.scheme = scheme
            self.authority = components.port.map { "\(host):\($0)" } ?? host
        }

        /// `scheme://authority`, the parent's name in logs and in its rendezvous score.
        public var description: String { scheme + "://" + authority }
    }

    /// The parents, in no particular order (the order does not change which parent a URL gets).
    public var parents: [Parent]
    /// What happens when every parent is down (default ``Fallback/direct``).
    public var fallback: Fallback
    /// The time a parent has to send its response head (default 30 s); past it the parent counts
    /// as failed and the request moves on. A parent waits for the origin on its misses, so this
    /// must be longer than the origin's slowest answer, or a slow object would mark parents down.
    /// Connecting is bounded by the `HTTPClient`'s connect timeout (3 s by default), which is what
    /// finds a parent whose host is gone.
    public var timeout: TimeAmount
    /// How long a parent stays down after its first failure (default 1 s).
    public var retryAfter: TimeAmount
    /// The longest back-off after repeated failures (default 30 s).
    public var maximumRetryAfter: TimeAmount
    /// An active health check of parents that are down; `nil` (the default) lets real requests
    /// find out once each back-off has passed.
    public var probe: Probe?

    /// How a parent that is down is checked (``probe``): a `HEAD` of ``target`` every ``interval``.
    /// The parent stays out of rotation, whatever ``retryAfter`` says, until one is answered
    /// with a status below 500; so real requests never pay for finding that a parent is still down.
    public struct Probe: Sendable, Hashable {
        /// The origin-form target asked (default `/`), with the parent's own `Host`: best one the
        /// parent answers itself (a Varnish `vcl_recv` returning `synth(200)` for it).
        public var target: String
        /// The time between two checks of a parent that is down (default 2 s); each check has
        /// ``ParentTier/timeout`` for its answer.
        public var interval: TimeAmount

        /// A probe of `target` (a leading `/` is added when missing) every `interval`.
        public init(target: String = "/", interval: TimeAmount = .seconds(2)) {
            self.target = target.hasPrefix("/") ? target : "/" + target
            self.interval = interval
        }
    }

    /// A tier of `parents` with the defaults above.
    /// - Throws: ``ParentTierError/invalidParent(_:)`` for a URL that is not a parent's;
    ///   ``ParentTierError/noParents`` for an empty list.
    public init(_ parents: [String], fallback: Fallback = .direct) throws(ParentTierError) {
        guard !parents.isEmpty else { throw .noParents }
        var parsed: [Parent] = []
        for text in parents { parsed.append(try Parent(text)) }
        self.parents = parsed
        self.fallback = fallback
        self.timeout = .seconds(30)
        self.retryAfter = .seconds(1)
        self.maximumRetryAfter = .seconds(30)
        self.probe = nil
    }
}

/// A parent tier setting that cannot be used.
public enum ParentTierError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Not `http(s)://host[:port]` (no path, query, fragment or user info).
    case invalidParent(String)
    /// A tier needs at least one parent.
    case noParents

    public var description: String {
        switch self {
        case .invalidParent(let text): "not a parent cache URL (http://host:port): \(text)"
        case .noParents: "a parent tier needs at least one parent"
        }
    }
}
