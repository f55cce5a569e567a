import Foundation
import HTTPCacheSemantics
import Testing

struct DateCase: Sendable, CustomTestStringConvertible {
    let name: String
    let section: String
    let input: String
    /// Expected seconds since 1970, nil for invalid.
    let expected: Int64?
    var testDescription: String { "\(name) [\(section)]" }
}

@Suite("HTTP-date (RFC 9110 §5.6.7)")
struct HTTPDateTests {
    /// 2023-11-14: the reference for RFC 850 two-digit years.
    static let reference = HTTPDate(t0)

    static let cases: [DateCase] = [
        .init(
            name: "date-imf-fixdate", section: "RFC 9110 §5.6.7", input: "Sun, 06 Nov 1994 08:49:37 GMT",
            expected: 784_111_777),
        .init(
            name: "date-rfc850", section: "RFC 9110 §5.6.7", input: "Sunday, 06-Nov-94 08:49:37 GMT",
            expected: 784_111_777),
        .init(
            name: "date-asctime", section: "RFC 9110 §5.6.7", input: "Sun Nov  6 08:49:37 1994", expected: 784_111_777),
        .init(
            name: "date-asctime-two-digit-day", section: "RFC 9110 §5.6.7", input: "Thu Nov 16 08:49:37 1994",
            expected: 784_975_777),
        .init(
            name: "date-rfc850-year-within-50-years-is-this-century", section: "RFC 9110 §5.6.7",
            input: "Monday, 01-Jan-35 00:00:00 GMT", expected: 2_051_222_400),
        .init(
            name: "date-rfc850-year-over-50-years-is-past-century", section: "RFC 9110 §5.6.7",
            input: "Monday, 01-Jan-80 00:00:00 GMT", expected: 315_532_800),
        .init(name: "date-epoch", section: "RFC 9110 §5.6.7", input: "Thu, 01 Jan 1970 00:00:00 GMT", expected: 0),
        .init(
            name: "date-before-1970", section: "docs/Reliability.md §3.6", input: "Mon, 01 Jan 1900 00:00:00 GMT",
            expected: -2_208_988_800),
        .init(
            name: "date-year-9999", section: "docs/Reliability.md §3.6", input: "Fri, 31 Dec 9999 23:59:59 GMT",
            expected: 253_402_300_799),
        .init(
            name: "date-after-9999-invalid", section: "docs/Reliability.md §3.6",
            input: "Sat, 01 Jan 10000 00:00:00 GMT", expected: nil),
        .init(
            name: "date-year-0000-invalid", section: "docs/Reliability.md §3.6", input: "Sun, 06 Nov 0000 08:49:37 GMT",
            expected: nil),
        .init(
            name: "date-leap-day", section: "RFC 9110 §5.6.7", input: "Thu, 29 Feb 2024 12:00:00 GMT",
            expected: 1_709_208_000),
        .init(
            name: "date-feb-29-non-leap-invalid", section: "RFC 9110 §5.6.7", input: "Wed, 29 Feb 2023 12:00:00 GMT",
            expected: nil),
        .init(
            name: "date-leap-second-accepted", section: "RFC 9110 §5.6.7", input: "Sat, 31 Dec 2016 23:59:60 GMT",
            expected: 1_483_228_800),
        .init(
            name: "date-hour-24-invalid", section: "RFC 9110 §5.6.7", input: "Sun, 06 Nov 1994 24:00:00 GMT",
            expected: nil),
        .init(name: "date-zero-invalid", section: "RFC 9111 §5.3", input: "0", expected: nil),
        .init(name: "date-garbage-invalid", section: "RFC 9111 §5.3", input: "tomorrow", expected: nil),
        .init(name: "date-empty-invalid", section: "RFC 9110 §5.6.7", input: "", expected: nil),
        .init(
            name: "date-not-gmt-invalid", section: "RFC 9110 §5.6.7", input: "Sun, 06 Nov 1994 08:49:37 PST",
            expected: nil),
        .init(name: "date-iso8601-invalid", section: "RFC 9110 §5.6.7", input: "1994-11-06T08:49:37Z", expected: nil),
        .init(
            name: "date-bad-month-invalid", section: "RFC 9110 §5.6.7", input: "Sun, 06 Foo 1994 08:49:37 GMT",
            expected: nil),
        .init(
            name: "date-day-32-invalid", section: "RFC 9110 §5.6.7", input: "Sun, 32 Dec 1994 08:49:37 GMT",
            expected: nil),
        .init(
            name: "date-surrounding-whitespace", section: "RFC 9110 §5.5", input: "  Sun, 06 Nov 1994 08:49:37 GMT ",
            expected: 784_111_777),
        .init(
            name: "date-lowercase-names-accepted", section: "lenient", input: "sun, 06 nov 1994 08:49:37 gmt",
            expected: 784_111_777),
        .init(
            name: "date-non-ascii-invalid", section: "RFC 9110 §5.6.7", input: "Sün, 06 Nov 1994 08:49:37 GMT",
            expected: nil),
    ]

    @Test(arguments: cases)
    func parses(_ testCase: DateCase) {
        #expect(HTTPDate(testCase.input, relativeTo: Self.reference)?.secondsSince1970 == testCase.expected)
    }

    static let formatCases: [(Int64, String)] = [
        (784_111_777, "Sun, 06 Nov 1994 08:49:37 GMT"),
        (0, "Thu, 01 Jan 1970 00:00:00 GMT"),
        (-1, "Wed, 31 Dec 1969 23:59:59 GMT"),
        (1_709_208_000, "Thu, 29 Feb 2024 12:00:00 GMT"),
        (Int64(1) << 50, "Fri, 31 Dec 9999 23:59:59 GMT"),
    ]

    @Test("date-format-imf-fixdate [RFC 9110 §5.6.7]", arguments: formatCases)
    func formats(_ seconds: Int64, _ expected: String) {
        #expect(HTTPDate(secondsSince1970: seconds).imfFixdate == expected)
    }

    @Test("date-round-trip over 400 years [RFC 9110 §5.6.7]")
    func roundTrips() {
        var seconds: Int64 = -2_208_988_800
        while seconds < 10_413_792_000 {
            let date = HTTPDate(secondsSince1970: seconds)
            #expect(HTTPDate(date.imfFixdate, relativeTo: Self.reference) == date)
            seconds += 7_777_777
        }
    }

    @Test("date-non-finite-no-trap [docs/Reliability.md §3.6]")
    func clampsNonFinite() {
        #expect(HTTPDate(Date(timeIntervalSince1970: .infinity)).secondsSince1970 > 0)
        #expect(HTTPDate(Date(timeIntervalSince1970: -.infinity)).secondsSince1970 < 0)
        #expect(HTTPDate(Date(timeIntervalSince1970: .nan)).secondsSince1970 == 0)
    }
}
