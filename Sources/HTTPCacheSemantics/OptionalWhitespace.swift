/// RFC 9110 §5.6.3 optional whitespace (OWS: SP and HTAB), the one definition the field parsers
/// share, as bytes and as text.
extension UInt8 {
    /// SP or HTAB.
    var isOWS: Bool { self == UInt8(ascii: " ") || self == UInt8(ascii: "\t") }
}

extension Substring.UTF8View {
    /// The bytes without leading and trailing OWS; no copy.
    func trimmingOWS() -> Substring.UTF8View {
        var trimmed = self.drop { $0.isOWS }
        while let last = trimmed.last, last.isOWS { trimmed = trimmed.dropLast() }
        return trimmed
    }
}

extension StringProtocol {
    /// The text without leading and trailing OWS.
    func trimmingOWS() -> String {
        let text = String(self)
        // Only ASCII bytes are dropped, so the rest always starts and ends on a scalar boundary.
        return String(text[...].utf8.trimmingOWS()) ?? text
    }
}
