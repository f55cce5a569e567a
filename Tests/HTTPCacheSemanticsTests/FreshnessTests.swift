import Foundation
import HTTPCacheSemantics
import HTTPTypes
import Testing

struct FreshnessCase: Sendable, CustomTestStringConvertible {
    let name: String
    let section: String
    var status = 200
    let headers: [(String, String)]
    var shared = true
    var requestAt = 0
    var responseAt = 0
    let now: Int
    let lifetime: Int
    let source: Freshness.Source
    let age: Int
    var testDescription: String { "\(name) [\(section)]" }
}

@Suite("Freshness (RFC 9111 §4.2)")
struct FreshnessTests {
    static let day = 86_400
    static let cases: [FreshnessCase] = [
        .init(
            name: "freshness-max-age-fresh", section: "§4.2.1",
            headers: [("Cache-Control", "max-age=60"), ("Date", httpDate(0))],
            now: 30, lifetime: 60, source: .maxAge, age: 30),
        .init(
            name: "freshness-max-age-stale", section: "§4.2.1",
            headers: [("Cache-Control", "max-age=60"), ("Date", httpDate(0))],
            now: 61, lifetime: 60, source: .maxAge, age: 61),
        .init(
            name: "freshness-s-maxage-overrides-max-age-shared", section: "§5.2.2.10",
            headers: [("Cache-Control", "max-age=600, s-maxage=10")], now: 0, lifetime: 10, source: .sharedMaxAge,
            age: 0),
        .init(
            name: "freshness-s-maxage-ignored-private", section: "§5.2.2.10",
            headers: [("Cache-Control", "max-age=600, s-maxage=10")], shared: false, now: 0, lifetime: 600,
            source: .maxAge, age: 0),
        .init(
            name: "freshness-max-age-overrides-expires", section: "§5.2.2.1",
            headers: [("Cache-Control", "max-age=5"), ("Expires", httpDate(1000)), ("Date", httpDate(0))],
            now: 0, lifetime: 5, source: .maxAge, age: 0),
        .init(
            name: "freshness-expires-minus-date", section: "§4.2.1",
            headers: [("Expires", httpDate(300)), ("Date", httpDate(0))], now: 0, lifetime: 300, source: .expires,
            age: 0),
        .init(
            name: "freshness-expires-without-date-uses-response-time", section: "§4.2.1",
            headers: [("Expires", httpDate(120))], now: 0, lifetime: 120, source: .expires, age: 0),
        .init(
            name: "freshness-expires-zero-expired", section: "§5.3",
            headers: [("Expires", "0"), ("Date", httpDate(0))],
            now: 0, lifetime: 0, source: .expires, age: 0),
        .init(
            name: "freshness-expires-garbage-expired", section: "§5.3",
            headers: [("Expires", "soon"), ("Date", httpDate(0))],
            now: 0, lifetime: 0, source: .expires, age: 0),
        .init(
            name: "freshness-expires-in-past-zero", section: "§4.2.1",
            headers: [("Expires", httpDate(-100)), ("Date", httpDate(0))], now: 0, lifetime: 0, source: .expires, age: 0
        ),
        .init(
            name: "freshness-expires-duplicate-conflict-stale", section: "§4.2.1",
            headers: [("Expires", httpDate(100)), ("Expires", httpDate(200)), ("Date", httpDate(0))],
            now: 0, lifetime: 0, source: .expires, age: 0),
        .init(
            name: "freshness-expires-before-1970", section: "docs/Reliability.md §3.6",
            headers: [("Expires", "Mon, 01 Jan 1900 00:00:00 GMT"), ("Date", httpDate(0))], now: 0, lifetime: 0,
            source: .expires, age: 0),
        .init(
            name: "freshness-expires-year-9999-clamped", section: "§1.2.2",
            headers: [("Expires", "Fri, 31 Dec 9999 23:59:59 GMT"), ("Date", httpDate(0))],
            now: 0, lifetime: 2_147_483_648, source: .expires, age: 0),
        .init(
            name: "freshness-heuristic-10-percent", section: "§4.2.2",
            headers: [("Last-Modified", httpDate(-10_000)), ("Date", httpDate(0))], now: 0, lifetime: 1000,
            source: .heuristic, age: 0),
        .init(
            name: "freshness-heuristic-capped-one-day", section: "§4.2.2",
            headers: [("Last-Modified", httpDate(-100 * day)), ("Date", httpDate(0))], now: 0, lifetime: day,
            source: .heuristic, age: 0),
        .init(
            name: "freshness-heuristic-not-for-302", section: "§4.2.2", status: 302,
            headers: [("Last-Modified", httpDate(-10_000)), ("Date", httpDate(0))], now: 0, lifetime: 0, source: .none,
            age: 0),
        .init(
            name: "freshness-heuristic-public-any-status", section: "§4.2.2", status: 302,
            headers: [("Cache-Control", "public"), ("Last-Modified", httpDate(-10_000)), ("Date", httpDate(0))],
            now: 0, lifetime: 1000, source: .heuristic, age: 0),
        .init(
            name: "freshness-heuristic-not-with-explicit-expires", section: "§4.2.2",
            headers: [("Expires", "0"), ("Last-Modified", httpDate(-10_000)), ("Date", httpDate(0))],
            now: 0, lifetime: 0, source: .expires, age: 0),
        .init(
            name: "freshness-heuristic-last-modified-in-future-zero", section: "§4.2.2",
            headers: [("Last-Modified", httpDate(500)), ("Date", httpDate(0))], now: 0, lifetime: 0, source: .heuristic,
            age: 0),
        .init(
            name: "freshness-none-without-information", section: "§4.2.1", headers: [("Date", httpDate(0))],
            now: 0, lifetime: 0, source: .none, age: 0),
        .init(
            name: "freshness-invalid-max-age-stale", section: "§4.2.1", headers: [("Cache-Control", "max-age=1.5")],
            now: 0, lifetime: 0, source: .maxAge, age: 0),
        .init(
            name: "freshness-malformed-cache-control-stale", section: "docs/Reliability.md §3.6",
            headers: [("Cache-Control", "max-age=600, private=\"x")], now: 0, lifetime: 0, source: .invalid, age: 0),
        // §4.2.3 age calculation
        .init(
            name: "age-apparent-age-from-date", section: "§4.2.3",
            headers: [("Cache-Control", "max-age=600"), ("Date", httpDate(-50))],
            now: 0, lifetime: 600, source: .maxAge, age: 50),
        .init(
            name: "age-header-plus-response-delay", section: "§4.2.3",
            headers: [("Cache-Control", "max-age=600"), ("Age", "100"), ("Date", httpDate(0))], requestAt: -5,
            responseAt: 0,
            now: 10, lifetime: 600, source: .maxAge, age: 115),
        .init(
            name: "age-corrected-initial-age-takes-max", section: "§4.2.3",
            headers: [("Cache-Control", "max-age=600"), ("Age", "10"), ("Date", httpDate(-300))], now: 0,
            lifetime: 600, source: .maxAge, age: 300),
        .init(
            name: "age-resident-time", section: "§4.2.3",
            headers: [("Cache-Control", "max-age=600"), ("Date", httpDate(0))],
            now: 3600, lifetime: 600, source: .maxAge, age: 3600),
        .init(
            name: "age-date-in-future-never-negative", section: "§4.2.3",
            headers: [("Cache-Control", "max-age=600"), ("Date", httpDate(86_400))], now: 0, lifetime: 600,
            source: .maxAge, age: 0),
        .init(
            name: "age-clock-jumped-back-never-negative", section: "docs/Reliability.md T18",
            headers: [("Cache-Control", "max-age=600"), ("Date", httpDate(0))], now: -86_400, lifetime: 600,
            source: .maxAge, age: 0),
        .init(
            name: "age-response-before-request-never-negative", section: "§4.2.3",
            headers: [("Cache-Control", "max-age=600")], requestAt: 100, responseAt: 0, now: 0, lifetime: 600,
            source: .maxAge, age: 0),
        .init(
            name: "age-invalid-negative-ignored", section: "§5.1",
            headers: [("Cache-Control", "max-age=60"), ("Age", "-5")],
            now: 0, lifetime: 60, source: .maxAge, age: 0),
        .init(
            name: "age-invalid-text-ignored", section: "§5.1",
            headers: [("Cache-Control", "max-age=60"), ("Age", "abc")],
            now: 0, lifetime: 60, source: .maxAge, age: 0),
        .init(
            name: "age-invalid-exponent-ignored", section: "§5.1",
            headers: [("Cache-Control", "max-age=60"), ("Age", "1e9")],
            now: 0, lifetime: 60, source: .maxAge, age: 0),
        .init(
            name: "age-overflow-clamps-stale", section: "§1.2.2",
            headers: [("Cache-Control", "max-age=60"), ("Age", "99999999999999999999")],
            now: 0, lifetime: 60, source: .maxAge, age: 2_147_483_648),
        .init(
            name: "age-list-first-member", section: "§5.1",
            headers: [("Cache-Control", "max-age=60"), ("Age", "20, 40")],
            now: 0, lifetime: 60, source: .maxAge, age: 20),
        .init(
            name: "age-date-missing-uses-response-time", section: "§4.2.3", headers: [("Cache-Control", "max-age=60")],
            now: 25, lifetime: 60, source: .maxAge, age: 25),
        .init(
            name: "age-overflow-plus-resident-stays-clamped", section: "§1.2.2",
            headers: [("Cache-Control", "max-age=60"), ("Age", "2147483648")], now: 1_000_000,
            lifetime: 60, source: .maxAge, age: 2_147_483_648),
    ]

