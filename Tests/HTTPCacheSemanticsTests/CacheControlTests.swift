import HTTPCacheSemantics
import HTTPTypes
import Testing

private func cc(_ build: (inout CacheControl) -> Void = { _ in }) -> CacheControl {
    var value = CacheControl()
    build(&value)
    return value
}

/// What an invalid or conflicting freshness directive parses to: stale (max-age 0), and flagged.
private let invalidFreshness = cc {
    $0.maxAge = 0; $0.hasInvalidFreshness = true
}

struct CacheControlCase: Sendable, CustomTestStringConvertible {
    let name: String
    let section: String
    let input: String
    let expected: CacheControl
    var testDescription: String { "\(name) [\(section)]" }
}

@Suite("Cache-Control parsing (RFC 9111 §5.2, §1.2.2, §4.2.1)")
struct CacheControlTests {
    static let cases: [CacheControlCase] = [
        .init(name: "cc-max-age", section: "§5.2.2.1", input: "max-age=60", expected: cc { $0.maxAge = 60 }),
        .init(
            name: "cc-max-age-quoted-accepted", section: "§5.2", input: "max-age=\"60\"",
            expected: cc { $0.maxAge = 60 }),
        .init(
            name: "cc-max-age-negative-invalid-stale", section: "§1.2.2", input: "max-age=-1",
            expected: invalidFreshness),
        .init(
            name: "cc-max-age-fraction-invalid-stale", section: "§1.2.2", input: "max-age=1.5",
            expected: invalidFreshness),
        .init(
            name: "cc-max-age-empty-invalid-stale", section: "§1.2.2", input: "max-age=",
            expected: invalidFreshness),
        .init(
            name: "cc-max-age-no-argument-invalid-stale", section: "§5.2.2.1", input: "max-age",
            expected: invalidFreshness),
        .init(
            name: "cc-max-age-overflow-clamps-2^31", section: "§1.2.2", input: "max-age=99999999999999999999",
            expected: cc { $0.maxAge = 2_147_483_648 }),
        .init(
            name: "cc-max-age-exponent-invalid", section: "§1.2.2", input: "max-age=1e9",
            expected: invalidFreshness),
        .init(
            name: "cc-case-insensitive", section: "§5.2", input: "MAX-AGE=30, No-Store",
            expected: cc {
                $0.maxAge = 30; $0.noStore = true
            }),
        .init(
            name: "cc-duplicate-same-value-kept", section: "§4.2.1", input: "max-age=60, max-age=60",
            expected: cc { $0.maxAge = 60 }),
        .init(
            name: "cc-duplicate-conflict-stale", section: "§4.2.1", input: "max-age=60, max-age=0",
            expected: invalidFreshness),
        .init(
            name: "cc-no-cache-with-max-age-both-kept", section: "§4.2.1", input: "no-cache, max-age=60",
            expected: cc {
                $0.noCache = true; $0.maxAge = 60
            }),
        .init(
            name: "cc-unknown-directive-ignored", section: "§5.2.3", input: "foo=bar, max-age=5, community=\"UCI\"",
            expected: cc { $0.maxAge = 5 }),
        .init(
            name: "cc-stray-commas", section: "§5.6.1 (RFC 9110)", input: " , ,max-age=5,, ,public,",
            expected: cc {
                $0.maxAge = 5; $0.isPublic = true
            }),
        .init(
            name: "cc-unbalanced-quote-stops", section: "docs/Reliability.md §3.6",
            input: "max-age=5, private=\"x, no-store",
            expected: cc {
                $0.maxAge = 5; $0.isMalformed = true
            }),
        .init(
            name: "cc-quote-in-name-malformed", section: "docs/Reliability.md §3.6", input: "public, \"private",
            expected: cc {
                $0.isPublic = true; $0.isMalformed = true
            }),
        .init(
            name: "cc-qualified-no-cache", section: "§5.2.2.4", input: "no-cache=\"Set-Cookie, X-Foo\"",
            expected: cc {
                $0.noCache = true; $0.noCacheFieldNames = ["set-cookie", "x-foo"]
            }),
        .init(
            name: "cc-qualified-private", section: "§5.2.2.7", input: "private=\"X-User\"",
            expected: cc {
                $0.isPrivate = true; $0.privateFieldNames = ["x-user"]
            }),
        .init(
            name: "cc-s-maxage", section: "§5.2.2.10", input: "s-maxage=10, max-age=60",
            expected: cc {
                $0.sharedMaxAge = 10; $0.maxAge = 60
            }),
        .init(
            name: "cc-s-maxage-invalid-stale", section: "§4.2.1", input: "s-maxage=abc",
            expected: cc {
                $0.sharedMaxAge = 0; $0.hasInvalidFreshness = true
            }),
        .init(
            name: "cc-all-boolean-response-directives", section: "§5.2.2",
            input: "no-transform, must-revalidate, proxy-revalidate, must-understand, immutable",
            expected: cc {
                $0.noTransform = true; $0.mustRevalidate = true; $0.proxyRevalidate = true
                $0.mustUnderstand = true; $0.immutable = true
            }),
        .init(
            name: "cc-rfc5861-directives", section: "RFC 5861 §3–4",
            input: "stale-while-revalidate=30, stale-if-error=600",
            expected: cc {
                $0.staleWhileRevalidate = 30; $0.staleIfError = 600
            }),
        .init(
            name: "cc-swr-invalid-zero", section: "RFC 5861 §3", input: "stale-while-revalidate=-3",
            expected: cc { $0.staleWhileRevalidate = 0 }),
        .init(
            name: "cc-request-max-stale-no-value", section: "§5.2.1.2", input: "max-stale",
            expected: cc { $0.maxStale = .any }),
        .init(
            name: "cc-request-max-stale-value", section: "§5.2.1.2", input: "max-stale=30",
            expected: cc { $0.maxStale = .seconds(30) }),
        .init(
            name: "cc-request-max-stale-invalid-none", section: "§5.2.1.2", input: "max-stale=x",
            expected: cc { $0.maxStale = .seconds(0) }),
        .init(
            name: "cc-request-max-stale-duplicate-restrictive", section: "§4.2.1", input: "max-stale=30, max-stale=10",
            expected: cc { $0.maxStale = .seconds(10) }),
        .init(
            name: "cc-request-min-fresh", section: "§5.2.1.3", input: "min-fresh=20",
            expected: cc { $0.minFresh = 20 }),
        .init(
            name: "cc-request-min-fresh-invalid-restrictive", section: "§5.2.1.3", input: "min-fresh=-2",
            expected: cc { $0.minFresh = 2_147_483_648 }),
        .init(
            name: "cc-request-only-if-cached", section: "§5.2.1.7", input: "only-if-cached",
            expected: cc { $0.onlyIfCached = true }),
        .init(
            name: "cc-whitespace-around-equals", section: "§5.2", input: "max-age = 7",
            expected: cc { $0.maxAge = 7 }),
        .init(
            name: "cc-quoted-escape", section: "§5.6.4 (RFC 9110)", input: "private=\"a\\\"b\"",
            expected: cc {
                $0.isPrivate = true; $0.privateFieldNames = ["a\"b"]
            }),
        .init(name: "cc-empty", section: "§5.2", input: "", expected: cc()),
        .init(
            name: "cc-junk-after-value-skipped", section: "docs/Reliability.md §3.6", input: "max-age=60 junk, public",
            expected: cc {
                $0.maxAge = 60; $0.isPublic = true
            }),
    ]

