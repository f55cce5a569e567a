#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HTTPTypes

/// What to do with the origin's answer to a revalidation (RFC 9111 §4.3.3; RFC 5861 §4).
public enum RevalidationOutcome: Sendable, Hashable {
    /// The 304 selects the stored response: serve the stored body with `updated`'s head and
    /// store `updated` (RFC 9111 §4.3.4, §3.2).
    case notModified(updated: StoredResponse)
    /// A 304 whose validator names another response than the stored one (RFC 9111 §4.3.4): do
    /// not use it; repeat the request without conditional fields.
    case notModifiedMismatch
    /// A full response: forward it, and let ``StorageDecision`` decide whether it replaces the
    /// stored one (if it is not storable, remove the stored entry).
    case replace
    /// The origin failed or answered 5xx inside the stale-if-error window: serve the stored
    /// response with this age (RFC 5861 §4, RFC 9111 §4.2.4).
    case serveStale(ageSeconds: Int)
    /// The origin answered 5xx and serving stale is not allowed: forward that response.
    case forwardError
    /// The origin is unreachable (or answered 5xx) and the stored response must not be served
    /// stale (`must-revalidate`, RFC 9111 §5.2.2.2): answer 504 Gateway Timeout.
    case gatewayTimeout

    /// Classifies the origin's response to a revalidation request.
    ///
    /// - Parameters:
    ///   - response: The response received from the origin.
    ///   - stored: The stored response that was validated: the conditional request was built
    ///     from it alone, so a 304 without validators answers for it (``NotModifiedUpdate``).
    ///   - staleIfErrorUntil: The window from ``ReuseDecision/Revalidation``.
    ///   - requestTime: When the revalidation request was sent.
    ///   - responseTime: When its response was received.
    ///   - now: The current time.
    ///   - configuration: Shared or private mode.
    public static func evaluate(
        response: HTTPResponse,
        stored: StoredResponse,
        staleIfErrorUntil: Date?,
        requestTime: Date,
        responseTime: Date,
        now: Date,
        configuration: CachePolicyConfiguration = CachePolicyConfiguration()
    ) -> RevalidationOutcome {
        let code = response.status.code
        if code == 304 {
            // RFC 9111 §4.3.4: update the selected stored response.
            guard NotModifiedUpdate.selects(stored: stored, notModified: response.headerFields, validatedAlone: true)
            else {
                return .notModifiedMismatch
            }
            var updated = stored
            updated.headerFields = NotModifiedUpdate.merge(
                stored: stored.headerFields,
                notModified: response.headerFields
            )
            updated.requestTime = requestTime
            updated.responseTime = responseTime
            return .notModified(updated: updated)
        }
        // RFC 9111 §4.3.3: a 5xx may be forwarded, or treated as a failure to respond, in which
        // case a stored response may be served within its constraints.
        if (500...599).contains(code) {
            return failure(
                stored: stored, staleIfErrorUntil: staleIfErrorUntil, now: now, configuration: configuration,
                otherwise: .forwardError)
        }
        // RFC 9111 §4.3.3: a full response replaces the stored one.
        return .replace
    }

    /// Classifies a revalidation that got no response at all (network failure, timeout).
    ///
    /// - Parameters:
    ///   - stored: The stored response that was validated.
    ///   - staleIfErrorUntil: The window from ``ReuseDecision/Revalidation``.
    ///   - now: The current time.
    ///   - configuration: Shared or private mode.
    public static func originUnreachable(
        stored: StoredResponse,
        staleIfErrorUntil: Date?,
        now: Date,
        configuration: CachePolicyConfiguration = CachePolicyConfiguration()
    ) -> RevalidationOutcome {
        // RFC 9111 §5.2.2.2: a disconnected cache that may not serve stale answers 504.
        failure(
            stored: stored, staleIfErrorUntil: staleIfErrorUntil, now: now, configuration: configuration,
            otherwise: .gatewayTimeout)
    }

    private static func failure(
        stored: StoredResponse,
        staleIfErrorUntil: Date?,
        now: Date,
        configuration: CachePolicyConfiguration,
        otherwise: RevalidationOutcome
    ) -> RevalidationOutcome {
        let cacheControl = CacheControl(responseFields: stored.headerFields, configuration: configuration)
        let shared = configuration.isShared
        // RFC 9111 §4.2.4, §5.2.2.2, §5.2.2.8, §5.2.2.10: stale serving forbidden → 504.
        let staleForbidden =
            cacheControl.mustRevalidate
            || (shared && (cacheControl.proxyRevalidate || cacheControl.sharedMaxAge != nil))
        if staleForbidden {
            return .gatewayTimeout
        }
        // RFC 5861 §4: within the stale-if-error window, serve the stored response.
        if let until = staleIfErrorUntil, HTTPDate(now) <= HTTPDate(until) {
            let age = Freshness(stored: stored, now: now, configuration: configuration).currentAgeSeconds
            return .serveStale(ageSeconds: age)
        }
        return otherwise
    }
}
