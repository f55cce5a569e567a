#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Month and day names of HTTP-date (RFC 9110 §5.6.7), in calendar order.
private let monthNames = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
private let shortDayNames = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
private let longDayNames = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
private let formattedMonths = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
private let formattedDays = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"] // 1970-01-01 was a Thursday.

/// An HTTP-date (RFC 9110 §5.6.7): a whole number of seconds since 1970-01-01T00:00:00Z.
///
/// Parsed by hand (no `DateFormatter`: slow and locale-bound). Accepts the three formats a
/// recipient must accept: IMF-fixdate, RFC 850 and asctime; anything else is invalid (nil).
/// Month and day names are matched case-insensitively; the day name is not checked against the
/// date. Years 0000 to 9999 are representable, so dates before 1970 are simply negative.
public struct HTTPDate: Sendable, Hashable, Comparable {
    /// Seconds since 1970-01-01T00:00:00Z (negative before 1970).
    public var secondsSince1970: Int64

    /// Creates a date from seconds since 1970.
    ///
    /// - Parameters:
    ///   - secondsSince1970: Seconds since 1970-01-01T00:00:00Z.
    public init(secondsSince1970: Int64) {
        self.secondsSince1970 = secondsSince1970
    }

    /// Creates a date from a Foundation `Date`, rounded down to the second; non-finite or
    /// absurd values are clamped (never a trap).
    ///
    /// - Parameters:
    ///   - date: The instant.
    public init(_ date: Date) {
        self.secondsSince1970 = Self.clampedSeconds(date.timeIntervalSince1970)
    }

    /// The same instant as a Foundation `Date`.
    public var date: Date { Date(timeIntervalSince1970: Double(secondsSince1970)) }

    /// Parses an HTTP-date in any of the three formats of RFC 9110 §5.6.7.
    ///
    /// - Parameters:
    ///   - text: The field value, e.g. `"Sun, 06 Nov 1994 08:49:37 GMT"`.
    ///   - reference: The instant the message was received, used to place RFC 850's two-digit
    ///     year: a year more than 50 years after it means the previous century (RFC 9110 §5.6.7).
    public init?(_ text: some StringProtocol, relativeTo reference: HTTPDate) {
        var bytes = Array(text.utf8)
        while let last = bytes.last, last == 0x20 || last == 0x09 { bytes.removeLast() }
        while let first = bytes.first, first == 0x20 || first == 0x09 { bytes.removeFirst() }
        guard bytes.count <= 64 else { return nil }
        let parsed =
            Self.parseIMFFixdate(bytes) ?? Self.parseRFC850(bytes, reference: reference)
            ?? Self.parseAsctime(bytes)
        guard let parsed else { return nil }
        self = parsed
    }

    /// The date in IMF-fixdate form (RFC 9110 §5.6.7), e.g. `"Sun, 06 Nov 1994 08:49:37 GMT"`;
    /// dates outside years 1…9999 are clamped to that range.
    public var imfFixdate: String {
        let lowest = Self.daysFromCivil(year: 1, month: 1, day: 1) * 86_400
        let highest = Self.daysFromCivil(year: 9999, month: 12, day: 31) * 86_400 + 86_399
        let seconds = min(max(secondsSince1970, lowest), highest)
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = Int(seconds - days * 86_400)
        let (year, month, day) = Self.civilFromDays(days)
        let weekday = Int(((days % 7) + 7) % 7)
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        var yearText = String(year)
        while yearText.count < 4 { yearText = "0" + yearText }
        return "\(formattedDays[weekday]), \(two(day)) \(formattedMonths[month - 1]) \(yearText) "
            + "\(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60)) GMT"
    }

    public static func < (lhs: HTTPDate, rhs: HTTPDate) -> Bool {
        lhs.secondsSince1970 < rhs.secondsSince1970
    }

    // MARK: - Formats

    /// IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT` (exactly 29 bytes).
    private static func parseIMFFixdate(_ b: [UInt8]) -> HTTPDate? {
        guard b.count == 29, name(b[0..<3], in: shortDayNames) != nil, b[3] == UInt8(ascii: ","),
            b[4] == 0x20, b[7] == 0x20, b[11] == 0x20, b[16] == 0x20, b[25] == 0x20,
            ascii(b[26..<29]) == "gmt",
            let day = digits(b[5..<7]), let month = name(b[8..<11], in: monthNames),
            let year = digits(b[12..<16]), let time = timeOfDay(b[17..<25])
        else { return nil }
        return make(year: year, month: month + 1, day: day, time: time)
    }

