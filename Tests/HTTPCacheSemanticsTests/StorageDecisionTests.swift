import Foundation
import HTTPCacheSemantics
import HTTPTypes
import Testing

struct StorageCase: Sendable, CustomTestStringConvertible {
    let name: String
    let section: String
    var method: HTTPRequest.Method = .get
    var requestHeaders: [(String, String)] = []
    var status = 200
    let headers: [(String, String)]
    var configuration = CachePolicyConfiguration()
    /// nil: storable.
    let expected: NotStorableReason?
    var testDescription: String { "\(name) [\(section)]" }
}

private let fresh = ("Cache-Control", "max-age=60")

@Suite("Storing responses (RFC 9111 §3, §3.5; RELIABILITY §3)")
struct StorageDecisionTests {
    static let cases: [StorageCase] = [
        .init(name: "store-max-age-200", section: "§3", headers: [fresh], expected: nil),
        .init(name: "store-head", section: "§3", method: .head, headers: [fresh], expected: nil),
        .init(name: "store-post-method-not-cacheable", section: "§3", method: .post, headers: [fresh], expected: .methodNotCacheable),
        .init(name: "store-put-method-not-cacheable", section: "§3", method: .put, headers: [fresh], expected: .methodNotCacheable),
        .init(name: "store-1xx-not-final", section: "§3", status: 103, headers: [fresh], expected: .statusNotFinal),
        .init(name: "store-600-not-understood", section: "§3", status: 600, headers: [fresh], expected: .statusNotFinal),
        .init(name: "store-206-not-stored", section: "§3.3", status: 206, headers: [fresh], expected: .partialContent),
        .init(name: "store-304-not-an-entry", section: "§4.3.4", status: 304, headers: [fresh], expected: .notModified),
        .init(name: "store-no-store-response", section: "§5.2.2.5", headers: [("Cache-Control", "no-store, max-age=60")],
              expected: .responseNoStore),
        .init(name: "store-no-store-request", section: "§5.2.1.5", requestHeaders: [("Cache-Control", "no-store")], headers: [fresh],
              expected: .requestNoStore),
        .init(name: "store-no-store-private-mode-too", section: "§5.2.2.5", headers: [("Cache-Control", "no-store, max-age=60")],
              configuration: CachePolicyConfiguration(mode: .private), expected: .responseNoStore),
        .init(name: "store-must-understand-known-status-ignores-no-store", section: "§5.2.2.3",
              headers: [("Cache-Control", "must-understand, no-store, max-age=60")], expected: nil),
        .init(name: "store-must-understand-unknown-status", section: "§5.2.2.3", status: 299,
              headers: [("Cache-Control", "must-understand, no-store, max-age=60")], expected: .mustUnderstandUnknownStatus),
        .init(name: "store-private-shared-refused", section: "§5.2.2.7", headers: [("Cache-Control", "private, max-age=60")],
              expected: .privateResponse),
        .init(name: "store-private-qualified-shared-refused", section: "§5.2.2.7",
              headers: [("Cache-Control", "private=\"X-User\", max-age=60")], expected: .privateResponse),
        .init(name: "store-private-in-private-mode", section: "§5.2.2.7", headers: [("Cache-Control", "private, max-age=60")],
              configuration: CachePolicyConfiguration(mode: .private), expected: nil),
        .init(name: "store-private-only-private-mode-permits", section: "§3", headers: [("Cache-Control", "private")],
              configuration: CachePolicyConfiguration(mode: .private), expected: .notReusable),
        .init(name: "store-authorization-without-permission", section: "§3.5", requestHeaders: [("Authorization", "Bearer t")],
              headers: [fresh], expected: .authorizationWithoutPermission),
        .init(name: "store-authorization-with-public", section: "§3.5", requestHeaders: [("Authorization", "Bearer t")],
              headers: [("Cache-Control", "public, max-age=60")], expected: nil),
        .init(name: "store-authorization-with-s-maxage", section: "§3.5", requestHeaders: [("Authorization", "Bearer t")],
              headers: [("Cache-Control", "s-maxage=60")], expected: nil),
        .init(name: "store-authorization-with-must-revalidate", section: "§3.5", requestHeaders: [("Authorization", "Bearer t")],
              headers: [("Cache-Control", "must-revalidate, max-age=60")], expected: nil),
        .init(name: "store-authorization-private-mode-allowed", section: "§3.5", requestHeaders: [("Authorization", "Bearer t")],
              headers: [fresh], configuration: CachePolicyConfiguration(mode: .private), expected: nil),
        .init(name: "store-set-cookie-shared-refused", section: "§7.3 / RELIABILITY §3.1",
              headers: [fresh, ("Set-Cookie", "session=abc")], expected: .setCookieInSharedCache),
        .init(name: "store-set-cookie-allowed-by-configuration", section: "§7.3",
              headers: [fresh, ("Set-Cookie", "session=abc")], configuration: CachePolicyConfiguration(allowSetCookie: true), expected: nil),
        .init(name: "store-set-cookie-private-mode", section: "§7.3", headers: [fresh, ("Set-Cookie", "session=abc")],
              configuration: CachePolicyConfiguration(mode: .private), expected: nil),
        .init(name: "store-request-cookie-shared-refused", section: "RELIABILITY §3.3", requestHeaders: [("Cookie", "id=1")],
              headers: [fresh], expected: .requestCookieInSharedCache),
        .init(name: "store-request-cookie-allowed-by-configuration", section: "RELIABILITY §3.3", requestHeaders: [("Cookie", "id=1")],
              headers: [fresh], configuration: CachePolicyConfiguration(allowRequestCookie: true), expected: nil),
        .init(name: "store-deception-css-without-freshness", section: "RELIABILITY §3.3", headers: [("Content-Type", "text/css")],
              expected: .notReusable),
        .init(name: "store-deception-css-with-cookie", section: "RELIABILITY §3.3 / T16", requestHeaders: [("Cookie", "sid=1")],
              headers: [("Content-Type", "text/css")], expected: .requestCookieInSharedCache),
        .init(name: "store-etag-only-revalidatable", section: "§3 / §4.3", headers: [("ETag", "\"v1\"")], expected: nil),
        .init(name: "store-last-modified-heuristic", section: "§4.2.2", headers: [("Last-Modified", httpDate(-10_000))], expected: nil),
        .init(name: "store-302-without-freshness", section: "§3", status: 302, headers: [("Location", "/x"), ("ETag", "\"a\"")],
              expected: .noExplicitFreshnessOrHeuristicStatus),
        .init(name: "store-302-with-max-age", section: "§3", status: 302, headers: [("Location", "/x"), fresh], expected: nil),
        .init(name: "store-301-heuristic-status", section: "§4.2.2", status: 301, headers: [("Location", "/x"), ("Last-Modified", httpDate(-100))],
              expected: nil),
        .init(name: "store-public-any-status", section: "§3", status: 302, headers: [("Cache-Control", "public"), ("ETag", "\"a\"")],
              expected: nil),
        .init(name: "store-expires-counts-as-explicit", section: "§3", headers: [("Expires", httpDate(100))], expected: nil),
        .init(name: "store-invalid-expires-explicit-but-stale", section: "§5.3", headers: [("Expires", "0")], expected: nil),
        .init(name: "store-s-maxage-ignored-private-mode", section: "§5.2.2.10", status: 302, headers: [("Cache-Control", "s-maxage=60")],
              configuration: CachePolicyConfiguration(mode: .private), expected: .noExplicitFreshnessOrHeuristicStatus),
        .init(name: "store-4xx-without-explicit-freshness", section: "RELIABILITY §3.2", status: 404,
              headers: [("Last-Modified", httpDate(-1000))], expected: .clientErrorWithoutExplicitFreshness),
        .init(name: "store-400-without-freshness-cpdos", section: "RELIABILITY §3.2 / T16", status: 400, headers: [],
              expected: .clientErrorWithoutExplicitFreshness),
        .init(name: "store-404-with-max-age", section: "RELIABILITY §3.2", status: 404, headers: [fresh], expected: nil),
        .init(name: "store-500-never-by-default", section: "RELIABILITY §3.2", status: 500, headers: [fresh], expected: .serverError),
        .init(name: "store-503-never-by-default", section: "RELIABILITY §3.2", status: 503, headers: [fresh], expected: .serverError),
        .init(name: "store-500-allowed-with-freshness", section: "RELIABILITY §3.2", status: 500, headers: [fresh],
              configuration: CachePolicyConfiguration(storeServerErrors: true), expected: nil),
        .init(name: "store-500-allowed-but-no-freshness", section: "RELIABILITY §3.2", status: 500, headers: [],
              configuration: CachePolicyConfiguration(storeServerErrors: true), expected: .serverError),
        .init(name: "store-vary-star-refused", section: "§4.1", headers: [fresh, ("Vary", "*")], expected: .varyWildcard),
        .init(name: "store-vary-star-in-list-refused", section: "§4.1", headers: [fresh, ("Vary", "Accept, *")], expected: .varyWildcard),
        .init(name: "store-vary-16-names", section: "RELIABILITY §3.5",
              headers: [fresh, ("Vary", (1...16).map { "X-H\($0)" }.joined(separator: ", "))], expected: nil),
        .init(name: "store-vary-17-names-refused", section: "RELIABILITY §3.5",
              headers: [fresh, ("Vary", (1...17).map { "X-H\($0)" }.joined(separator: ", "))], expected: .invalidOrOversizedVary),
        .init(name: "store-vary-invalid-name-refused", section: "RELIABILITY §3.6", headers: [fresh, ("Vary", "Accept, bad name")],
              expected: .invalidOrOversizedVary),
        .init(name: "store-malformed-cache-control-refused", section: "RELIABILITY §3.6",
              headers: [("Cache-Control", "max-age=60, private=\"oops")], expected: .malformedCacheControl),
        .init(name: "store-malformed-request-cache-control-refused", section: "RELIABILITY §3.6",
              requestHeaders: [("Cache-Control", "no-store=\"")], headers: [fresh], expected: .malformedCacheControl),
        .init(name: "store-max-age-invalid-with-validator", section: "§4.2.1", headers: [("Cache-Control", "max-age=-1"), ("ETag", "\"a\"")],
              expected: nil),
        .init(name: "store-257-fields-refused", section: "RELIABILITY §3.5",
              headers: [fresh] + (1...256).map { ("X-F\($0)", "v") }, expected: .invalidHeaders(.tooManyFields(count: 257))),
        .init(name: "store-field-line-over-8KiB-refused", section: "RELIABILITY §3.5",
              headers: [fresh, ("X-Big", String(repeating: "a", count: 8 * 1024))],
              expected: .invalidHeaders(.fieldLineTooLong(name: "X-Big", bytes: 8 * 1024 + 7))),
        .init(name: "store-header-block-over-64KiB-refused", section: "RELIABILITY §3.5",
              headers: [fresh] + (1...9).map { ("X-B\($0)", String(repeating: "b", count: 8000)) },
              expected: .invalidHeaders(.headerBlockTooLarge(bytes: 72_099))),
        .init(name: "store-oversized-error-response-refused", section: "RELIABILITY T16", status: 400,
              headers: (1...300).map { ("X-E\($0)", "e") }, expected: .invalidHeaders(.tooManyFields(count: 257))),
    ]

