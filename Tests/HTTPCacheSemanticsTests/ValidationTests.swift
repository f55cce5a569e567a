import Foundation
import HTTPCacheSemantics
import HTTPTypes
import Testing

struct ConditionalCase: Sendable, CustomTestStringConvertible {
    let name: String
    let section: String
    let stored: [[(String, String)]]
    let ifNoneMatch: String?
    let ifModifiedSince: String?
    var testDescription: String { "\(name) [\(section)]" }
}

struct SelectionCase: Sendable, CustomTestStringConvertible {
    let name: String
    let section: String
    let stored: [(String, String)]
    let notModified: [(String, String)]
    /// Whether the conditional request was built from this stored response alone.
    var validatedAlone = true
    let selects: Bool
    var testDescription: String { "\(name) [\(section)]" }
}

@Suite("Validation (RFC 9111 §4.3, §3.2)")
struct ValidationTests {
    static let conditionalCases: [ConditionalCase] = [
        .init(
            name: "validate-etag-if-none-match", section: "§4.3.1", stored: [[("ETag", "\"v1\"")]],
            ifNoneMatch: "\"v1\"", ifModifiedSince: nil),
        .init(
            name: "validate-weak-etag-sent", section: "§4.3.1", stored: [[("ETag", "W/\"v1\"")]],
            ifNoneMatch: "W/\"v1\"", ifModifiedSince: nil),
        .init(
            name: "validate-last-modified-if-modified-since", section: "§4.3.1",
            stored: [[("Last-Modified", "Sun, 06 Nov 1994 08:49:37 GMT")]], ifNoneMatch: nil,
            ifModifiedSince: "Sun, 06 Nov 1994 08:49:37 GMT"),
        .init(
            name: "validate-rfc850-last-modified-reformatted", section: "§4.3.1 / RFC 9110 §5.6.7",
            stored: [[("Last-Modified", "Sunday, 06-Nov-94 08:49:37 GMT")]], ifNoneMatch: nil,
            ifModifiedSince: "Sun, 06 Nov 1994 08:49:37 GMT"),
        .init(
            name: "validate-both-validators", section: "§4.3.1",
            stored: [[("ETag", "\"v1\""), ("Last-Modified", "Sun, 06 Nov 1994 08:49:37 GMT")]], ifNoneMatch: "\"v1\"",
            ifModifiedSince: "Sun, 06 Nov 1994 08:49:37 GMT"),
        .init(
            name: "validate-all-stored-etags", section: "§4.3.1",
            stored: [
                [("ETag", "\"a\""), ("Last-Modified", httpDate(-5))], [("ETag", "W/\"b\"")], [("ETag", "\"a\"")],
            ],
            ifNoneMatch: "\"a\", W/\"b\"", ifModifiedSince: nil),
        .init(
            name: "validate-no-validator-unconditional", section: "§4.3.1", stored: [[("Cache-Control", "max-age=1")]],
            ifNoneMatch: nil, ifModifiedSince: nil),
        .init(
            name: "validate-date-not-used-as-validator", section: "§4.3.1", stored: [[("Date", httpDate(0))]],
            ifNoneMatch: nil, ifModifiedSince: nil),
        .init(
            name: "validate-invalid-etag-ignored", section: "RFC 9110 §8.8.3", stored: [[("ETag", "unquoted")]],
            ifNoneMatch: nil, ifModifiedSince: nil),
        .init(
            name: "validate-invalid-last-modified-ignored", section: "RFC 9110 §13.1.3",
            stored: [[("Last-Modified", "yesterday")]],
            ifNoneMatch: nil, ifModifiedSince: nil),
    ]

    @Test(arguments: conditionalCases)
    func conditionalHeaders(_ testCase: ConditionalCase) {
        let entries = testCase.stored.map { stored(200, $0) }
        let headers = ConditionalRequest.headers(for: entries)
        #expect(headers[.ifNoneMatch] == testCase.ifNoneMatch)
        #expect(headers[.ifModifiedSince] == testCase.ifModifiedSince)
    }

