import HTTPCacheSemantics
import HTTPTypes
import Testing

struct VaryCase: Sendable, CustomTestStringConvertible {
    let name: String
    let section: String
    let vary: String
    let first: [(String, String)]
    let second: [(String, String)]
    let matches: Bool
    var testDescription: String { "\(name) [\(section)]" }
}

@Suite("Vary (RFC 9111 §4.1)")
struct VaryKeyTests {
    static let cases: [VaryCase] = [
        .init(
            name: "vary-equal-values", section: "§4.1", vary: "Accept", first: [("Accept", "text/html")],
            second: [("Accept", "text/html")], matches: true),
        .init(
            name: "vary-different-values", section: "§4.1", vary: "Accept", first: [("Accept", "text/html")],
            second: [("Accept", "application/json")], matches: false),
        .init(
            name: "vary-whitespace-collapsed", section: "§4.1", vary: "User-Agent", first: [("User-Agent", "a   b")],
            second: [("User-Agent", " a b ")], matches: true),
        .init(
            name: "vary-case-sensitive-by-default", section: "§4.1", vary: "X-Token", first: [("X-Token", "ABC")],
            second: [("X-Token", "abc")], matches: false),
        .init(
            name: "vary-accept-encoding-case-insensitive", section: "§4.1 / RFC 9110 §8.4.1", vary: "Accept-Encoding",
            first: [("Accept-Encoding", "GZIP, Br")], second: [("Accept-Encoding", "gzip,br")], matches: true),
        .init(
            name: "vary-accept-language-case-insensitive", section: "§4.1 / RFC 4647", vary: "Accept-Language",
            first: [("Accept-Language", "en-US, fr")], second: [("Accept-Language", "en-us,FR")], matches: true),
        .init(
            name: "vary-repeated-lines-combined", section: "§4.1 / RFC 9110 §5.3", vary: "Accept",
            first: [("Accept", "a"), ("Accept", "b")], second: [("Accept", "a, b")], matches: true),
        .init(
            name: "vary-order-matters", section: "§4.1", vary: "Accept", first: [("Accept", "a, b")],
            second: [("Accept", "b, a")], matches: false),
        .init(name: "vary-absent-matches-absent", section: "§4.1", vary: "X-A", first: [], second: [], matches: true),
        .init(
            name: "vary-absent-differs-from-empty", section: "§4.1", vary: "X-A", first: [], second: [("X-A", "")],
            matches: false),
        .init(
            name: "vary-name-case-insensitive", section: "§4.1", vary: "ACCEPT", first: [("accept", "x")],
            second: [("Accept", "x")], matches: true),
        .init(
            name: "vary-multiple-names-all-must-match", section: "§4.1", vary: "Accept, X-A",
            first: [("Accept", "x"), ("X-A", "1")], second: [("Accept", "x"), ("X-A", "2")], matches: false),
        .init(
            name: "vary-unrelated-fields-ignored", section: "§4.1", vary: "Accept",
            first: [("Accept", "x"), ("X-B", "1")], second: [("Accept", "x"), ("X-B", "2")], matches: true),
        .init(name: "vary-star-never-matches", section: "§4.1", vary: "*", first: [], second: [], matches: false),
        .init(
            name: "vary-empty-always-matches", section: "§4.1", vary: "", first: [("Accept", "x")], second: [],
            matches: true),
        // What each field's syntax allows (RFC 9111 §4.1, RFC 9110 §5.6.1, §12.5).
        .init(
            name: "vary-accept-encoding-order-ignored", section: "§4.1 / RFC 9110 §12.5.3", vary: "Accept-Encoding",
            first: [("Accept-Encoding", "gzip, deflate, br")], second: [("Accept-Encoding", "br, gzip, deflate")],
            matches: true),
        .init(
            name: "vary-accept-encoding-lines-in-any-order", section: "§4.1 / RFC 9110 §5.3", vary: "Accept-Encoding",
            first: [("Accept-Encoding", "br"), ("Accept-Encoding", "gzip")], second: [("Accept-Encoding", "gzip,br")],
            matches: true),
        .init(
            name: "vary-accept-encoding-weights-whitespace", section: "§4.1 / RFC 9110 §12.4.2",
            vary: "Accept-Encoding",
            first: [("Accept-Encoding", "gzip;q=1.0, identity; q=0.5")],
            second: [("Accept-Encoding", "identity ;q=0.5 ,GZIP; Q=1.0")], matches: true),
        .init(
            name: "vary-accept-encoding-weights-differ", section: "§4.1", vary: "Accept-Encoding",
            first: [("Accept-Encoding", "gzip;q=0.5, br")], second: [("Accept-Encoding", "gzip, br")], matches: false),
        .init(
            name: "vary-accept-encoding-empty-members-ignored", section: "§4.1 / RFC 9110 §5.6.1",
            vary: "Accept-Encoding",
            first: [("Accept-Encoding", ",gzip,, br,")], second: [("Accept-Encoding", "gzip, br")], matches: true),
        .init(
            name: "vary-accept-encoding-different-set", section: "§4.1", vary: "Accept-Encoding",
            first: [("Accept-Encoding", "gzip")], second: [("Accept-Encoding", "gzip, br")], matches: false),
        .init(
            name: "vary-accept-encoding-empty-list", section: "§4.1 / RFC 9110 §5.6.1", vary: "Accept-Encoding",
            first: [("Accept-Encoding", "")], second: [("Accept-Encoding", " , ")], matches: true),
        .init(
            name: "vary-accept-whitespace-around-commas", section: "§4.1 / RFC 9110 §5.6.1", vary: "Accept",
            first: [("Accept", "text/html,application/json")], second: [("Accept", "text/html , application/json")],
            matches: true),
        .init(
            name: "vary-accept-whitespace-around-semicolons", section: "§4.1 / RFC 9110 §5.6.6", vary: "Accept",
            first: [("Accept", "text/html;level=1;q=0.9")], second: [("Accept", "text/html; level=1 ; q=0.9")],
            matches: true),
        .init(
            name: "vary-accept-quoted-string-kept", section: "§4.1 / RFC 9110 §5.6.4", vary: "Accept",
            first: [("Accept", "text/plain;x=\"a, b\"")], second: [("Accept", "text/plain;x=\"a,b\"")], matches: false),
        .init(
            name: "vary-accept-quoted-comma-not-a-separator", section: "§4.1 / RFC 9110 §5.6.4", vary: "Accept",
            first: [("Accept", "text/plain; x=\"a, b\", text/html")],
            second: [("Accept", "text/plain;x=\"a, b\",text/html")],
            matches: true),
        .init(
            name: "vary-accept-case-kept", section: "§4.1", vary: "Accept",
            first: [("Accept", "Text/HTML")], second: [("Accept", "text/html")], matches: false),
        .init(
            name: "vary-accept-language-order-kept", section: "§4.1 / RFC 9110 §12.5.4", vary: "Accept-Language",
            first: [("Accept-Language", "en, fr")], second: [("Accept-Language", "fr, en")], matches: false),
        .init(
            name: "vary-accept-language-lines-and-spaces", section: "§4.1 / RFC 9110 §5.3", vary: "Accept-Language",
            first: [("Accept-Language", "en-GB"), ("Accept-Language", "fr;q=0.8")],
            second: [("Accept-Language", "en-gb,fr ; q=0.8")],
            matches: true),
        .init(
            name: "vary-accept-charset-case-insensitive", section: "§4.1 / RFC 9110 §8.3.2", vary: "Accept-Charset",
            first: [("Accept-Charset", "UTF-8, ISO-8859-1;q=0.5")],
            second: [("Accept-Charset", "utf-8,iso-8859-1;q=0.5")],
            matches: true),
        .init(
            name: "vary-other-field-comma-spacing-kept", section: "§4.1", vary: "X-Token",
            first: [("X-Token", "a,b")], second: [("X-Token", "a, b")], matches: false),
    ]

