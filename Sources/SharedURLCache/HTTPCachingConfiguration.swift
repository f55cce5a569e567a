import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPCacheSemantics
import HTTPTypes

/// What the caching flow proposes to store; a ``HTTPCachingConfiguration/willCacheResponse`` hook
/// may return it unchanged, modified, or `nil` to veto.
public struct ProposedCacheEntry: Sendable {
    /// The response as it will be stored (hop-by-hop fields already removed).
    public var response: HTTPResponse
    /// The body as it will be stored.
    public var body: Data
    /// `.allowed` (disk, every process), `.allowedInMemoryOnly` (this process), `.notAllowed`.
    public var storagePolicy: URLCache.StoragePolicy
    /// Returned with the entry on later hits (stored as a property list).
    public var userInfo: [String: String]
    /// The URL the response is stored under.
    public let url: String
}

/// A rule for the common cases the hook would otherwise handle by hand.
public struct CachingRule: Sendable, Hashable {
    /// Which requests it applies to: a host (exact, case-insensitive) and/or a path prefix.
    public var host: String?
    /// See ``host``: requests whose path starts with this.
    public var pathPrefix: String?
    /// Serve responses of these requests as fresh for this long, whatever the origin says
    /// (for origins that send no cache headers). Implemented by storing
    /// `Cache-Control: max-age=N` in place of the origin's freshness fields.
    public var forcedTTLSeconds: Int?
    /// Never store responses of these requests.
    public var neverStore: Bool

    /// A rule for `host` and/or `pathPrefix` (nil matches any).
    public init(host: String? = nil, pathPrefix: String? = nil, forcedTTLSeconds: Int? = nil, neverStore: Bool = false)
    {
        self.host = host
        self.pathPrefix = pathPrefix
        self.forcedTTLSeconds = forcedTTLSeconds
        self.neverStore = neverStore
    }

    func matches(_ request: HTTPRequest) -> Bool {
        if let host,
            request.authority.map({ $0.split(separator: ":").first.map(String.init)?.lowercased() })
                != host.lowercased()
        {
            return false
        }
        if let pathPrefix, !(request.path ?? "/").hasPrefix(pathPrefix) { return false }
        return true
    }
}

/// How the caching flow behaves.
public struct HTTPCachingConfiguration: Sendable {
    /// RFC 9111 choices: shared (default) or private mode, cookies, heuristics, 5xx (stored
    /// when RFC 9111 §3 allows, by default).
    public var policy = CachePolicyConfiguration()
    /// First matching rule wins.
    public var rules: [CachingRule] = []
    /// Sees every response about to be stored; return it (maybe modified) or `nil` to veto.
    public var willCacheResponse: (@Sendable (ProposedCacheEntry) async -> ProposedCacheEntry?)?
    /// Revalidate in the background for `stale-while-revalidate` (RFC 5861 §3).
    public var revalidatesInBackground = true
    /// The clock; a parameter so tests can move time.
    public var now: @Sendable () -> Date = { Date() }
    /// Compressed passthrough (opt-in): a stored identity response whose body is kept
    /// compressed and larger than 8 KiB is sent as its stored zlib stream, with
    /// `Content-Encoding: gzip` or `deflate`, to a client that accepts one, without inflating it
    /// (docs/Proxy.md, "Compressed passthrough"). Its `ETag` becomes weak, as it names another
    /// representation, and `Vary: Accept-Encoding` is added.
    public var compressedPassthrough = false
    /// Request fields added to the key of every response stored, as if the origin had named
    /// them in `Vary` (they are appended to the stored response's `Vary`, so the clients of a
    /// hit see them too): for an origin that varies on a field without saying so (a tenant or
    /// API-version header). Default none.
    public var keyFields: [HTTPField.Name] = []
    /// Whether a request's own `Cache-Control` and `Pragma` take part in deciding whether a
    /// stored response may answer it (RFC 9111 §5.2.1: `no-cache`, `max-age=0`, `max-stale`,
    /// `min-fresh`, `only-if-cached`). Default true. A shared cache in front of an origin may set
    /// it false, as nginx and Varnish behave by default, so that clients cannot make every
    /// request of theirs go to the origin (a reload, or an attacker bypassing the cache at will);
    /// the fields are still forwarded when the request goes to the origin.
    public var honoursRequestCacheControl = true
    /// Whether a successful unsafe request (POST, PUT, DELETE, PATCH…) removes the stored
    /// responses of its target and of the same-origin `Location` / `Content-Location` (RFC 9111
    /// §4.4). Default true. False keeps any client from emptying entries by sending unsafe
    /// requests to their URLs, for an origin whose unsafe methods change nothing cached.
    public var invalidatesOnUnsafeMethods = true

    /// The defaults: a shared cache under RFC 9111, background revalidation, no hook, no rules.
    public init() {}
}

/// Why the flow could not answer.
public enum HTTPCachingError: Error, Sendable, Hashable {
    /// `returnCacheDataDontLoad` (offline) and nothing is stored for the request.
    case notCached(url: String)
    /// The request has no usable absolute http(s) URL.
    case invalidRequest(String)
}
