/// Parsing of `delta-seconds` values (`max-age`, `s-maxage`, `Age`, `max-stale`, …).
///
/// RFC 9111 §1.2.2: delta-seconds = 1*DIGIT. A value that is not a non-negative integer is
/// invalid. A value too large to represent is clamped to 2^31, and since every later sum is done
/// in 64-bit arithmetic on values at most 2^31, an overflow can never turn negative.
public enum DeltaSeconds {
    /// The value used for an overflowing delta-seconds (RFC 9111 §1.2.2: 2147483648).
    public static let maximum = 2_147_483_648

    /// Parses a delta-seconds value.
    ///
    /// - Parameters:
    ///   - text: The value, already stripped of surrounding whitespace and quotes.
    /// - Returns: The number of seconds (clamped to ``maximum``), or nil if the text is empty,
    ///   negative, a fraction, or contains anything other than ASCII digits.
    public static func parse(_ text: some StringProtocol) -> Int? {
        var value = 0
        var sawDigit = false
        for byte in text.utf8 {
            // RFC 9111 §1.2.2: only DIGIT; "-1", "1.5", "1e9" and "+1" are invalid.
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            sawDigit = true
            if value < maximum {
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
        }
        guard sawDigit else { return nil }
        // RFC 9111 §1.2.2: on overflow use 2^31.
        return min(value, maximum)
    }
}
