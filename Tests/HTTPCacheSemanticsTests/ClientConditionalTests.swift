import Foundation
import HTTPCacheSemantics
import HTTPTypes
import Testing

struct ClientConditionalCase: Sendable, CustomTestStringConvertible {
    let name: String
    let section: String
    var method: HTTPRequest.Method = .get
    let stored: [(String, String)]
    let request: [(String, String)]
    let notModified: Bool
    var testDescription: String { "\(name) [\(section)]" }
}

@Suite("A client's conditional request answered from the cache (RFC 9111 §4.3.2)")
struct ClientConditionalTests {
    static let etag = ("ETag", "\"v1\"")
    static let weakETag = ("ETag", "W/\"v1\"")
    static let lastModified = ("Last-Modified", httpDate(-100))

    static let cases: [ClientConditionalCase] = [
        .init(
            name: "inm-strong-match", section: "RFC 9110 §13.2.2", stored: [etag],
            request: [("If-None-Match", "\"v1\"")],
            notModified: true),
        .init(
            name: "inm-weak-comparison", section: "RFC 9110 §13.1.2", stored: [weakETag],
            request: [("If-None-Match", "\"v1\"")], notModified: true),
        .init(
            name: "inm-weak-request-tag", section: "RFC 9110 §13.1.2", stored: [etag],
            request: [("If-None-Match", "W/\"v1\"")], notModified: true),
        .init(
            name: "inm-no-match", section: "RFC 9110 §13.1.2", stored: [etag], request: [("If-None-Match", "\"v2\"")],
            notModified: false),
        .init(
            name: "inm-list-member-matches", section: "RFC 9110 §13.1.2", stored: [etag],
            request: [("If-None-Match", "\"a\", W/\"b\" ,\"v1\"")], notModified: true),
        .init(
            name: "inm-tag-holding-a-comma", section: "RFC 9110 §8.8.3", stored: [("ETag", "\"a,b\"")],
            request: [("If-None-Match", "\"x\", \"a,b\"")], notModified: true),
        .init(
            name: "inm-repeated-field-lines", section: "RFC 9110 §5.3", stored: [etag],
            request: [("If-None-Match", "\"x\""), ("If-None-Match", "\"v1\"")], notModified: true),
        .init(
            name: "inm-star-matches-any", section: "RFC 9110 §13.1.2", stored: [("Cache-Control", "max-age=60")],
            request: [("If-None-Match", "*")], notModified: true),
        .init(
            name: "inm-stored-without-etag", section: "RFC 9110 §13.1.2", stored: [lastModified],
            request: [("If-None-Match", "\"v1\"")], notModified: false),
        .init(
            name: "inm-unquoted-ignored", section: "RFC 9110 §8.8.3", stored: [("ETag", "\"v1\"")],
            request: [("If-None-Match", "v1")], notModified: false),
        .init(
            name: "inm-empty-ignored", section: "RFC 9110 §13.1.2", stored: [etag], request: [("If-None-Match", " ")],
            notModified: false),
        .init(
            name: "inm-takes-precedence-over-ims", section: "RFC 9110 §13.2.2", stored: [etag, lastModified],
            request: [("If-None-Match", "\"v2\""), ("If-Modified-Since", httpDate(0))], notModified: false),
        .init(
            name: "ims-not-modified-since", section: "RFC 9110 §13.1.3", stored: [lastModified],
            request: [("If-Modified-Since", httpDate(-100))], notModified: true),
        .init(
            name: "ims-later-than-last-modified", section: "RFC 9110 §13.1.3", stored: [lastModified],
            request: [("If-Modified-Since", httpDate(-50))], notModified: true),
        .init(
            name: "ims-modified-since", section: "RFC 9110 §13.1.3", stored: [lastModified],
            request: [("If-Modified-Since", httpDate(-101))], notModified: false),
        .init(
            name: "ims-falls-back-to-date", section: "RFC 9111 §4.3.2", stored: [("Date", httpDate(-10))],
            request: [("If-Modified-Since", httpDate(-10))], notModified: true),
        .init(
            name: "ims-date-newer-than-ims", section: "RFC 9111 §4.3.2", stored: [("Date", httpDate(-10))],
            request: [("If-Modified-Since", httpDate(-11))], notModified: false),
        .init(
            name: "ims-falls-back-to-receipt-time", section: "RFC 9111 §4.3.2",
            stored: [("Cache-Control", "max-age=60")],
            request: [("If-Modified-Since", httpDate(0))], notModified: true),
        .init(
            name: "ims-invalid-date-ignored", section: "RFC 9110 §13.1.3", stored: [lastModified],
            request: [("If-Modified-Since", "yesterday")], notModified: false),
        .init(
            name: "head-answered-too", section: "RFC 9110 §13.2.2", method: .head, stored: [etag],
            request: [("If-None-Match", "\"v1\"")], notModified: true),
        .init(
            name: "if-match-not-evaluated", section: "RFC 9111 §4.3.2", stored: [etag],
            request: [("If-Match", "\"v2\"")],
            notModified: false),
        .init(
            name: "if-unmodified-since-not-evaluated", section: "RFC 9111 §4.3.2", stored: [lastModified],
            request: [("If-Unmodified-Since", httpDate(-1000))], notModified: false),
        // A POST is never answered 304 by the cache.
        .init(
            name: "post-not-evaluated", section: "RFC 9111 §4.3.2", method: .post, stored: [etag],
            request: [("If-None-Match", "\"v1\"")], notModified: false),
        .init(
            name: "unconditional", section: "RFC 9110 §13.2.2", stored: [etag, lastModified], request: [],
            notModified: false),
    ]

    @Test(arguments: cases)
    func evaluates(_ testCase: ClientConditionalCase) {
        let entry = stored(200, testCase.stored)
        let client = request(testCase.method, testCase.request)
        #expect(ClientConditional.isNotModified(request: client, stored: entry) == testCase.notModified)
    }

    @Test("the 304 keeps the validators and caching fields and drops the body's framing (RFC 9110 §15.4.5)")
    func notModifiedHead() {
        let head = fields([
            ("ETag", "\"v1\""), ("Cache-Control", "max-age=60"), ("Content-Length", "1024"), ("Vary", "Accept"),
            ("Age", "3"), ("Transfer-Encoding", "chunked"), ("X-Custom", "kept"),
        ])
        let result = ClientConditional.notModifiedFields(from: head)
        #expect(result[.eTag] == "\"v1\"")
        #expect(result[.cacheControl] == "max-age=60")
        #expect(result[.vary] == "Accept")
        #expect(result[.age] == "3")
        #expect(result[HTTPField.Name("X-Custom")!] == "kept")
        #expect(result[.contentLength] == nil)
        #expect(result[.transferEncoding] == nil)
    }
}