    @Test(arguments: cases)
    func computes(_ testCase: FreshnessCase) {
        let entry = stored(
            testCase.status, testCase.headers, requestTime: at(testCase.requestAt),
            responseTime: at(testCase.responseAt))
        let freshness = Freshness(
            stored: entry, now: at(testCase.now),
            configuration: testCase.shared ? sharedConfiguration : privateConfiguration)
        #expect(freshness.lifetimeSeconds == testCase.lifetime)
        #expect(freshness.source == testCase.source)
        #expect(freshness.currentAgeSeconds == testCase.age)
        #expect(freshness.isFresh == (testCase.lifetime > testCase.age))
    }

    @Test("freshness-heuristic-configurable-fraction [§4.2.2]")
    func heuristicConfigurable() {
        let configuration = CachePolicyConfiguration(heuristicPercent: 20, heuristicMaximumSeconds: 1500)
        let entry = stored(200, [("Last-Modified", httpDate(-10_000)), ("Date", httpDate(0))])
        #expect(Freshness(stored: entry, now: t0, configuration: configuration).lifetimeSeconds == 1500)
        let uncapped = CachePolicyConfiguration(heuristicPercent: 20)
        #expect(Freshness(stored: entry, now: t0, configuration: uncapped).lifetimeSeconds == 2000)
    }

    @Test(
        "freshness-heuristic-by-status [§4.2.2 / RFC 9110 §15.1]",
        arguments: [
            200, 201, 202, 203, 204, 206, 299, 300, 301, 302, 303, 307, 308, 400, 403, 404, 405, 410, 414, 429,
            500, 501, 502, 503, 504,
        ])
    func heuristicByStatus(_ code: Int) {
        let entry = stored(code, [("Last-Modified", httpDate(-10_000)), ("Date", httpDate(0))])
        let freshness = Freshness(stored: entry, now: t0, configuration: sharedConfiguration)
        let heuristic = [200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501].contains(code)
        #expect(freshness.source == (heuristic ? .heuristic : .none))
        #expect(freshness.lifetimeSeconds == (heuristic ? 1000 : 0))
    }
}
