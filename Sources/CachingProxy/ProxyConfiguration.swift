import Foundation
import HTTPCacheSemantics
import HTTPTypes
import NIOCore
import SharedURLCacheAsyncHTTPClient

/// How `urlcache proxy` listens, where it forwards, and how it caches.
///
/// ```swift
/// var configuration = ProxyConfiguration(mode: .reverse(try ProxyConfiguration.Upstream("http://127.0.0.1:9000")))
/// configuration.port = 8080
/// configuration.cacheStatusName = "edge-1"           // Cache-Status: edge-1;hit;ttl=60
/// configuration.cacheStatusHeader = "X-Cache-Status" // and nginx's X-Cache-Status: HIT
/// let server = try await ProxyServer.start(configuration: configuration, cache: cache)
/// ```
public struct ProxyConfiguration: Sendable {
    /// Where requests go.
    public enum Mode: Sendable, Hashable {
        /// Every request goes to one origin, its target appended to the upstream URL (like
        /// nginx's `proxy_pass http://host:port;`). Clients send origin-form targets (`/path?q`).
        case reverse(Upstream)
        /// Clients configured with `HTTP_PROXY` send absolute-form targets
        /// (`GET http://host:port/path HTTP/1.1`); each goes to the origin it names. Plain
        /// `http` only: `CONNECT` (tunnels for https) is answered 405.
        case forward
    }

    /// The origin of a reverse proxy: `http(s)://host[:port][/base-path]`.
    public struct Upstream: Sendable, Hashable, CustomStringConvertible {
        /// `http` or `https`.
        public var scheme: String
        /// `host[:port]` as written (IPv6 literals in brackets).
        public var authority: String
        /// Prepended to every target; empty or starting with `/`, never ending with `/`.
        public var basePath: String

        /// Parses an upstream URL.
        /// - Throws: ``ProxyConfigurationError/invalidUpstream(_:)`` for anything but an absolute
        ///   http(s) URL without query or fragment.
        public init(_ text: String) throws(ProxyConfigurationError) {
            guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
                scheme == "http" || scheme == "https", let host = components.percentEncodedHost, !host.isEmpty,
                components.query == nil, components.fragment == nil, components.user == nil
            else { throw .invalidUpstream(text) }
            self.scheme = scheme
            self.authority = components.port.map { "\(host):\($0)" } ?? host
            var base = components.percentEncodedPath
            while base.hasSuffix("/") { base.removeLast() }
            self.basePath = base
        }

        /// The absolute URL of `target` (an origin-form target: `/path?query`) at this origin.
        func url(for target: String) -> String { scheme + "://" + authority + basePath + target }

        /// `host` without the port (for nothing but logging).
        public var description: String { scheme + "://" + authority + basePath }
    }

