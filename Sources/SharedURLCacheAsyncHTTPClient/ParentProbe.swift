import AsyncHTTPClient
import NIOCore

/// The active health check of ``ParentTier/probe``: while a parent is down, a `HEAD` of the
/// probe's target every interval; the first answer below 500 puts it back in rotation.
///
/// One loop per parent, started by the failure that took it down and ended by its first good
/// answer. It holds the router weakly, so a client that is released stops probing at its next
/// tick (a `CachingHTTPClient` has no shutdown of its own).
enum ParentProbe {
    static func start(_ probe: ParentTier.Probe, parent index: Int, of router: ParentRouter, httpClient: HTTPClient) {
        let parent = router.tier.parents[index]
        // The probe's answer gets the time a request's would (its response head), not the interval.
        let timeout = router.tier.timeout
        Task { [weak router] in
            while true {
                try? await Task.sleep(nanoseconds: UInt64(max(probe.interval.nanoseconds, 1_000_000)))
                guard let router else { return }
                var request = HTTPClientRequest(url: parent.description + probe.target)
                request.method = .HEAD
                if let response = try? await httpClient.execute(request, deadline: .now() + timeout),
                    response.status.code < 500
                {
                    router.health.succeeded(index)
                    return
                }
            }
        }
    }
}
