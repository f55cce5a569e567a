import Foundation
import HTTPCacheSemantics
import HTTPTypes
import Testing

struct ReuseCase: Sendable, CustomTestStringConvertible {
    let name: String
    let section: String
    let stored: [(String, String)]
    var storedMethod: HTTPRequest.Method = .get
    var storedRequest: [(String, String)] = []
    var method: HTTPRequest.Method = .get
    var request: [(String, String)] = []
    let now: Int
    var configuration = CachePolicyConfiguration()
    let expected: String
    var testDescription: String { "\(name) [\(section)]" }
}

/// A compact, comparable rendering of a decision.
func summary(_ decision: ReuseDecision) -> String {
    switch decision {
    case .fresh(let age): return "fresh:\(age)"
    case .staleAllowed(let age, let staleness): return "staleAllowed:\(age):\(staleness)"
    case .staleWhileRevalidate(let age, _): return "swr:\(age)"
    case .revalidate(let revalidation):
        return "revalidate:\(revalidation.reason)" + (revalidation.staleIfErrorUntil == nil ? "" : "+sie")
    case .gatewayTimeout: return "504"
    case .miss(let reason): return "miss:\(reason)"
    }
}

private let maxAge60 = [("Cache-Control", "max-age=60"), ("Date", httpDate(0)), ("ETag", "\"v1\"")]