    /// The address to listen on (default `127.0.0.1`: loopback only).
    public var host: String
    /// The port to listen on; 0 picks a free one (``ProxyServer/port`` says which).
    public var port: Int
    /// Reverse (default) or forward proxy.
    public var mode: Mode
    /// The name the proxy gives itself in the `Cache-Status` response field (RFC 9211), which says
    /// how the cache handled each request: `urlcache;hit;ttl=60`,
    /// `urlcache;fwd=uri-miss;fwd-status=200;ttl=60;stored`, `urlcache;fwd=stale;fwd-status=304;ttl=60`, `collapsed` for a
    /// request that waited on another's fetch, `detail=<reason>` when a response was not stored.
    /// Default `urlcache`; `nil` sends no `Cache-Status`. A Token or printable ASCII.
    public var cacheStatusName: String?
    /// A second, nginx-style header that says how the cache answered (HIT, MISS, REVALIDATED,
    /// STALE, UPDATING, EXPIRED, BYPASS), like `add_header X-Cache-Status $upstream_cache_status`;
    /// `nil` (the default) sends none.
    public var cacheStatusHeader: String?
    /// The time allowed for one request's exchanges with the origin (answered 504 past it).
    public var upstreamTimeout: TimeAmount
    /// The time allowed to connect to the origin (default
    /// `CachingHTTPClient.defaultConnectTimeout`). A refused connect is not retried: it is
    /// answered at once, from a stale entry where its directives allow, else 504 or 502.
    public var connectTimeout: TimeAmount
    /// The largest request body accepted; a larger declared `Content-Length` is answered 413 at
    /// once (without `100 Continue`), a chunked body that grows past it gets 413 and the
    /// connection's close. Bodies of unsafe methods stream to the origin as they are read,
    /// through a few chunks of buffer per connection; GET and HEAD bodies are read whole.
    public var maximumRequestBodyBytes: Int
    /// A client connection idle for this long is closed.
    public var idleTimeout: TimeAmount
    /// The time a client has from the first byte of a request head to its end, then the
    /// connection is closed (nginx's `client_header_timeout`; default 60 s as there).
    public var requestHeadTimeout: TimeAmount
    /// The time a client may leave between two reads of a request body the proxy is waiting
    /// for, then the connection is closed (nginx's `client_body_timeout`; default 60 s as
    /// there). Time the proxy spends waiting for the origin to take the body does not count.
    public var requestBodyTimeout: TimeAmount
    /// The time a client may leave an answer's bytes untaken (between two completed writes),
    /// then the connection is closed (nginx's `send_timeout`; default 60 s as there).
    public var sendTimeout: TimeAmount
    /// The most client connections served at once by this process; past it a new connection is
    /// answered 503 at once and closed. Default 1,024 (nginx's default is 512 per worker
    /// process); nil for no bound but the descriptor limit.
    public var maximumConnections: Int?
    /// How long a signalled proxy process (``ProxyServer/runUntilSignalled(configuration:cache:logger:ready:)``)
    /// waits for the requests in flight after it stopped accepting; then it exits with whatever
    /// is still running cut off. Default 30 s, as Kubernetes' termination grace period and well
    /// inside systemd's 90 s stop timeout, so the proxy exits on its own before either kills it.
    public var shutdownGracePeriod: TimeAmount
    /// Event loop threads (default: one per core).
    public var eventLoopThreads: Int
    /// Sets `SO_REUSEPORT` on the listening socket, so several proxy processes on one cache
    /// directory can listen on the same port and the kernel spreads connections among them
    /// (docs/Design.md, invariant 3: each process sees the others' stores through the shared index).
    public var reusePort: Bool
    /// One line per request (method, target, status, cache status, bytes, duration) at `info`
    /// on the `urlcache.proxy.access` logger.
    public var accessLog: Bool
    /// Where `GET /metrics` is served in Prometheus' text format (the proxy's answers by cache
    /// status, stores, reasons not stored, collapsed requests; the directory's counters and
    /// sizes), on a listener of its own; `nil` (the default) serves none. The host defaults to
    /// loopback: the figures name URLs' partitions and sizes, not for every network.
    public var metricsAddress: (host: String, port: Int)?
    /// The clients `/metrics` answers (`--metrics-from`); others get 403. `nil` (the default)
    /// answers whoever reaches its listener, which binds to loopback unless told otherwise.
    public var metricsFrom: AddressRanges?
    /// Who may remove entries with `PURGE <target>` (the proxy's entries for that URL, every
    /// variant; 200 with the count, 404 when there were none, 403 for anyone else). `nil` (the
    /// default) forwards `PURGE` to the origin like any other method.
    public var purge: PurgeAccess?
    /// Destinations a forward proxy may reach although they are internal
    /// (``AddressRanges/internalNetworks``: loopback, private, link-local), as IP ranges
    /// (`--forward-allow`). Requests for other internal addresses, or for `localhost`, are
    /// answered 403: a forward proxy on a host otherwise lets any client reach that host's
    /// loopback services and its network's (a cloud's metadata service among them). Host names
    /// are not resolved for this check. Default none.
    public var forwardAllowed: AddressRanges?
    /// Request fields the proxy would drop that it lets through to the origin (any case): by
    /// default it drops `X-Forwarded-Host`, `X-Original-URL`, `X-Rewrite-URL`,
    /// `X-HTTP-Method-Override`, `X-HTTP-Method` and `X-Method-Override`, which frameworks read
    /// to rewrite the host, target or method behind the cache's key (docs/Proxy.md, "What
    /// reaches the origin"). Default none.
    public var passedHeaders: [String] = []
    /// Request fields added to every stored response's key, for an origin that varies on them
    /// without saying so in `Vary` (``HTTPCachingConfiguration/keyFields``). Default none.
    public var keyHeaders: [HTTPField.Name] {
        get { client.caching.keyFields }
        set { client.caching.keyFields = newValue }
    }
    /// The caching client's settings: shared mode by default, the cache's own partition (the
    /// empty one unless the cache was opened with another), the body cap, request collapsing.
    public var client: CachingHTTPClient.Configuration

    /// Creates a configuration with the defaults above.
    public init(mode: Mode, host: String = "127.0.0.1", port: Int = 8080) {
        self.host = host
        self.port = port
        self.mode = mode
        self.cacheStatusName = CacheStatusMember.defaultCacheName
        self.cacheStatusHeader = nil
        self.upstreamTimeout = .seconds(60)
        self.connectTimeout = CachingHTTPClient.defaultConnectTimeout
        self.maximumRequestBodyBytes = 64 << 20
        self.idleTimeout = .seconds(75)
        self.requestHeadTimeout = .seconds(60)
        self.requestBodyTimeout = .seconds(60)
        self.sendTimeout = .seconds(60)
        self.maximumConnections = 1024
        self.shutdownGracePeriod = .seconds(30)
        self.eventLoopThreads = System.coreCount
        self.reusePort = false
        self.accessLog = true
        self.client = CachingHTTPClient.Configuration()
        self.client.caching.policy.targetedFields = [CachePolicyConfiguration.cdnCacheControl]
        // nginx's proxy_cache_lock_timeout: a request waits that long for another's fetch.
        self.client.lockTimeout = .seconds(5)
        // A slow client must not hold the store its URL's other clients wait for.
        self.client.storesAtOriginPace = true
    }