    static let selectionCases: [SelectionCase] = [
        .init(
            name: "304-strong-etag-match", section: "§4.3.4", stored: [("ETag", "\"v1\"")],
            notModified: [("ETag", "\"v1\"")],
            selects: true),
        .init(
            name: "304-strong-etag-mismatch", section: "§4.3.4", stored: [("ETag", "\"v1\"")],
            notModified: [("ETag", "\"v2\"")],
            selects: false),
        .init(
            name: "304-strong-vs-stored-weak-no", section: "§4.3.4 / RFC 9110 §8.8.3.2", stored: [("ETag", "W/\"v1\"")],
            notModified: [("ETag", "\"v1\"")], selects: false),
        .init(
            name: "304-weak-etag-weak-match", section: "§4.3.4", stored: [("ETag", "\"v1\"")],
            notModified: [("ETag", "W/\"v1\"")],
            selects: true),
        .init(
            name: "304-weak-etag-mismatch", section: "§4.3.4", stored: [("ETag", "W/\"v1\"")],
            notModified: [("ETag", "W/\"v9\"")],
            selects: false),
        .init(
            name: "304-etag-stored-has-none", section: "§4.3.4", stored: [("Last-Modified", httpDate(-10))],
            notModified: [("ETag", "\"v1\"")], selects: false),
        .init(
            name: "304-last-modified-match", section: "§4.3.4", stored: [("Last-Modified", httpDate(-10))],
            notModified: [("Last-Modified", httpDate(-10))], selects: true),
        .init(
            name: "304-last-modified-mismatch", section: "§4.3.4", stored: [("Last-Modified", httpDate(-10))],
            notModified: [("Last-Modified", httpDate(-5))], selects: false),
        .init(
            name: "304-no-validator-stored-none", section: "§4.3.4", stored: [("Cache-Control", "max-age=5")],
            notModified: [("Cache-Control", "max-age=9")], selects: true),
        .init(
            name: "304-no-validator-stored-has-etag-validated-alone", section: "§4.3.4 / §4.3.3",
            stored: [("ETag", "\"v1\"")],
            notModified: [("Cache-Control", "max-age=9")], selects: true),
        .init(
            name: "304-no-validator-stored-has-last-modified-validated-alone", section: "§4.3.4 / §4.3.3",
            stored: [("Last-Modified", httpDate(-10))], notModified: [("Content-Type", "text/plain")], selects: true),
        .init(
            name: "304-no-validator-stored-has-etag-among-several", section: "§4.3.4", stored: [("ETag", "\"v1\"")],
            notModified: [("Cache-Control", "max-age=9")], validatedAlone: false, selects: false),
        .init(
            name: "304-no-validator-stored-none-among-several", section: "§4.3.4",
            stored: [("Cache-Control", "max-age=5")],
            notModified: [("Cache-Control", "max-age=9")], validatedAlone: false, selects: true),
        .init(
            name: "304-invalid-etag-is-no-validator", section: "§4.3.4 / RFC 9110 §8.8.3", stored: [("ETag", "\"v1\"")],
            notModified: [("ETag", "v2")], selects: true),
        .init(
            name: "304-strong-etag-names-other-validated-alone", section: "§4.3.4", stored: [("ETag", "\"v1\"")],
            notModified: [("ETag", "\"v2\"")], validatedAlone: true, selects: false),
        .init(
            name: "304-last-modified-names-other-validated-alone", section: "§4.3.4",
            stored: [("ETag", "\"v1\""), ("Last-Modified", httpDate(-10))],
            notModified: [("Last-Modified", httpDate(-5))],
            validatedAlone: true, selects: false),
    ]

    @Test(arguments: selectionCases)
    func selection(_ testCase: SelectionCase) {
        let selects = NotModifiedUpdate.selects(
            stored: stored(200, testCase.stored), notModified: fields(testCase.notModified),
            validatedAlone: testCase.validatedAlone)
        #expect(selects == testCase.selects)
    }

    struct ValidatorlessCase: Sendable, CustomTestStringConvertible {
        let name: String
        let section: String
        let stored: [(String, String)]
        var requestHeaders: [(String, String)] = []
        let reason: ReuseDecision.RevalidationReason
        var testDescription: String { "\(name) [\(section)]" }
    }

    /// The 304 carries only Content-Type (no ETag, no Last-Modified), as many
    /// origins send it; the conditional request was built from the one stored response.
    static let validatorlessCases: [ValidatorlessCase] = [
        .init(
            name: "304-without-validator-must-revalidate", section: "§4.3.4 / §5.2.2.2",
            stored: [("ETag", "\"abcd\""), ("Cache-Control", "max-age=2, must-revalidate")], reason: .stale),
        .init(
            name: "304-without-validator-no-cache", section: "§4.3.4 / §5.2.2.4",
            stored: [("ETag", "\"abcd\""), ("Cache-Control", "no-cache")], reason: .responseNoCache),
        .init(
            name: "304-without-validator-last-modified", section: "§4.3.4 / §4.3.1",
            stored: [("Last-Modified", httpDate(-3600)), ("Cache-Control", "max-age=2")], reason: .stale),
        .init(
            name: "304-without-validator-vary", section: "§4.3.4 / §4.1",
            stored: [("ETag", "\"abcd\""), ("Cache-Control", "max-age=2"), ("Vary", "Accept-Encoding")],
            requestHeaders: [("Accept-Encoding", "gzip")], reason: .stale),
    ]