    /// RFC 850: `Sunday, 06-Nov-94 08:49:37 GMT`.
    private static func parseRFC850(_ b: [UInt8], reference: HTTPDate) -> HTTPDate? {
        guard let comma = b.firstIndex(of: UInt8(ascii: ",")), name(b[0..<comma], in: longDayNames) != nil
        else { return nil }
        let rest = Array(b[(comma + 1)...])
        guard rest.count == 23, rest[0] == 0x20, rest[3] == UInt8(ascii: "-"), rest[7] == UInt8(ascii: "-"),
            rest[10] == 0x20, rest[19] == 0x20, ascii(rest[20..<23]) == "gmt",
            let day = digits(rest[1..<3]), let month = name(rest[4..<7], in: monthNames),
            let shortYear = digits(rest[8..<10]), let time = timeOfDay(rest[11..<19])
        else { return nil }
        // RFC 9110 §5.6.7: a two-digit year more than 50 years in the future is the most recent
        // past year with the same last two digits.
        let referenceYear = civilFromDays(floorDiv(reference.secondsSince1970, 86_400)).year
        var year = referenceYear - referenceYear % 100 + shortYear
        if year > referenceYear + 50 { year -= 100 }
        return make(year: year, month: month + 1, day: day, time: time)
    }

    /// asctime: `Sun Nov  6 08:49:37 1994` (the day may be space-padded).
    private static func parseAsctime(_ b: [UInt8]) -> HTTPDate? {
        guard b.count == 24, name(b[0..<3], in: shortDayNames) != nil, b[3] == 0x20, b[7] == 0x20,
            b[10] == 0x20, b[19] == 0x20,
            let month = name(b[4..<7], in: monthNames), let time = timeOfDay(b[11..<19]),
            let year = digits(b[20..<24])
        else { return nil }
        let dayBytes = b[8] == 0x20 ? b[9..<10] : b[8..<10]
        guard let day = digits(dayBytes) else { return nil }
        return make(year: year, month: month + 1, day: day, time: time)
    }

    // MARK: - Pieces

    private static func ascii(_ bytes: ArraySlice<UInt8>) -> String {
        String(decoding: bytes, as: UTF8.self).lowercased()
    }

    private static func name(_ bytes: ArraySlice<UInt8>, in names: [String]) -> Int? {
        names.firstIndex(of: ascii(bytes))
    }

    private static func digits(_ bytes: ArraySlice<UInt8>) -> Int? {
        guard !bytes.isEmpty else { return nil }
        var value = 0
        for byte in bytes {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }

    /// `HH:MM:SS`; second 60 is accepted for a leap second (RFC 9110 §5.6.7).
    private static func timeOfDay(_ b: ArraySlice<UInt8>) -> Int? {
        let s = Array(b)
        guard s.count == 8, s[2] == UInt8(ascii: ":"), s[5] == UInt8(ascii: ":"),
            let hour = digits(s[0..<2]), let minute = digits(s[3..<5]), let second = digits(s[6..<8]),
            hour < 24, minute < 60, second <= 60
        else { return nil }
        return hour * 3600 + minute * 60 + second
    }

    private static func make(year: Int, month: Int, day: Int, time: Int) -> HTTPDate? {
        // Years 1…9999 only: what the printer can write back (year 0000 was accepted and printed
        // as 0001 — found by FuzzHTTPDate).
        guard (1...9999).contains(year), (1...12).contains(month), day >= 1,
            day <= daysInMonth(year: year, month: month)
        else { return nil }
        let seconds = daysFromCivil(year: year, month: month, day: day) * 86_400 + Int64(time)
        // A leap second on 9999-12-31 would land in year 10000, which no HTTP-date can name.
        guard seconds <= daysFromCivil(year: 9999, month: 12, day: 31) * 86_400 + 86_399 else { return nil }
        return HTTPDate(secondsSince1970: seconds)
    }

    private static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    private static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
        a >= 0 ? a / b : -((-a + b - 1) / b)
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant, "chrono-compatible
    /// low-level date algorithms").
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let m = Int64(month)
        let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + Int64(day) - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// The inverse of ``daysFromCivil(year:month:day:)``.
    static func civilFromDays(_ days: Int64) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = Int(doy - (153 * mp + 2) / 5 + 1)
        let month = Int(mp < 10 ? mp + 3 : mp - 9)
        let year = Int(yoe + era * 400) + (month <= 2 ? 1 : 0)
        return (year, month, day)
    }

    /// Seconds from a `TimeInterval`, clamped to ±2^50 (no trap on NaN, infinity or overflow).
    static func clampedSeconds(_ interval: Double) -> Int64 {
        guard interval.isFinite else { return interval > 0 ? 1 << 50 : (interval < 0 ? -(1 << 50) : 0) }
        let bound = Double(Int64(1) << 50)
        return Int64(min(max(interval, -bound), bound).rounded(.down))
    }
}