@Suite("Reusing stored responses (RFC 9111 §4, §4.2.4, §5.2; RFC 5861)")
struct ReuseDecisionTests {
    static let cases: [ReuseCase] = [
        .init(name: "reuse-fresh", section: "§4.2", stored: maxAge60, now: 10, expected: "fresh:10"),
        .init(
            name: "reuse-fresh-at-boundary-minus-one", section: "§4.2", stored: maxAge60, now: 59, expected: "fresh:59"),
        .init(
            name: "reuse-stale-at-lifetime", section: "§4.2", stored: maxAge60, now: 60, expected: "revalidate:stale"),
        .init(
            name: "reuse-stale-revalidate", section: "§4.2.4", stored: maxAge60, now: 600, expected: "revalidate:stale"),
        .init(
            name: "reuse-head-from-get", section: "§4 / RFC 9110 §9.3.2", stored: maxAge60, method: .head, now: 1,
            expected: "fresh:1"),
        .init(
            name: "reuse-head-from-head", section: "§4", stored: maxAge60, storedMethod: .head, method: .head, now: 1,
            expected: "fresh:1"),
        .init(
            name: "reuse-get-from-head-misses", section: "§4", stored: maxAge60, storedMethod: .head, now: 1,
            expected: "miss:methodMismatch"),
        .init(
            name: "reuse-post-misses", section: "§4", stored: maxAge60, method: .post, now: 1,
            expected: "miss:methodMismatch"),
        .init(
            name: "reuse-request-no-cache", section: "§5.2.1.4", stored: maxAge60,
            request: [("Cache-Control", "no-cache")], now: 1,
            expected: "revalidate:requestNoCache"),
        .init(
            name: "reuse-request-pragma-no-cache", section: "§5.4", stored: maxAge60, request: [("Pragma", "no-cache")],
            now: 1,
            expected: "revalidate:requestNoCache"),
        .init(
            name: "reuse-request-pragma-ignored-with-cache-control", section: "§5.4", stored: maxAge60,
            request: [("Pragma", "no-cache"), ("Cache-Control", "max-stale")], now: 1, expected: "fresh:1"),
        .init(
            name: "reuse-response-no-cache-revalidates", section: "§5.2.2.4",
            stored: [("Cache-Control", "no-cache, max-age=600"), ("ETag", "\"a\"")], now: 1,
            expected: "revalidate:responseNoCache"),
        .init(
            name: "reuse-response-qualified-no-cache-revalidates", section: "§5.2.2.4",
            stored: [("Cache-Control", "no-cache=\"Set-Cookie\", max-age=600")], now: 1,
            expected: "revalidate:responseNoCache"),
        .init(
            name: "reuse-response-no-cache-beats-max-stale", section: "§4.2.4",
            stored: [("Cache-Control", "no-cache, max-age=0")], request: [("Cache-Control", "max-stale")], now: 100,
            expected: "revalidate:responseNoCache"),
        .init(
            name: "reuse-request-max-age-exceeded", section: "§5.2.1.1", stored: maxAge60,
            request: [("Cache-Control", "max-age=5")], now: 10, expected: "revalidate:requestMaxAge"),
        .init(
            name: "reuse-request-max-age-within", section: "§5.2.1.1", stored: maxAge60,
            request: [("Cache-Control", "max-age=20")], now: 10, expected: "fresh:10"),
        .init(
            name: "reuse-request-max-age-zero", section: "§5.2.1.1", stored: maxAge60,
            request: [("Cache-Control", "max-age=0")], now: 1, expected: "revalidate:requestMaxAge"),
        .init(
            name: "reuse-request-max-age-invalid-forces-validation", section: "§4.2.1", stored: maxAge60,
            request: [("Cache-Control", "max-age=abc")], now: 1, expected: "revalidate:requestMaxAge"),
        .init(
            name: "reuse-request-min-fresh-not-met", section: "§5.2.1.3", stored: maxAge60,
            request: [("Cache-Control", "min-fresh=30")], now: 40, expected: "revalidate:requestMinFresh"),
        .init(
            name: "reuse-request-min-fresh-met", section: "§5.2.1.3", stored: maxAge60,
            request: [("Cache-Control", "min-fresh=30")], now: 20, expected: "fresh:20"),
        .init(
            name: "reuse-max-stale-any", section: "§5.2.1.2", stored: maxAge60,
            request: [("Cache-Control", "max-stale")], now: 1000, expected: "staleAllowed:1000:940"),
        .init(
            name: "reuse-max-stale-within", section: "§5.2.1.2", stored: maxAge60,
            request: [("Cache-Control", "max-stale=100")], now: 100, expected: "staleAllowed:100:40"),
        .init(
            name: "reuse-max-stale-exceeded", section: "§5.2.1.2", stored: maxAge60,
            request: [("Cache-Control", "max-stale=10")], now: 100, expected: "revalidate:stale"),
        .init(
            name: "reuse-must-revalidate-forbids-max-stale", section: "§5.2.2.2",
            stored: [("Cache-Control", "max-age=60, must-revalidate")], request: [("Cache-Control", "max-stale")],
            now: 100,
            expected: "revalidate:stale"),
        .init(
            name: "reuse-proxy-revalidate-forbids-stale-shared", section: "§5.2.2.8",
            stored: [("Cache-Control", "max-age=60, proxy-revalidate")], request: [("Cache-Control", "max-stale")],
            now: 100,
            expected: "revalidate:stale"),
        .init(
            name: "reuse-proxy-revalidate-ignored-private", section: "§5.2.2.8",
            stored: [("Cache-Control", "max-age=60, proxy-revalidate")], request: [("Cache-Control", "max-stale")],
            now: 100,
            configuration: privateConfiguration, expected: "staleAllowed:100:40"),
        .init(
            name: "reuse-s-maxage-implies-proxy-revalidate", section: "§5.2.2.10",
            stored: [("Cache-Control", "s-maxage=60")], request: [("Cache-Control", "max-stale")], now: 100,
            expected: "revalidate:stale"),
        .init(
            name: "reuse-stale-while-revalidate-within", section: "RFC 5861 §3",
            stored: [("Cache-Control", "max-age=60, stale-while-revalidate=30")], now: 80, expected: "swr:80"),
        .init(
            name: "reuse-stale-while-revalidate-expired", section: "RFC 5861 §3",
            stored: [("Cache-Control", "max-age=60, stale-while-revalidate=30")], now: 100, expected: "revalidate:stale"
        ),
        .init(
            name: "reuse-swr-not-with-must-revalidate", section: "§4.2.4",
            stored: [("Cache-Control", "max-age=60, stale-while-revalidate=30, must-revalidate")], now: 80,
            expected: "revalidate:stale"),
        .init(
            name: "reuse-stale-if-error-window", section: "RFC 5861 §4",
            stored: [("Cache-Control", "max-age=60, stale-if-error=600")], now: 100, expected: "revalidate:stale+sie"),
        .init(
            name: "reuse-stale-if-error-window-passed", section: "RFC 5861 §4",
            stored: [("Cache-Control", "max-age=60, stale-if-error=10")], now: 100, expected: "revalidate:stale"),
        .init(
            name: "reuse-stale-if-error-request-directive", section: "RFC 5861 §4", stored: maxAge60,
            request: [("Cache-Control", "stale-if-error=3600")], now: 100, expected: "revalidate:stale+sie"),
        .init(
            name: "reuse-stale-if-error-not-with-must-revalidate", section: "§5.2.2.2",
            stored: [("Cache-Control", "max-age=60, stale-if-error=600, must-revalidate")], now: 100,
            expected: "revalidate:stale"),
        .init(
            name: "reuse-stale-if-error-not-with-proxy-revalidate-shared", section: "§5.2.2.8",
            stored: [("Cache-Control", "max-age=60, stale-if-error=600, proxy-revalidate")], now: 100,
            expected: "revalidate:stale"),
        .init(
            name: "reuse-stale-if-error-with-proxy-revalidate-private", section: "§5.2.2.8, RFC 5861 §4",
            stored: [("Cache-Control", "max-age=60, stale-if-error=600, proxy-revalidate")], now: 100,
            configuration: CachePolicyConfiguration(mode: .private), expected: "revalidate:stale+sie"),
        .init(
            name: "reuse-stale-if-error-not-with-s-maxage-shared", section: "§5.2.2.10",
            stored: [("Cache-Control", "s-maxage=60, stale-if-error=600")], now: 100, expected: "revalidate:stale"),
        .init(
            name: "reuse-stale-if-error-not-with-no-cache", section: "§5.2.2.4",
            stored: [("Cache-Control", "no-cache, max-age=600, stale-if-error=600")], now: 100,
            expected: "revalidate:responseNoCache"),
        .init(
            name: "reuse-stale-if-error-not-with-request-no-cache", section: "§5.2.1.4",
            stored: [("Cache-Control", "max-age=60, stale-if-error=600")], request: [("Cache-Control", "no-cache")],
            now: 100,
            expected: "revalidate:requestNoCache"),
        .init(
            name: "reuse-only-if-cached-fresh", section: "§5.2.1.7", stored: maxAge60,
            request: [("Cache-Control", "only-if-cached")], now: 1, expected: "fresh:1"),
        .init(
            name: "reuse-only-if-cached-stale-504", section: "§5.2.1.7", stored: maxAge60,
            request: [("Cache-Control", "only-if-cached")], now: 100, expected: "504"),
        .init(
            name: "reuse-only-if-cached-with-max-stale", section: "§5.2.1.7", stored: maxAge60,
            request: [("Cache-Control", "only-if-cached, max-stale")], now: 100, expected: "staleAllowed:100:40"),
        .init(
            name: "reuse-only-if-cached-vary-mismatch-504", section: "§5.2.1.7",
            stored: maxAge60 + [("Vary", "Accept")], storedRequest: [("Accept", "a")],
            request: [("Cache-Control", "only-if-cached"), ("Accept", "b")], now: 1, expected: "504"),
        .init(
            name: "reuse-authorization-stored-without-permission", section: "§3.5", stored: maxAge60,
            storedRequest: [("Authorization", "Bearer a")], now: 1, expected: "miss:authorizationNotPermitted"),
        .init(
            name: "reuse-authorization-stored-with-public", section: "§3.5",
            stored: [("Cache-Control", "public, max-age=60")], storedRequest: [("Authorization", "Bearer a")], now: 1,
            expected: "fresh:1"),
        .init(
            name: "reuse-authorization-stored-with-s-maxage", section: "§3.5",
            stored: [("Cache-Control", "s-maxage=60")], storedRequest: [("Authorization", "Bearer a")], now: 1,
            expected: "fresh:1"),
        .init(
            name: "reuse-authorization-stored-with-must-revalidate", section: "§3.5",
            stored: [("Cache-Control", "must-revalidate, max-age=60")], storedRequest: [("Authorization", "Bearer a")],
            now: 1,
            expected: "fresh:1"),
        .init(
            name: "reuse-authorization-private-mode", section: "§3.5", stored: maxAge60,
            storedRequest: [("Authorization", "Bearer a")], now: 1, configuration: privateConfiguration,
            expected: "fresh:1"),
        .init(
            name: "reuse-private-never-in-shared", section: "§5.2.2.7",
            stored: [("Cache-Control", "private, max-age=60")], now: 1,
            expected: "miss:notReusableInSharedCache"),
        .init(
            name: "reuse-vary-match", section: "§4.1", stored: maxAge60 + [("Vary", "Accept-Encoding")],
            storedRequest: [("Accept-Encoding", "gzip")], request: [("Accept-Encoding", "gzip")], now: 1,
            expected: "fresh:1"),
        .init(
            name: "reuse-vary-match-normalised", section: "§4.1", stored: maxAge60 + [("Vary", "accept-encoding")],
            storedRequest: [("Accept-Encoding", "GZIP,br")], request: [("Accept-Encoding", " gzip,  BR ")], now: 1,
            expected: "fresh:1"),
        .init(
            name: "reuse-vary-mismatch", section: "§4.1", stored: maxAge60 + [("Vary", "Accept-Encoding")],
            storedRequest: [("Accept-Encoding", "gzip")], request: [("Accept-Encoding", "br")], now: 1,
            expected: "miss:varyMismatch"),
        .init(
            name: "reuse-vary-absent-matches-absent", section: "§4.1", stored: maxAge60 + [("Vary", "X-Tenant")],
            now: 1,
            expected: "fresh:1"),
        .init(
            name: "reuse-vary-absent-vs-present", section: "§4.1", stored: maxAge60 + [("Vary", "X-Tenant")],
            request: [("X-Tenant", "a")], now: 1, expected: "miss:varyMismatch"),
        .init(
            name: "reuse-vary-present-vs-absent", section: "§4.1", stored: maxAge60 + [("Vary", "X-Tenant")],
            storedRequest: [("X-Tenant", "a")], now: 1, expected: "miss:varyMismatch"),
        .init(
            name: "reuse-vary-star-never-matches", section: "§4.1", stored: maxAge60 + [("Vary", "*")], now: 1,
            expected: "miss:varyWildcard"),
        .init(
            name: "reuse-immutable-fresh-ignores-reload", section: "RFC 8246 §2",
            stored: [("Cache-Control", "max-age=600, immutable")], request: [("Cache-Control", "max-age=0")], now: 10,
            expected: "fresh:10"),
        .init(
            name: "reuse-immutable-force-reload-revalidates", section: "RFC 8246 §2",
            stored: [("Cache-Control", "max-age=600, immutable")], request: [("Cache-Control", "no-cache")], now: 10,
            expected: "revalidate:requestNoCache"),
        .init(
            name: "reuse-immutable-stale-revalidates", section: "RFC 8246 §2",
            stored: [("Cache-Control", "max-age=600, immutable")], now: 700, expected: "revalidate:stale"),
        .init(
            name: "reuse-heuristic-fresh", section: "§4.2.2",
            stored: [("Last-Modified", httpDate(-10_000)), ("Date", httpDate(0))], now: 500, expected: "fresh:500"),
        .init(
            name: "reuse-heuristic-stale", section: "§4.2.2",
            stored: [("Last-Modified", httpDate(-10_000)), ("Date", httpDate(0))], now: 1500,
            expected: "revalidate:stale"),
        .init(
            name: "reuse-expires-zero-stale", section: "§5.3", stored: [("Expires", "0"), ("Date", httpDate(0))],
            now: 0,
            expected: "revalidate:stale"),
        .init(
            name: "reuse-future-date-not-negative", section: "§4.2.3",
            stored: [("Cache-Control", "max-age=60"), ("Date", httpDate(10_000))], now: 5, expected: "fresh:5"),
        .init(
            name: "reuse-clock-backwards-age-zero", section: "docs/Reliability.md T18", stored: maxAge60, now: -3600,
            expected: "fresh:0"),
        .init(
            name: "reuse-invalid-max-age-stale", section: "§4.2.1",
            stored: [("Cache-Control", "max-age=1.5"), ("ETag", "\"a\"")],
            now: 0, expected: "revalidate:stale"),
        .init(
            name: "reuse-duplicate-conflicting-max-age-stale", section: "§4.2.1",
            stored: [("Cache-Control", "max-age=60"), ("Cache-Control", "max-age=0"), ("ETag", "\"a\"")], now: 0,
            expected: "revalidate:stale"),
    ]

