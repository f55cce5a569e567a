import Foundation
import HTTPCacheSemantics
import HTTPTypes
import Testing

struct RangeParseCase: Sendable, CustomTestStringConvertible {
    let value: String
    let specs: [ByteRangeSpec]?
    var testDescription: String { "Range: \(value)" }
}

struct RangeResolveCase: Sendable, CustomTestStringConvertible {
    let spec: ByteRangeSpec
    let length: Int
    let range: ClosedRange<Int>?
    var testDescription: String { "\(spec) of \(length) bytes" }
}

struct RangeSelectionCase: Sendable, CustomTestStringConvertible {
    let name: String
    var method: HTTPRequest.Method = .get
    var status = 200
    var stored: [(String, String)] = [("ETag", "\"v1\"")]
    let request: [(String, String)]
    var length = 1000
    let selection: RangeSelection
    var testDescription: String { name }
}

@Suite("Range requests answered from a stored response (RFC 9110 §14)")
struct RangeSelectionTests {
    static let parseCases: [RangeParseCase] = [
        .init(value: "bytes=0-499", specs: [.int(first: 0, last: 499)]),
        .init(value: "bytes=500-", specs: [.int(first: 500, last: nil)]),
        .init(value: "bytes=-500", specs: [.suffix(length: 500)]),
        .init(value: "bytes=7-7", specs: [.int(first: 7, last: 7)]),
        .init(value: "BYTES=1-2", specs: [.int(first: 1, last: 2)]), // §14.1: the unit is case-insensitive
        .init(value: " \tbytes=1-2 ", specs: [.int(first: 1, last: 2)]),
        .init(value: "bytes=0-0,-1", specs: [.int(first: 0, last: 0), .suffix(length: 1)]),
        .init(value: "bytes=0-4 , 6-9", specs: [.int(first: 0, last: 4), .int(first: 6, last: 9)]),
        .init(value: "bytes=, 1-2 ,", specs: [.int(first: 1, last: 2)]), // §5.6.1: empty elements
        .init(value: "bytes=99999999999999999999-", specs: [.int(first: .max, last: nil)]),
        .init(value: "bytes=0-99999999999999999999", specs: [.int(first: 0, last: .max)]),
        .init(value: "bytes=-0", specs: [.suffix(length: 0)]),
        .init(value: "bytes = 0-4", specs: nil),
        .init(value: "bytes=0 -4", specs: nil),
        .init(value: "bytes=0- 4", specs: nil),
        .init(value: "bytes=5-4", specs: nil), // last-pos below first-pos: invalid (§14.1.1)
        .init(value: "bytes=-", specs: nil),
        .init(value: "bytes=", specs: nil),
        .init(value: "bytes=,", specs: nil),
        .init(value: "bytes=a-b", specs: nil),
        .init(value: "bytes=+1-2", specs: nil),
        .init(value: "bytes=1-2-3", specs: nil),
        .init(value: "bytes=0-4,x", specs: nil),
        .init(value: "bytes 0-4", specs: nil),
        .init(value: "items=0-4", specs: nil), // another unit: ignored (§14.2)
        .init(value: "", specs: nil),
    ]

    @Test("Range field syntax (RFC 9110 §14.1.1)", arguments: parseCases)
    func parse(_ c: RangeParseCase) {
        #expect(ByteRangeSpec.parse(c.value) == c.specs)
    }

    static let resolveCases: [RangeResolveCase] = [
        .init(spec: .int(first: 0, last: 499), length: 1000, range: 0...499),
        .init(spec: .int(first: 500, last: nil), length: 1000, range: 500...999),
        .init(spec: .int(first: 900, last: 1999), length: 1000, range: 900...999), // clipped (§14.1.2)
        .init(spec: .int(first: 999, last: nil), length: 1000, range: 999...999),
        .init(spec: .int(first: 1000, last: nil), length: 1000, range: nil), // first byte past the end
        .init(spec: .int(first: 1000, last: 1001), length: 1000, range: nil),
        .init(spec: .int(first: .max, last: nil), length: 1000, range: nil),
        .init(spec: .suffix(length: 500), length: 1000, range: 500...999),
        .init(spec: .suffix(length: 1), length: 1000, range: 999...999),
        .init(spec: .suffix(length: 5000), length: 1000, range: 0...999), // longer than the body: all of it
        .init(spec: .suffix(length: .max), length: 1000, range: 0...999),
        .init(spec: .suffix(length: 0), length: 1000, range: nil),
        .init(spec: .int(first: 0, last: nil), length: 0, range: nil),
        .init(spec: .suffix(length: 5), length: 0, range: nil),
    ]

    @Test("the bytes a range-spec selects (RFC 9110 §14.1.2)", arguments: resolveCases)
    func resolve(_ c: RangeResolveCase) {
        #expect(c.spec.resolve(length: c.length) == c.range)
    }

    static let strongLastModified = [("Last-Modified", httpDate(-100)), ("Date", httpDate(-40))] // 60 s apart
    static let weakLastModified = [("Last-Modified", httpDate(-100)), ("Date", httpDate(-41))] // 59 s apart

