import AsyncHTTPClient

/// Why a ``CachingHTTPClient`` could not answer (besides `HTTPCachingError` from the flow, e.g.
/// `.notCached` for an offline miss, and AsyncHTTPClient's own errors).
public enum CachingHTTPClientError: Error, Sendable, Hashable {
    /// Not thrown since bodies stream: a body past
    /// ``CachingHTTPClient/Configuration/maximumBodyBytes`` reaches the caller whole and is not
    /// stored. Kept so that existing `catch` clauses compile.
    @available(*, deprecated, message: "not thrown: a body past maximumBodyBytes reaches the caller whole, unstored")
    case bodyTooLarge(limitBytes: Int)
    /// The request cannot be sent: its URL is not absolute http(s), or its method is not a token.
    case invalidRequest(String)
    /// No parent of ``CachingHTTPClient/Configuration/parents`` could answer (all down, failed or
    /// answered 502–504) and its fallback is ``ParentTier/Fallback/fail``.
    case parentsUnavailable
}
