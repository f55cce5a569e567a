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

@Suite("Storing responses (RFC 9111 §3, §3.5; docs/Reliability.md §3)")
struct StorageDecisionTests {
    static let cases: [StorageCase] = [
        .init(name: "store-max-age-200", section: "§3", headers: [fresh], expected: nil),
        .init(name: "store-head", section: "§3", method: .head, headers: [fresh], expected: nil),
        .init(
            name: "store-post-method-not-cacheable", section: "§3", method: .post, headers: [fresh],
            expected: .methodNotCacheable),
        .init(
            name: "store-put-method-not-cacheable", section: "§3", method: .put, headers: [fresh],
            expected: .methodNotCacheable),
        .init(name: "store-1xx-not-final", section: "§3", status: 103, headers: [fresh], expected: .statusNotFinal),
        .init(
            name: "store-600-not-understood", section: "§3", status: 600, headers: [fresh], expected: .statusNotFinal),
        .init(name: "store-206-not-stored", section: "§3.3", status: 206, headers: [fresh], expected: .partialContent),
        .init(name: "store-304-not-an-entry", section: "§4.3.4", status: 304, headers: [fresh], expected: .notModified),
        .init(
            name: "store-no-store-response", section: "§5.2.2.5", headers: [("Cache-Control", "no-store, max-age=60")],
            expected: .responseNoStore),
        .init(
            name: "store-no-store-request", section: "§5.2.1.5", requestHeaders: [("Cache-Control", "no-store")],
            headers: [fresh],
            expected: .requestNoStore),
        .init(
            name: "store-no-store-private-mode-too", section: "§5.2.2.5",
            headers: [("Cache-Control", "no-store, max-age=60")],
            configuration: CachePolicyConfiguration(mode: .private), expected: .responseNoStore),
        .init(
            name: "store-must-understand-known-status-ignores-no-store", section: "§5.2.2.3",
            headers: [("Cache-Control", "must-understand, no-store, max-age=60")], expected: nil),
        .init(
            name: "store-must-understand-unknown-status", section: "§5.2.2.3", status: 299,
            headers: [("Cache-Control", "must-understand, no-store, max-age=60")],
            expected: .mustUnderstandUnknownStatus),
        .init(
            name: "store-private-shared-refused", section: "§5.2.2.7",
            headers: [("Cache-Control", "private, max-age=60")],
            expected: .privateResponse),
        .init(
            name: "store-private-qualified-shared-refused", section: "§5.2.2.7",
            headers: [("Cache-Control", "private=\"X-User\", max-age=60")], expected: .privateResponse),
        .init(
            name: "store-private-in-private-mode", section: "§5.2.2.7",
            headers: [("Cache-Control", "private, max-age=60")],
            configuration: CachePolicyConfiguration(mode: .private), expected: nil),
        .init(
            name: "store-private-only-private-mode-permits", section: "§3", headers: [("Cache-Control", "private")],
            configuration: CachePolicyConfiguration(mode: .private), expected: .notReusable),
        .init(
            name: "store-authorization-without-permission", section: "§3.5",
            requestHeaders: [("Authorization", "Bearer t")],
            headers: [fresh], expected: .authorizationWithoutPermission),
        .init(
            name: "store-authorization-with-public", section: "§3.5", requestHeaders: [("Authorization", "Bearer t")],
            headers: [("Cache-Control", "public, max-age=60")], expected: nil),
        .init(
            name: "store-authorization-with-s-maxage", section: "§3.5", requestHeaders: [("Authorization", "Bearer t")],
            headers: [("Cache-Control", "s-maxage=60")], expected: nil),
        .init(
            name: "store-authorization-with-must-revalidate", section: "§3.5",
            requestHeaders: [("Authorization", "Bearer t")],
            headers: [("Cache-Control", "must-revalidate, max-age=60")], expected: nil),
        .init(
            name: "store-authorization-private-mode-allowed", section: "§3.5",
            requestHeaders: [("Authorization", "Bearer t")],
            headers: [fresh], configuration: CachePolicyConfiguration(mode: .private), expected: nil),
        .init(
            name: "store-set-cookie-shared-refused", section: "§7.3 / docs/Reliability.md §3.1",
            headers: [fresh, ("Set-Cookie", "session=abc")], expected: .setCookieInSharedCache),
        .init(
            name: "store-set-cookie-allowed-by-configuration", section: "§7.3",
            headers: [fresh, ("Set-Cookie", "session=abc")],
            configuration: CachePolicyConfiguration(allowSetCookie: true), expected: nil),
        .init(
            name: "store-set-cookie-private-mode", section: "§7.3", headers: [fresh, ("Set-Cookie", "session=abc")],
            configuration: CachePolicyConfiguration(mode: .private), expected: nil),
        .init(
            name: "store-request-cookie-shared-refused", section: "docs/Reliability.md §3.3",
            requestHeaders: [("Cookie", "id=1")],
            headers: [fresh], expected: .requestCookieInSharedCache),
        .init(
            name: "store-request-cookie-allowed-by-configuration", section: "docs/Reliability.md §3.3",
            requestHeaders: [("Cookie", "id=1")],
            headers: [fresh], configuration: CachePolicyConfiguration(allowRequestCookie: true), expected: nil),
        .init(
            name: "store-deception-css-without-freshness", section: "docs/Reliability.md §3.3",
            headers: [("Content-Type", "text/css")],
            expected: .notReusable),
        .init(
            name: "store-deception-css-with-cookie", section: "docs/Reliability.md §3.3 / T16",
            requestHeaders: [("Cookie", "sid=1")],
            headers: [("Content-Type", "text/css")], expected: .requestCookieInSharedCache),
        .init(
            name: "store-etag-only-revalidatable", section: "§3 / §4.3", headers: [("ETag", "\"v1\"")], expected: nil),
        .init(
            name: "store-last-modified-heuristic", section: "§4.2.2", headers: [("Last-Modified", httpDate(-10_000))],
            expected: nil),
        .init(
            name: "store-302-without-freshness", section: "§3", status: 302,
            headers: [("Location", "/x"), ("ETag", "\"a\"")],
            expected: .noExplicitFreshnessOrHeuristicStatus),
        .init(
            name: "store-302-with-max-age", section: "§3", status: 302, headers: [("Location", "/x"), fresh],
            expected: nil),
        .init(
            name: "store-301-heuristic-status", section: "§4.2.2", status: 301,
            headers: [("Location", "/x"), ("Last-Modified", httpDate(-100))],
            expected: nil),
        .init(
            name: "store-public-any-status", section: "§3", status: 302,
            headers: [("Cache-Control", "public"), ("ETag", "\"a\"")],
            expected: nil),
        .init(
            name: "store-expires-counts-as-explicit", section: "§3", headers: [("Expires", httpDate(100))],
            expected: nil),
        .init(
            name: "store-invalid-expires-explicit-but-stale", section: "§5.3", headers: [("Expires", "0")],
            expected: nil),
        .init(
            name: "store-s-maxage-ignored-private-mode", section: "§5.2.2.10", status: 302,
            headers: [("Cache-Control", "s-maxage=60")],
            configuration: CachePolicyConfiguration(mode: .private), expected: .noExplicitFreshnessOrHeuristicStatus),
        .init(name: "store-404-with-max-age", section: "§3", status: 404, headers: [fresh], expected: nil),
        .init(
            name: "store-500-allowed-with-freshness", section: "§3", status: 500, headers: [fresh],
            configuration: CachePolicyConfiguration(storeServerErrors: true), expected: nil),
        .init(
            name: "store-500-refused-when-configured", section: "§7.1", status: 500, headers: [fresh],
            configuration: CachePolicyConfiguration(storeServerErrors: false), expected: .serverError),
        .init(
            name: "store-500-without-freshness", section: "§3", status: 500, headers: [("ETag", "\"a\"")],
            expected: .noExplicitFreshnessOrHeuristicStatus),
        .init(
            name: "store-vary-star-refused", section: "§4.1", headers: [fresh, ("Vary", "*")], expected: .varyWildcard),
        .init(
            name: "store-vary-star-in-list-refused", section: "§4.1", headers: [fresh, ("Vary", "Accept, *")],
            expected: .varyWildcard),
        .init(
            name: "store-vary-16-names", section: "docs/Reliability.md §3.5",
            headers: [fresh, ("Vary", (1...16).map { "X-H\($0)" }.joined(separator: ", "))], expected: nil),
        .init(
            name: "store-vary-17-names-refused", section: "docs/Reliability.md §3.5",
            headers: [fresh, ("Vary", (1...17).map { "X-H\($0)" }.joined(separator: ", "))],
            expected: .invalidOrOversizedVary),
        .init(
            name: "store-vary-invalid-name-refused", section: "docs/Reliability.md §3.6",
            headers: [fresh, ("Vary", "Accept, bad name")],
            expected: .invalidOrOversizedVary),
        .init(
            name: "store-malformed-cache-control-refused", section: "docs/Reliability.md §3.6",
            headers: [("Cache-Control", "max-age=60, private=\"oops")], expected: .malformedCacheControl),
        .init(
            name: "store-malformed-request-cache-control-refused", section: "docs/Reliability.md §3.6",
            requestHeaders: [("Cache-Control", "no-store=\"")], headers: [fresh], expected: .malformedCacheControl),
        .init(
            name: "store-max-age-invalid-with-validator", section: "§4.2.1",
            headers: [("Cache-Control", "max-age=-1"), ("ETag", "\"a\"")],
            expected: nil),
        .init(
            name: "store-257-fields-refused", section: "docs/Reliability.md §3.5",
            headers: [fresh] + (1...256).map { ("X-F\($0)", "v") },
            expected: .invalidHeaders(.tooManyFields(count: 257))),
        .init(
            name: "store-field-line-over-8KiB-refused", section: "docs/Reliability.md §3.5",
            headers: [fresh, ("X-Big", String(repeating: "a", count: 8 * 1024))],
            expected: .invalidHeaders(.fieldLineTooLong(name: "X-Big", bytes: 8 * 1024 + 7))),
        .init(
            name: "store-header-block-over-64KiB-refused", section: "docs/Reliability.md §3.5",
            headers: [fresh] + (1...9).map { ("X-B\($0)", String(repeating: "b", count: 8000)) },
            expected: .invalidHeaders(.headerBlockTooLarge(bytes: 72_099))),
        .init(
            name: "store-oversized-error-response-refused", section: "docs/Reliability.md T16", status: 400,
            headers: (1...300).map { ("X-E\($0)", "e") }, expected: .invalidHeaders(.tooManyFields(count: 257))),
    ]