    static let selectionCases: [RangeSelectionCase] = [
        .init(name: "no-range", request: [], selection: .whole),
        .init(name: "int-range", request: [("Range", "bytes=10-19")], selection: .partial(10...19)),
        .init(name: "open-range", request: [("Range", "bytes=990-")], selection: .partial(990...999)),
        .init(name: "suffix-range", request: [("Range", "bytes=-10")], selection: .partial(990...999)),
        .init(name: "unsatisfiable", request: [("Range", "bytes=1000-")], selection: .unsatisfiable),
        .init(name: "suffix-zero-unsatisfiable", request: [("Range", "bytes=-0")], selection: .unsatisfiable),
        .init(name: "empty-body-int-range", request: [("Range", "bytes=0-")], length: 0, selection: .unsatisfiable),
        .init(name: "empty-body-suffix-whole", request: [("Range", "bytes=-5")], length: 0, selection: .whole),
        .init(name: "several-ranges-whole", request: [("Range", "bytes=0-1,5-6")], selection: .whole),
        .init(
            name: "several-field-lines-whole", request: [("Range", "bytes=0-1"), ("Range", "bytes=5-6")],
            selection: .whole),
        .init(name: "bad-syntax-whole", request: [("Range", "bytes=5-4")], selection: .whole),
        .init(name: "other-unit-whole", request: [("Range", "items=0-1")], selection: .whole),
        .init(name: "head-ignores-range", method: .head, request: [("Range", "bytes=0-1")], selection: .whole),
        .init(name: "stored-non-200-whole", status: 404, request: [("Range", "bytes=0-1")], selection: .whole),
        .init(
            name: "if-range-strong-etag-match", request: [("Range", "bytes=0-1"), ("If-Range", "\"v1\"")],
            selection: .partial(0...1)),
        .init(
            name: "if-range-etag-mismatch", request: [("Range", "bytes=0-1"), ("If-Range", "\"v2\"")], selection: .whole
        ),
        .init(
            name: "if-range-weak-tag", request: [("Range", "bytes=0-1"), ("If-Range", "W/\"v1\"")], selection: .whole),
        .init(
            name: "if-range-stored-weak-etag", stored: [("ETag", "W/\"v1\"")],
            request: [("Range", "bytes=0-1"), ("If-Range", "\"v1\"")], selection: .whole),
        .init(
            name: "if-range-etag-nothing-stored", stored: [],
            request: [("Range", "bytes=0-1"), ("If-Range", "\"v1\"")],
            selection: .whole),
        .init(
            name: "if-range-date-strong-last-modified", stored: strongLastModified,
            request: [("Range", "bytes=0-1"), ("If-Range", httpDate(-100))], selection: .partial(0...1)),
        .init(
            name: "if-range-date-weak-last-modified", stored: weakLastModified,
            request: [("Range", "bytes=0-1"), ("If-Range", httpDate(-100))], selection: .whole),
        .init(
            name: "if-range-date-not-equal", stored: strongLastModified,
            request: [("Range", "bytes=0-1"), ("If-Range", httpDate(-99))], selection: .whole),
        .init(
            name: "if-range-date-without-date-field", stored: [("Last-Modified", httpDate(-100))],
            request: [("Range", "bytes=0-1"), ("If-Range", httpDate(-100))], selection: .whole),
        .init(
            name: "if-range-garbage", request: [("Range", "bytes=0-1"), ("If-Range", "yesterday")], selection: .whole),
        .init(
            name: "if-range-unsatisfiable-mismatch-whole", request: [("Range", "bytes=5000-"), ("If-Range", "\"v2\"")],
            selection: .whole),
        .init(name: "if-range-without-range", request: [("If-Range", "\"v2\"")], selection: .whole),
    ]

    @Test("what a cache sends for a Range request (RFC 9110 §14.2, §13.1.5)", arguments: selectionCases)
    func selection(_ c: RangeSelectionCase) {
        let entry = stored(c.status, c.stored)
        #expect(
            RangeSelection.evaluate(request: request(c.method, c.request), stored: entry, length: c.length)
                == c.selection)
    }

    @Test("206 and 416 heads (RFC 9110 §15.3.7, §15.5.17)")
    func heads() {
        let sent = fields([
            ("Date", httpDate(0)), ("ETag", "\"v1\""), ("Cache-Control", "max-age=60"), ("Content-Length", "1000"),
            ("Content-Type", "text/plain"),
        ])
        let partial = RangeSelection.partialFields(from: sent, range: 10...19, length: 1000)
        #expect(partial[.contentRange] == "bytes 10-19/1000")
        #expect(partial[.contentLength] == "10")
        #expect(
            partial[.cacheControl] == "max-age=60" && partial[.eTag] == "\"v1\""
                && partial[.contentType] == "text/plain")
        let unsatisfiable = RangeSelection.unsatisfiableFields(from: sent, length: 1000)
        #expect(unsatisfiable[.contentRange] == "bytes */1000")
        #expect(unsatisfiable[.contentLength] == "0")
        #expect(unsatisfiable[.eTag] == "\"v1\"" && unsatisfiable[.date] == httpDate(0))
        #expect(unsatisfiable[.cacheControl] == nil && unsatisfiable[.contentType] == nil)
    }
}
