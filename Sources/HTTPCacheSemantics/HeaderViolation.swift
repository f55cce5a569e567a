import HTTPTypes

/// Why a response head may not be stored as received (docs/Reliability.md §3.2 and §3.5).
public enum HeaderViolation: Sendable, Hashable {
    /// More field lines than ``HeaderLimits/maximumFieldCount``.
    case tooManyFields(count: Int)
    /// More bytes than ``HeaderLimits/maximumTotalBytes``.
    case headerBlockTooLarge(bytes: Int)
    /// One field line longer than ``HeaderLimits/maximumFieldLineBytes``.
    case fieldLineTooLong(name: String, bytes: Int)
    /// A field name that is not an RFC 9110 §5.1 token (empty, space, colon, control byte…).
    case invalidFieldName(String)
    /// A field value containing CR, LF, NUL or another control byte (RFC 9110 §5.5; header
    /// injection or obs-fold at replay time, docs/Reliability.md §3.2).
    case invalidFieldValue(name: String)

    /// Checks raw field lines as received, before they are turned into `HTTPFields` (which
    /// silently replaces CR/LF/NUL by spaces and so would hide an injection attempt).
    ///
    /// - Parameters:
    ///   - rawFields: The name/value pairs as received.
    ///   - limits: The limits to enforce.
    /// - Returns: The first violation found, or nil when the head may be stored.
    public static func check(
        rawFields: some Sequence<(name: String, value: String)>,
        limits: HeaderLimits = HeaderLimits()
    ) -> HeaderViolation? {
        var count = 0
        var total = 0
        for (name, value) in rawFields {
            count += 1
            if count > limits.maximumFieldCount { return .tooManyFields(count: count) }
            guard HTTPField.Name(name) != nil else { return .invalidFieldName(name) }
            // RFC 9110 §5.5: field-value = *field-content; VCHAR / obs-text / SP / HTAB only.
            for byte in value.utf8 where (byte < 0x20 && byte != 0x09) || byte == 0x7F {
                return .invalidFieldValue(name: name)
            }
            let line = name.utf8.count + 2 + value.utf8.count
            if line > limits.maximumFieldLineBytes { return .fieldLineTooLong(name: name, bytes: line) }
            total += line + 2
            if total > limits.maximumTotalBytes { return .headerBlockTooLarge(bytes: total) }
        }
        return nil
    }

    /// Checks the size limits of fields already in `HTTPFields` form (docs/Reliability.md §3.5).
    ///
    /// - Parameters:
    ///   - fields: The header fields.
    ///   - limits: The limits to enforce.
    /// - Returns: The first violation found, or nil.
    public static func check(fields: HTTPFields, limits: HeaderLimits = HeaderLimits()) -> HeaderViolation? {
        check(rawFields: fields.lazy.map { (name: $0.name.rawName, value: $0.value) }, limits: limits)
    }
}
