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
        .init(name: "vary-equal-values", section: "§4.1", vary: "Accept", first: [("Accept", "text/html")],
              second: [("Accept", "text/html")], matches: true),
        .init(name: "vary-different-values", section: "§4.1", vary: "Accept", first: [("Accept", "text/html")],
              second: [("Accept", "application/json")], matches: false),
        .init(name: "vary-whitespace-collapsed", section: "§4.1", vary: "User-Agent", first: [("User-Agent", "a   b")],
              second: [("User-Agent", " a b ")], matches: true),
        .init(name: "vary-case-sensitive-by-default", section: "§4.1", vary: "X-Token", first: [("X-Token", "ABC")],
              second: [("X-Token", "abc")], matches: false),
        .init(name: "vary-accept-encoding-case-insensitive", section: "§4.1 / RFC 9110 §8.4.1", vary: "Accept-Encoding",
              first: [("Accept-Encoding", "GZIP, Br")], second: [("Accept-Encoding", "gzip,br")], matches: true),
        .init(name: "vary-accept-language-case-insensitive", section: "§4.1 / RFC 4647", vary: "Accept-Language",
              first: [("Accept-Language", "en-US, fr")], second: [("Accept-Language", "en-us,FR")], matches: true),
        .init(name: "vary-repeated-lines-combined", section: "§4.1 / RFC 9110 §5.3", vary: "Accept",
              first: [("Accept", "a"), ("Accept", "b")], second: [("Accept", "a, b")], matches: true),
        .init(name: "vary-order-matters", section: "§4.1", vary: "Accept", first: [("Accept", "a, b")],
              second: [("Accept", "b, a")], matches: false),
        .init(name: "vary-absent-matches-absent", section: "§4.1", vary: "X-A", first: [], second: [], matches: true),
        .init(name: "vary-absent-differs-from-empty", section: "§4.1", vary: "X-A", first: [], second: [("X-A", "")], matches: false),
        .init(name: "vary-name-case-insensitive", section: "§4.1", vary: "ACCEPT", first: [("accept", "x")],
              second: [("Accept", "x")], matches: true),
        .init(name: "vary-multiple-names-all-must-match", section: "§4.1", vary: "Accept, X-A",
              first: [("Accept", "x"), ("X-A", "1")], second: [("Accept", "x"), ("X-A", "2")], matches: false),
        .init(name: "vary-unrelated-fields-ignored", section: "§4.1", vary: "Accept",
              first: [("Accept", "x"), ("X-B", "1")], second: [("Accept", "x"), ("X-B", "2")], matches: true),
        .init(name: "vary-star-never-matches", section: "§4.1", vary: "*", first: [], second: [], matches: false),
        .init(name: "vary-empty-always-matches", section: "§4.1", vary: "", first: [("Accept", "x")], second: [], matches: true),
    ]

    @Test(arguments: cases)
    func matching(_ testCase: VaryCase) {
        let vary = VaryFields(responseFields: fields([("Vary", testCase.vary)]))
        let storedFields = VaryKey.selectingFields(vary: vary, requestFields: fields(testCase.first))
        #expect(VaryKey.matches(vary: vary, storedRequestFields: storedFields, requestFields: fields(testCase.second)) == testCase.matches)
        if !vary.isWildcard {
            let sameBytes = VaryKey(vary: vary, requestFields: fields(testCase.first)).encoded
                == VaryKey(vary: vary, requestFields: fields(testCase.second)).encoded
            #expect(sameBytes == testCase.matches)
        }
    }

    @Test("vary-encoding-injective [RELIABILITY §3.2]")
    func encodingIsInjective() {
        let vary = VaryFields(responseFields: fields([("Vary", "X-A, X-B")]))
        let pairs: [([(String, String)], [(String, String)])] = [
            ([("X-A", "1, 2")], [("X-A", "1"), ("X-B", "2")]),
            ([("X-A", "")], []),
            ([("X-B", "ab")], [("X-A", "a"), ("X-B", "b")]),
            ([("X-A", "a")], [("X-B", "a")]),
        ]
        for (left, right) in pairs {
            #expect(VaryKey(vary: vary, requestFields: fields(left)).encoded != VaryKey(vary: vary, requestFields: fields(right)).encoded)
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