    @Test(arguments: cases)
    func matching(_ testCase: VaryCase) {
        let vary = VaryFields(responseFields: fields([("Vary", testCase.vary)]))
        let storedFields = VaryKey.selectingFields(vary: vary, requestFields: fields(testCase.first))
        #expect(
            VaryKey.matches(vary: vary, storedRequestFields: storedFields, requestFields: fields(testCase.second))
                == testCase.matches)
        if !vary.isWildcard {
            let sameBytes =
                VaryKey(vary: vary, requestFields: fields(testCase.first)).encoded
                == VaryKey(vary: vary, requestFields: fields(testCase.second)).encoded
            #expect(sameBytes == testCase.matches)
        }
    }

    @Test("vary-encoding-injective [docs/Reliability.md §3.2]")
    func encodingIsInjective() {
        let vary = VaryFields(responseFields: fields([("Vary", "X-A, X-B")]))
        let pairs: [([(String, String)], [(String, String)])] = [
            ([("X-A", "1, 2")], [("X-A", "1"), ("X-B", "2")]),
            ([("X-A", "")], []),
            ([("X-B", "ab")], [("X-A", "a"), ("X-B", "b")]),
            ([("X-A", "a")], [("X-B", "a")]),
        ]
        for (left, right) in pairs {
            #expect(
                VaryKey(vary: vary, requestFields: fields(left)).encoded
                    != VaryKey(vary: vary, requestFields: fields(right)).encoded)
        }
    }

    @Test("vary-parse-list [RFC 9110 §12.5.5]")
    func parseList() {
        let vary = VaryFields(responseFields: fields([("Vary", "Accept, accept-encoding, ,Accept"), ("Vary", "X-A")]))
        #expect(vary.names.map(\.canonicalName) == ["accept", "accept-encoding", "x-a"])
        #expect(!vary.isWildcard && !vary.hasInvalidName)
        let huge = VaryFields(responseFields: fields([("Vary", (1...10_000).map { "X-\($0)" }.joined(separator: ","))]))
        #expect(huge.names.count <= VaryFields.maximumParsedNames + 1)
        #expect(huge.names.count > 16)
    }
}