    @Test(arguments: validatorlessCases)
    func notModifiedWithoutValidator(_ testCase: ValidatorlessCase) {
        // Given: a stale (or no-cache) stored response the cache revalidates by itself.
        let entry = stored(
            200, testCase.stored + [("Content-Type", "text/old"), ("Date", httpDate(0))],
            requestHeaders: testCase.requestHeaders)
        let decision = ReuseDecision.decide(request: request(.get, testCase.requestHeaders), stored: entry, now: at(10))
        guard case .revalidate(let revalidation) = decision else {
            Issue.record("expected revalidate, got \(decision)")
            return
        }
        #expect(revalidation.reason == testCase.reason)
        #expect(!revalidation.conditionalHeaders.isEmpty)
        // When: the origin's 304 names no validator.
        let outcome = RevalidationOutcome.evaluate(
            response: response(304, [("Content-Type", "text/new"), ("Date", httpDate(10))]),
            stored: entry, staleIfErrorUntil: nil, requestTime: at(10), responseTime: at(10), now: at(10))
        // Then: it answers for the stored response, which is updated (§3.2) and served.
        guard case .notModified(let updated) = outcome else {
            Issue.record("expected notModified, got \(outcome)")
            return
        }
        #expect(updated.headerFields[.contentType] == "text/new")
        #expect(updated.headerFields[.date] == httpDate(10))
        #expect(updated.headerFields[.eTag] == entry.headerFields[.eTag])
        #expect(updated.headerFields[.lastModified] == entry.headerFields[.lastModified])
        #expect(updated.varyRequestFields == entry.varyRequestFields)
    }

    @Test("304-merge-replaces-fields-keeps-protected [§3.2]")
    func merge() {
        // Given
        let storedFields = fields([
            ("Content-Type", "text/plain"), ("Content-Length", "5"), ("Content-Encoding", "gzip"), ("ETag", "\"v1\""),
            ("Cache-Control", "max-age=10"), ("X-Old", "1"), ("X-Multi", "a"), ("X-Multi", "b"),
        ])
        let notModified = fields([
            ("Cache-Control", "max-age=600"), ("Content-Length", "0"), ("Content-Encoding", "br"),
            ("Transfer-Encoding", "chunked"),
            ("Content-Range", "bytes 0-1/2"), ("X-Multi", "c"), ("Connection", "X-Hop"), ("X-Hop", "1"),
            ("Keep-Alive", "timeout=5"),
            ("Date", httpDate(100)),
        ])
        // When
        let merged = NotModifiedUpdate.merge(stored: storedFields, notModified: notModified)
        // Then
        #expect(merged[.cacheControl] == "max-age=600")
        #expect(merged[.contentLength] == "5")
        #expect(merged[.contentEncoding] == "gzip")
        #expect(!merged.contains(.transferEncoding))
        #expect(!merged.contains(.contentRange))
        #expect(merged[values: HTTPField.Name("X-Multi")!] == ["c"])
        #expect(merged[HTTPField.Name("X-Old")!] == "1")
        #expect(!merged.contains(HTTPField.Name("X-Hop")!))
        #expect(!merged.contains(.connection))
        #expect(merged[.date] == httpDate(100))
        #expect(merged[.contentType] == "text/plain")
    }

    @Test("304-updates-stored-and-times [§4.3.4, §4.2.3]")
    func notModifiedOutcome() {
        let entry = stored(200, [("Cache-Control", "max-age=60"), ("ETag", "\"v1\""), ("Date", httpDate(0))])
        let outcome = RevalidationOutcome.evaluate(
            response: response(304, [("ETag", "\"v1\""), ("Cache-Control", "max-age=120"), ("Date", httpDate(500))]),
            stored: entry, staleIfErrorUntil: nil, requestTime: at(499), responseTime: at(500), now: at(500)
        )
        guard case .notModified(let updated) = outcome else {
            Issue.record("expected notModified, got \(outcome)")
            return
        }
        #expect(updated.headerFields[.cacheControl] == "max-age=120")
        #expect(updated.responseTime == at(500))
        // The refreshed entry is fresh again: 1 s response delay + 10 s resident (§4.2.3).
        #expect(ReuseDecision.decide(request: request(), stored: updated, now: at(510)) == .fresh(ageSeconds: 11))
    }

