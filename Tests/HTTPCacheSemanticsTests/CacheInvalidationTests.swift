import HTTPCacheSemantics
import HTTPTypes
import Testing

struct InvalidationCase: Sendable, CustomTestStringConvertible {
    let name: String
    let section: String
    var requestURL = CacheInvalidationTests.target
    let method: HTTPRequest.Method
    let status: Int
    let headers: [(String, String)]
    let expected: [String]
    var testDescription: String { "\(name) [\(section)]" }
}

@Suite("Invalidation (RFC 9111 §4.4)")
struct CacheInvalidationTests {
    static let target = "https://Example.com:443/items/42?x=1"

    static let cases: [InvalidationCase] = [
        .init(
            name: "invalidate-post-target", section: "§4.4", method: .post, status: 200, headers: [],
            expected: ["https://example.com/items/42?x=1"]),
        .init(
            name: "invalidate-put-delete-patch", section: "§4.4", method: .delete, status: 204, headers: [],
            expected: ["https://example.com/items/42?x=1"]),
        .init(name: "invalidate-get-nothing", section: "§4.4", method: .get, status: 200, headers: [], expected: []),
        .init(
            name: "invalidate-head-options-nothing", section: "§4.4 / RFC 9110 §9.2.1", method: .options, status: 200,
            headers: [],
            expected: []),
        .init(
            name: "invalidate-error-response-nothing", section: "§4.4", method: .post, status: 500, headers: [],
            expected: []),
        .init(name: "invalidate-4xx-nothing", section: "§4.4", method: .post, status: 403, headers: [], expected: []),
        .init(
            name: "invalidate-3xx-counts", section: "§4.4", method: .post, status: 303,
            headers: [("Location", "/items/43")],
            expected: ["https://example.com/items/42?x=1", "https://example.com/items/43"]),
        .init(
            name: "invalidate-location-relative", section: "§4.4 / RFC 3986 §5.2", method: .post, status: 201,
            headers: [("Location", "43")],
            expected: ["https://example.com/items/42?x=1", "https://example.com/items/43"]),
        .init(
            name: "invalidate-location-dot-segments", section: "RFC 3986 §5.2.4", method: .post, status: 201,
            headers: [("Location", "../other/./a")],
            expected: ["https://example.com/items/42?x=1", "https://example.com/other/a"]),
        .init(
            name: "invalidate-content-location-absolute-same-origin", section: "§4.4", method: .put, status: 200,
            headers: [("Content-Location", "HTTPS://EXAMPLE.COM/items/42/v2")],
            expected: ["https://example.com/items/42?x=1", "https://example.com/items/42/v2"]),
        .init(
            name: "invalidate-cross-origin-ignored", section: "§4.4", method: .post, status: 201,
            headers: [
                ("Location", "https://evil.example/items/1"), ("Content-Location", "http://example.com/items/1"),
            ],
            expected: ["https://example.com/items/42?x=1"]),
        .init(
            name: "invalidate-network-path-reference", section: "RFC 3986 §4.2", method: .post, status: 201,
            headers: [("Location", "//example.com/n")],
            expected: ["https://example.com/items/42?x=1", "https://example.com/n"]),
        .init(
            name: "invalidate-query-only-reference", section: "RFC 3986 §5.2.2", method: .post, status: 201,
            headers: [("Location", "?y=2")],
            expected: ["https://example.com/items/42?x=1", "https://example.com/items/42?y=2"]),
        .init(
            name: "invalidate-duplicate-location-once", section: "§4.4", method: .post, status: 201,
            headers: [("Location", "/items/42?x=1"), ("Content-Location", "/items/9")],
            expected: ["https://example.com/items/42?x=1", "https://example.com/items/9"]),
        .init(
            name: "invalidate-bad-location-ignored", section: "§4.4", method: .post, status: 201,
            headers: [("Location", "/a b")], expected: ["https://example.com/items/42?x=1"]),
        .init(
            name: "invalidate-uncacheable-target-nothing", section: "§4.4", requestURL: "ftp://x/", method: .post,
            status: 200, headers: [], expected: []),
    ]

    @Test(arguments: cases)
    func invalidates(_ testCase: InvalidationCase) {
        let urls = CacheInvalidation.invalidatedURLs(
            method: testCase.method, requestURL: testCase.requestURL,
            status: HTTPResponse.Status(code: testCase.status),
            responseFields: fields(testCase.headers))
        #expect(urls.map(\.string) == testCase.expected)
    }
}
