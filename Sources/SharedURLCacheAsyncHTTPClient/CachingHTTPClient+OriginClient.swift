import AsyncHTTPClient
import NIOCore

/// The AsyncHTTPClient a ``CachingHTTPClient`` reaches the origin with when it is given none.
///
/// A cache in front of an origin that is down has an answer ready: the stored response when its
/// directives allow stale (RFC 5861 §4 `stale-if-error`), else 504 (RFC 9111 §5.2.2.2), or the
/// connection error on a miss. AsyncHTTPClient's defaults would hold that answer back: it retries a
/// refused connect with backoff until the request's deadline (`HTTPClient.shared`: 90 s per
/// connect), so a dead origin looked like a slow one. A refused, closed or reset connection is an
/// answer, not a reason to wait.
extension CachingHTTPClient {
    /// The time allowed to open a connection to the origin by ``originConfiguration(_:connectTimeout:)``.
    /// It only matters for an origin that does not answer at all (a refused connect fails at once);
    /// long enough for a TCP handshake that loses its first SYN on a slow path.
    public static let defaultConnectTimeout: TimeAmount = .seconds(3)

    /// `base` with a short connect timeout and no retry of a failed connect, so that an origin
    /// that refuses connections is answered for at once (see above). Requests already waiting
    /// for a connection to that origin fail with it too.
    ///
    /// ```swift
    /// let httpClient = HTTPClient(configuration: CachingHTTPClient.originConfiguration(HTTPClient.Configuration()))
    /// let client = CachingHTTPClient(cache: cache, httpClient: httpClient)
    /// ```
    public static func originConfiguration(
        _ base: HTTPClient.Configuration = .singletonConfiguration,
        connectTimeout: TimeAmount = defaultConnectTimeout
    ) -> HTTPClient.Configuration {
        var configuration = base
        configuration.timeout.connect = connectTimeout
        configuration.connectionPool.retryConnectionEstablishment = false
        return configuration
    }

    /// The default `httpClient` of ``init(cache:httpClient:)``: `HTTPClient.shared`'s settings and
    /// event loops with ``originConfiguration(_:connectTimeout:)`` applied. Process-wide and never
    /// shut down, like `HTTPClient.shared`.
    public static let defaultHTTPClient = HTTPClient(
        eventLoopGroup: HTTPClient.defaultEventLoopGroup,
        configuration: originConfiguration())
}