    struct OutcomeCase: Sendable, CustomTestStringConvertible {
        let name: String
        let section: String
        let storedCacheControl: String
        let status: Int?
        let windowOpen: Bool
        let expected: String
        var testDescription: String { "\(name) [\(section)]" }
    }

    static let outcomeCases: [OutcomeCase] = [
        .init(
            name: "revalidation-304-mismatch", section: "§4.3.4", storedCacheControl: "max-age=60", status: 304,
            windowOpen: false,
            expected: "notModifiedMismatch"),
        .init(
            name: "revalidation-200-replaces", section: "§4.3.3", storedCacheControl: "max-age=60", status: 200,
            windowOpen: false,
            expected: "replace"),
        .init(
            name: "revalidation-404-replaces", section: "§4.3.3", storedCacheControl: "max-age=60", status: 404,
            windowOpen: true,
            expected: "replace"),
        .init(
            name: "revalidation-500-forwarded", section: "§4.3.3", storedCacheControl: "max-age=60", status: 500,
            windowOpen: false,
            expected: "forwardError"),
        .init(
            name: "revalidation-503-stale-if-error", section: "RFC 5861 §4",
            storedCacheControl: "max-age=60, stale-if-error=600",
            status: 503, windowOpen: true, expected: "serveStale"),
        .init(
            name: "revalidation-500-must-revalidate-504", section: "§5.2.2.2",
            storedCacheControl: "max-age=60, must-revalidate",
            status: 500, windowOpen: true, expected: "gatewayTimeout"),
        .init(
            name: "revalidation-unreachable-stale-if-error", section: "RFC 5861 §4",
            storedCacheControl: "max-age=60, stale-if-error=60",
            status: nil, windowOpen: true, expected: "serveStale"),
        .init(
            name: "revalidation-unreachable-no-window-504", section: "§5.2.2.2", storedCacheControl: "max-age=60",
            status: nil, windowOpen: false, expected: "gatewayTimeout"),
        .init(
            name: "revalidation-unreachable-must-revalidate-504", section: "§5.2.2.2",
            storedCacheControl: "max-age=60, must-revalidate",
            status: nil, windowOpen: true, expected: "gatewayTimeout"),
        .init(
            name: "revalidation-unreachable-window-closed-504", section: "RFC 5861 §4",
            storedCacheControl: "max-age=60",
            status: nil, windowOpen: false, expected: "gatewayTimeout"),
        .init(
            name: "revalidation-unreachable-proxy-revalidate-504", section: "§5.2.2.8",
            storedCacheControl: "max-age=60, proxy-revalidate, stale-if-error=600", status: nil, windowOpen: true,
            expected: "gatewayTimeout"),
        .init(
            name: "revalidation-unreachable-s-maxage-504", section: "§5.2.2.10",
            storedCacheControl: "s-maxage=60, stale-if-error=600", status: nil, windowOpen: true,
            expected: "gatewayTimeout"),
    ]

    @Test(arguments: outcomeCases)
    func outcomes(_ testCase: OutcomeCase) {
        let entry = stored(200, [("Cache-Control", testCase.storedCacheControl), ("ETag", "\"v1\"")])
        let until: Date? = testCase.windowOpen ? at(1000) : at(10)
        let outcome: RevalidationOutcome
        if let status = testCase.status {
            let headers = status == 304 ? [("ETag", "\"other\"")] : []
            outcome = RevalidationOutcome.evaluate(
                response: response(status, headers), stored: entry, staleIfErrorUntil: until,
                requestTime: at(100), responseTime: at(100), now: at(100))
        } else {
            outcome = RevalidationOutcome.originUnreachable(stored: entry, staleIfErrorUntil: until, now: at(100))
        }
        let name: String
        switch outcome {
        case .notModified: name = "notModified"
        case .notModifiedMismatch: name = "notModifiedMismatch"
        case .replace: name = "replace"
        case .serveStale(let age):
            name = "serveStale"
            #expect(age == 100)
        case .forwardError: name = "forwardError"
        case .gatewayTimeout: name = "gatewayTimeout"
        }
        #expect(name == testCase.expected)
    }

    @Test("etag-comparison [RFC 9110 §8.8.3.2]")
    func entityTags() {
        let strong = EntityTag("\"1\"")!
        let weak = EntityTag("W/\"1\"")!
        #expect(strong.strongMatches(strong))
        #expect(!weak.strongMatches(weak))
        #expect(weak.weakMatches(strong))
        #expect(EntityTag("1") == nil)
        #expect(EntityTag("\"a\"b\"") == nil)
        #expect(weak.fieldValue == "W/\"1\"")
    }
}