    @Test(arguments: cases)
    func decides(_ testCase: ReuseCase) {
        let entry = stored(200, testCase.stored, method: testCase.storedMethod, requestHeaders: testCase.storedRequest)
        let decision = ReuseDecision.decide(
            request: request(testCase.method, testCase.request),
            stored: entry,
            now: at(testCase.now),
            configuration: testCase.configuration
        )
        #expect(summary(decision) == testCase.expected)
    }

    @Test("reuse-nothing-stored [§4]")
    func nothingStored() {
        #expect(ReuseDecision.decide(request: request(), stored: nil, now: t0) == .miss(.noStoredResponse))
        let onlyIfCached = request(.get, [("Cache-Control", "only-if-cached")])
        #expect(ReuseDecision.decide(request: onlyIfCached, stored: nil, now: t0) == .gatewayTimeout)
    }

    @Test("reuse-revalidation-carries-validators-and-window [§4.3.1, RFC 5861 §4]")
    func revalidationPayload() {
        let entry = stored(
            200,
            [
                ("Cache-Control", "max-age=60, stale-if-error=600"), ("ETag", "\"v1\""),
                ("Last-Modified", httpDate(-1000)), ("Date", httpDate(0)),
            ])
        guard case .revalidate(let revalidation) = ReuseDecision.decide(request: request(), stored: entry, now: at(100))
        else {
            Issue.record("expected a revalidation")
            return
        }
        #expect(revalidation.conditionalHeaders[.ifNoneMatch] == "\"v1\"")
        #expect(revalidation.conditionalHeaders[.ifModifiedSince] == httpDate(-1000))
        #expect(revalidation.ageSeconds == 100)
        // staleness 40 s, window 600 s → until now + 560 s.
        #expect(revalidation.staleIfErrorUntil == at(660))
    }
}