    /// The targeted cache-control fields the proxy obeys, in order (RFC 9213): by default
    /// `CDN-Cache-Control`, which origins address to caches run for them (CDNs, reverse proxies).
    public var targetedCacheControl: [HTTPField.Name] {
        get { client.caching.policy.targetedFields }
        set { client.caching.policy.targetedFields = newValue }
    }

    /// Parent caches (Varnish, Traffic Server, nginx, a CDN) that misses and revalidations go to
    /// before the origin, chosen per URL by rendezvous hashing, with failover and a direct
    /// fallback (``ParentTier``); `nil` (the default) goes to the origin. The same setting as
    /// `client.parents`.
    public var parents: ParentTier? {
        get { client.parents }
        set { client.parents = newValue }
    }

    /// Parses a comma-separated list of field names (empty: none).
    /// - Throws: ``ProxyConfigurationError/invalidFieldName(_:)``.
    public static func fieldNames(_ text: String) throws(ProxyConfigurationError) -> [HTTPField.Name] {
        try text.split(separator: ",").map { item throws(ProxyConfigurationError) in
            let trimmed = item.trimmingCharacters(in: .whitespaces)
            guard let name = HTTPField.Name(trimmed) else { throw .invalidFieldName(trimmed) }
            return name
        }
    }

    /// Parses `host:port` (`[::1]:8080` for IPv6).
    /// - Throws: ``ProxyConfigurationError/invalidListenAddress(_:)``.
    public static func listenAddress(_ text: String) throws(ProxyConfigurationError) -> (host: String, port: Int) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
            (0...65535).contains(port)
        else { throw .invalidListenAddress(text) }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { throw .invalidListenAddress(text) }
        return (host, port)
    }
}

/// Who may send the proxy `PURGE` requests (``ProxyConfiguration/purge``).
public struct PurgeAccess: Sendable, Hashable {
    /// Clients connected from a loopback address (127.0.0.0/8, ::1) may purge.
    public var loopback: Bool
    /// Any client sending `Authorization: Bearer <token>` with this token may purge.
    public var token: String?
    /// Clients whose address is in these ranges may purge (`--purge-from`), loopback or not:
    /// behind a TLS terminator or sidecar on the host, every client arrives from loopback, so
    /// `loopback` alone would let all of them purge. Default none.
    public var from: AddressRanges?
    /// Also send the `PURGE` to every parent cache (``ProxyConfiguration/parents``), before the
    /// proxy's own entries are removed (`CachingHTTPClient.purgeParents(of:timeout:)`), so that a
    /// miss in between cannot store a parent's old copy again; the answer still counts the
    /// proxy's entries only. A `PURGE` of a URL only: purges by tag (`Surrogate-Key`) and soft
    /// purges stay local (a parent has its own ways, such as Varnish's xkey). Default false.
    public var sendsToParents: Bool

    /// Purges from loopback clients and, when `token` is given, from clients that present it.
    public init(loopback: Bool = true, token: String? = nil, sendsToParents: Bool = false) {
        self.loopback = loopback
        self.token = token
        self.sendsToParents = sendsToParents
    }

    /// Whether a `PURGE` from `peer` with these request headers is allowed.
    func allows(peer: SocketAddress?, authorization: String?) -> Bool {
        if loopback && AddressRanges.loopback.contains(peer) { return true }
        if from?.contains(peer) == true { return true }
        guard let token, let authorization else { return false }
        let parts = authorization.split(separator: " ", maxSplits: 1)
        return parts.count == 2 && parts[0].lowercased() == "bearer" && constantTimeEqual(parts[1].utf8, token.utf8)
    }

    /// Compares without stopping at the first difference, so the time taken says nothing of the token.
    private func constantTimeEqual(_ a: Substring.UTF8View, _ b: String.UTF8View) -> Bool {
        guard a.count == b.count else { return false }
        return zip(a, b).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}

/// A proxy setting that cannot be used.
public enum ProxyConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Not an absolute http(s) URL without query, fragment or user info.
    case invalidUpstream(String)
    /// Not `host:port`.
    case invalidListenAddress(String)
    /// Not an HTTP field name.
    case invalidFieldName(String)
    /// Not an IP address or `address/prefix-length` range.
    case invalidAddressRange(String)

    public var description: String {
        switch self {
        case .invalidUpstream(let text): "not an http(s) upstream URL: \(text)"
        case .invalidListenAddress(let text): "not a host:port to listen on: \(text)"
        case .invalidFieldName(let text): "not an HTTP field name: \(text)"
        case .invalidAddressRange(let text): "not an IP address or CIDR range: \(text)"
        }
    }
}