    @Test(arguments: cases)
    func decides(_ testCase: StorageCase) {
        let decision = StorageDecision.evaluate(
            request: request(testCase.method, testCase.requestHeaders),
            response: response(testCase.status, testCase.headers),
            responseTime: t0,
            configuration: testCase.configuration
        )
        if let expected = testCase.expected {
            #expect(decision == .notStorable(expected))
        } else {
            #expect(decision.isStorable, "\(decision)")
        }
    }

    @Test("store-payload-reports-findings [§3]")
    func payload() {
        let decision = StorageDecision.evaluate(
            request: request(),
            response: response(200, [("Cache-Control", "max-age=90"), ("ETag", "W/\"x\""), ("Vary", "Accept-Encoding")]),
            responseTime: t0
        )
        guard case .store(let found) = decision else {
            Issue.record("expected store, got \(decision)")
            return
        }
        #expect(found.freshnessLifetimeSeconds == 90)
        #expect(found.freshnessSource == .maxAge)
        #expect(found.hasValidator)
        #expect(found.vary.names == [.acceptEncoding])
        #expect(!found.ignoredNoStoreForMustUnderstand)
    }

    @Test("store-strips-hop-by-hop [RFC 9110 §7.6.1, §3.1]")
    func storedEntryStripsHopByHop() {
        let entry = StoredResponse(
            request: request(.get, [("Accept-Encoding", "gzip"), ("Accept", "x")]),
            response: response(200, [fresh, ("Connection", "close, X-Private"), ("X-Private", "1"), ("Keep-Alive", "t=5"),
                                     ("Vary", "accept-encoding")]),
            requestTime: t0, responseTime: t0
        )
        #expect(entry.headerFields[.cacheControl] == "max-age=60")
        #expect(!entry.headerFields.contains(HTTPField.Name("X-Private")!))
        #expect(!entry.headerFields.contains(.connection))
        #expect(entry.varyRequestFields == fields([("Accept-Encoding", "gzip")]))
    }
}