    @Test(arguments: cases)
    func parses(_ testCase: CacheControlCase) {
        #expect(CacheControl(testCase.input) == testCase.expected)
    }

    @Test("cc-10000-directives-bounded [docs/Reliability.md §3.6]")
    func hugeListIsBounded() {
        let input = Array(repeating: "foo", count: 10_000).joined(separator: ", ") + ", no-store"
        let parsed = CacheControl(input)
        #expect(parsed.isMalformed)
        #expect(parsed.forcesStale)
    }

    @Test("cc-16KiB-bounded [docs/Reliability.md §3.6]")
    func hugeValueIsBounded() {
        let parsed = CacheControl("max-age=5, x=" + String(repeating: "a", count: 20_000))
        #expect(parsed.isMalformed)
        #expect(parsed.maxAge == 5)
    }

    @Test("cc-multiple-lines-combined [RFC 9110 §5.3]")
    func combinesLines() {
        let parsed = CacheControl(
            responseFields: fields([("Cache-Control", "public"), ("Cache-Control", "max-age=9")]))
        #expect(parsed.isPublic && parsed.maxAge == 9)
    }

    @Test("cc-pragma-no-cache-without-cache-control [§5.4]")
    func pragmaCounts() {
        #expect(CacheControl(requestFields: fields([("Pragma", "no-cache")])).noCache)
        #expect(!CacheControl(requestFields: fields([("Pragma", "no-cache"), ("Cache-Control", "max-age=5")])).noCache)
        #expect(!CacheControl(responseFields: fields([("Pragma", "no-cache")])).noCache)
    }

    static let deltaCases: [(String, Int?)] = [
        ("0", 0), ("60", 60), ("2147483648", 2_147_483_648), ("2147483649", 2_147_483_648),
        ("99999999999999999999999999", 2_147_483_648), ("-1", nil), ("1.5", nil), ("", nil), ("+5", nil), (" 5", nil),
        ("0x10", nil), ("٣", nil),
    ]

    @Test("delta-seconds [§1.2.2]", arguments: deltaCases)
    func deltaSeconds(_ input: String, _ expected: Int?) {
        #expect(DeltaSeconds.parse(input) == expected)
    }
}