    /// Each status family with explicit freshness, heuristic freshness
    /// (Last-Modified only) and the poisoning guard of ``StorageDecision`` (RFC 9111 §7.1).
    static let statusCases: [StorageCase] = {
        let lastModified = ("Last-Modified", httpDate(-10_000))
        let privateMode = CachePolicyConfiguration(mode: .private)
        var cases: [StorageCase] = []
        // RFC 9111 §3: explicit freshness makes any final status storable (bar 206 and 304)...
        for code in [
            200, 201, 202, 203, 204, 299, 300, 301, 302, 303, 307, 308, 404, 410, 414, 500, 501, 502, 503, 504,
            599,
        ] {
            cases.append(
                .init(name: "status-\(code)-max-age", section: "§3", status: code, headers: [fresh], expected: nil))
        }
        for code in [203, 302, 410, 503] {
            cases.append(
                .init(
                    name: "status-\(code)-expires", section: "§3 / §5.3", status: code,
                    headers: [("Expires", httpDate(600)), ("Date", httpDate(0))], expected: nil))
            cases.append(
                .init(
                    name: "status-\(code)-s-maxage", section: "§3 / §5.2.2.10", status: code,
                    headers: [("Cache-Control", "s-maxage=60")], expected: nil))
        }
        // ...and so does `public` with a validator (its heuristic freshness comes from Last-Modified).
        for code in [201, 302, 500, 503] {
            cases.append(
                .init(
                    name: "status-\(code)-public-last-modified", section: "§3 / §4.2.2", status: code,
                    headers: [("Cache-Control", "public"), lastModified], expected: nil))
        }
        // RFC 9110 §15.1: the heuristically cacheable codes need no explicit freshness.
        for code in [200, 203, 204, 300, 301, 308, 404, 410, 414, 501] {
            cases.append(
                .init(
                    name: "status-\(code)-heuristic", section: "§4.2.2 / RFC 9110 §15.1", status: code,
                    headers: [lastModified], expected: nil))
        }
        // A 405 is heuristically cacheable, but in a shared cache it answers the method a request
        // says it uses (method-override fields): like the other 4xx, it needs s-maxage there.
        cases += [
            .init(
                name: "status-405-heuristic-shared-guard", section: "§7.1", status: 405, headers: [lastModified],
                expected: .clientErrorWithoutSharedMaxAge),
            .init(
                name: "status-405-heuristic-private", section: "§4.2.2 / RFC 9110 §15.1", status: 405,
                headers: [lastModified], configuration: privateMode, expected: nil),
        ]
        // The other codes do.
        for code in [201, 202, 299, 302, 303, 307, 500, 502, 503, 504, 599] {
            cases.append(
                .init(
                    name: "status-\(code)-not-heuristic", section: "§3 / RFC 9110 §15.1", status: code,
                    headers: [lastModified], expected: .noExplicitFreshnessOrHeuristicStatus))
        }
        // RFC 9111 §7.1: in a shared cache, a 4xx that may answer what the key does not hold
        // needs s-maxage, whatever its max-age or Expires; an unrecognised 4xx counts as 400.
        for code in [400, 403, 405, 406, 411, 412, 413, 416, 417, 421, 429, 431, 451, 499] {
            cases.append(
                .init(
                    name: "status-\(code)-max-age-shared-guard", section: "§7.1", status: code, headers: [fresh],
                    expected: .clientErrorWithoutSharedMaxAge))
            cases.append(
                .init(
                    name: "status-\(code)-s-maxage-shared", section: "§7.1 / §5.2.2.10", status: code,
                    headers: [("Cache-Control", "max-age=60, s-maxage=60")], expected: nil))
            cases.append(
                .init(
                    name: "status-\(code)-max-age-private", section: "§3 / §7.1", status: code, headers: [fresh],
                    configuration: privateMode, expected: nil))
        }
        cases += [
            .init(
                name: "status-400-expires-shared-guard", section: "§7.1", status: 400,
                headers: [("Expires", httpDate(600)), ("Date", httpDate(0))], expected: .clientErrorWithoutSharedMaxAge),
            .init(
                name: "status-431-public-max-age-shared-guard", section: "§7.1", status: 431,
                headers: [("Cache-Control", "public, max-age=600")], expected: .clientErrorWithoutSharedMaxAge),
            .init(
                name: "status-400-heuristic-private-not-heuristic", section: "RFC 9110 §15.1", status: 400,
                headers: [lastModified],
                configuration: privateMode, expected: .noExplicitFreshnessOrHeuristicStatus),
            .init(
                name: "status-413-targeted-s-maxage", section: "§7.1 / RFC 9213", status: 413,
                headers: [("CDN-Cache-Control", "s-maxage=60"), ("Cache-Control", "max-age=60")],
                configuration: {
                    var c = CachePolicyConfiguration(); c.targetedFields = [CachePolicyConfiguration.cdnCacheControl];
                    return c
                }(),
                expected: nil),
            .init(
                name: "status-503-store-server-errors-off", section: "§7.1", status: 503, headers: [fresh],
                configuration: CachePolicyConfiguration(storeServerErrors: false), expected: .serverError),
            .init(
                name: "status-501-heuristic-store-server-errors-off", section: "§7.1", status: 501,
                headers: [lastModified],
                configuration: CachePolicyConfiguration(storeServerErrors: false), expected: .serverError),
            .init(
                name: "status-206-max-age", section: "§3.3", status: 206, headers: [fresh], expected: .partialContent),
            .init(name: "status-304-max-age", section: "§4.3.4", status: 304, headers: [fresh], expected: .notModified),
            .init(
                name: "status-103-not-final", section: "§3", status: 103, headers: [fresh], expected: .statusNotFinal),
        ]
        return cases
    }()

    @Test(arguments: statusCases)
    func statusCodes(_ testCase: StorageCase) {
        decides(testCase)
    }

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
            response: response(
                200, [("Cache-Control", "max-age=90"), ("ETag", "W/\"x\""), ("Vary", "Accept-Encoding")]),
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
            response: response(
                200,
                [
                    fresh, ("Connection", "close, X-Private"), ("X-Private", "1"), ("Keep-Alive", "t=5"),
                    ("Vary", "accept-encoding"),
                ]),
            requestTime: t0, responseTime: t0
        )
        #expect(entry.headerFields[.cacheControl] == "max-age=60")
        #expect(!entry.headerFields.contains(HTTPField.Name("X-Private")!))
        #expect(!entry.headerFields.contains(.connection))
        #expect(entry.varyRequestFields == fields([("Accept-Encoding", "gzip")]))
    }
}
