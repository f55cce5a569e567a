import AsyncHTTPClient

/// Why a ``CachingHTTPClient`` could not answer (besides `HTTPCachingError` from the flow, e.g.
/// `.notCached` for an offline miss, and AsyncHTTPClient's own errors).
public enum CachingHTTPClientError: Error, Sendable, Hashable {
    /// The origin sent a body with no declared length that grew past
    /// ``CachingHTTPClient/Configuration/maximumBodyBytes``; nothing was stored.
    case bodyTooLarge(limitBytes: Int)
    /// The request cannot be sent: its URL is not absolute http(s), or its method is not a token.
    case invalidRequest(String)
}

/// Thrown by the origin fetch when the origin announces a body larger than the cap: the
/// response goes to the caller unbuffered, past the flow (which only handles buffered bodies).
struct OriginPassThrough: Error {
    let response: HTTPClientResponse
}
