/// One `range-spec` of a `Range: bytes=…` request field (RFC 9110 §14.1.1), and the bytes it
/// selects of a representation of a given length (§14.1.2).
public enum ByteRangeSpec: Sendable, Hashable {
    /// `first-pos "-" [ last-pos ]`: from `first` to `last` (to the end when `last` is nil).
    case int(first: Int, last: Int?)
    /// `"-" suffix-length`: the last `length` bytes.
    case suffix(length: Int)

    /// Parses a `Range` field value into its range-specs; nil when the field must be ignored:
    /// a unit other than `bytes` (§14.2: "MUST ignore" a unit it does not understand) or an
    /// invalid ranges-specifier (§14.1.1 grammar, or an int-range whose last-pos is below its
    /// first-pos; §14.2 lets a server ignore those). The unit is case-insensitive (§14.1); OWS
    /// is allowed around list commas only (§5.6.1), and empty list elements are skipped.
    /// Numbers too large for `Int` are taken as `Int.max` (past any body).
    ///
    /// - Parameters:
    ///   - value: The field value (field lines combined with commas, RFC 9110 §5.3).
    public static func parse(_ value: String) -> [ByteRangeSpec]? {
        let text = value.trimmingOWS()
        guard let equals = text.firstIndex(of: "="), text[..<equals].lowercased() == "bytes" else { return nil }
        var specs: [ByteRangeSpec] = []
        for element in text[text.index(after: equals)...].split(separator: ",", omittingEmptySubsequences: false) {
            let member = element.trimmingOWS()
            if member.isEmpty { continue }
            guard let spec = parseSpec(Substring(member)) else { return nil }
            specs.append(spec)
        }
        return specs.isEmpty ? nil : specs
    }

    /// The offsets `first...last` selected of a representation of `length` bytes; nil when the
    /// spec is unsatisfiable (§14.1.1: an int-range whose first-pos is not below the length, a
    /// suffix-range of length zero). A last-pos past the end is clipped to the last byte and a
    /// suffix longer than the body selects all of it (§14.1.2). A zero-length body has no byte
    /// to select: nil for every spec.
    ///
    /// - Parameters:
    ///   - length: The length of the complete representation.
    public func resolve(length: Int) -> ClosedRange<Int>? {
        guard length > 0 else { return nil }
        switch self {
        case .int(let first, let last):
            guard first < length else { return nil }
            return first...Swift.min(last ?? Int.max, length - 1)
        case .suffix(let count):
            guard count > 0 else { return nil }
            return (length - Swift.min(count, length))...(length - 1)
        }
    }

    /// `int-range / suffix-range`; nil for anything else (the §14.1.1 `other-range` included:
    /// it belongs to units other than bytes).
    private static func parseSpec(_ text: Substring) -> ByteRangeSpec? {
        guard let dash = text.firstIndex(of: "-") else { return nil }
        let after = text[text.index(after: dash)...]
        if dash == text.startIndex {
            guard let count = digits(after) else { return nil }
            return .suffix(length: count)
        }
        guard let first = digits(text[..<dash]) else { return nil }
        if after.isEmpty { return .int(first: first, last: nil) }
        guard let last = digits(after), last >= first else { return nil }
        return .int(first: first, last: last)
    }

    /// `1*DIGIT` as an `Int`, saturating at `Int.max`; nil for anything else (signs, spaces).
    private static func digits(_ text: Substring) -> Int? {
        guard !text.isEmpty else { return nil }
        var value = 0
        for byte in text.utf8 {
            guard byte >= 0x30, byte <= 0x39 else { return nil }
            let (times, overflowA) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflowB) = times.addingReportingOverflow(Int(byte - 0x30))
            value = overflowA || overflowB ? Int.max : sum
        }
        return value
    }
}
