import HTTPTypes

/// Fields whose values are case-insensitive comma-separated lists of tokens, so that case and
/// whitespace around commas can be normalised without changing their meaning (RFC 9111 §4.1
/// "normalizing both header field values in a way that is known to have identical semantics").
/// Sources: RFC 9110 §12.5.3 (Accept-Encoding: content codings are case-insensitive, §8.4.1),
/// RFC 9110 §12.5.4 (Accept-Language: language ranges are case-insensitive, RFC 4647 §2).
/// Other fields are only trimmed and have runs of whitespace collapsed: conservative on purpose.
private let caseInsensitiveListFields: Set<String> = ["accept-encoding", "accept-language"]

/// The selecting request values of a variant (RFC 9111 §4.1), normalised, usable as a secondary
/// key.
///
/// A field absent from the request is recorded as absent, which matches only another absent
/// field (RELIABILITY §3.6); an empty field is present with the value "".
public struct VaryKey: Sendable, Hashable {
    /// One selecting field and its normalised value (nil when absent from the request).
    public struct Entry: Sendable, Hashable {
        /// The lowercased field name.
        public var name: String
        /// The normalised value, or nil when the request did not carry the field.
        public var value: String?
    }

    /// The selecting fields, in the order `Vary` lists them.
    public var entries: [Entry]

    /// Computes the selecting values of a request for the names in a response's `Vary`.
    ///
    /// - Parameters:
    ///   - vary: The stored response's `Vary`.
    ///   - requestFields: The header fields of the request (stored or presented).
    public init(vary: VaryFields, requestFields: HTTPFields) {
        entries = vary.names.map { name in
            Entry(name: name.canonicalName, value: Self.normalizedValue(of: name, in: requestFields))
        }
    }

    /// The normalised value of a request field: lines combined with ", ", surrounding whitespace
    /// trimmed, inner runs of whitespace collapsed to one space, and for the fields in
    /// `caseInsensitiveListFields` list members trimmed and lowercased.
    ///
    /// - Parameters:
    ///   - name: The field name.
    ///   - requestFields: The request header fields.
    /// - Returns: The normalised value, or nil when the field is absent.
    public static func normalizedValue(of name: HTTPField.Name, in requestFields: HTTPFields) -> String? {
        let lines = requestFields[values: name]
        guard !lines.isEmpty else { return nil }
        let combined = lines.map(collapseWhitespace).joined(separator: ", ")
        guard caseInsensitiveListFields.contains(name.canonicalName) else { return combined }
        return combined.split(separator: ",").map { $0.trimmingOWS().lowercased() }.filter { !$0.isEmpty }
            .joined(separator: ", ")
    }

    /// The request fields named by `Vary`, to be stored with the entry (RFC 9111 §4.1: the
    /// selecting request values must be kept with the stored response).
    ///
    /// - Parameters:
    ///   - vary: The response's `Vary`.
    ///   - requestFields: The request header fields.
    public static func selectingFields(vary: VaryFields, requestFields: HTTPFields) -> HTTPFields {
        var result = HTTPFields()
        for name in vary.names {
            for field in requestFields[fields: name] { result.append(field) }
        }
        return result
    }

    /// Whether a stored variant may serve a request (RFC 9111 §4.1): `Vary: *` never matches;
    /// otherwise every selecting value must be equal after normalisation.
    ///
    /// - Parameters:
    ///   - vary: The stored response's `Vary`.
    ///   - storedRequestFields: The selecting request fields kept with the stored response.
    ///   - requestFields: The presented request's header fields.
    public static func matches(
        vary: VaryFields,
        storedRequestFields: HTTPFields,
        requestFields: HTTPFields
    ) -> Bool {
        guard !vary.isWildcard else { return false }
        return VaryKey(vary: vary, requestFields: storedRequestFields)
            == VaryKey(vary: vary, requestFields: requestFields)
    }

    /// An injective byte encoding for use as a secondary key: a tag and version, the entry count,
    /// then per entry the length-prefixed name and either `0` (absent) or `1` and the
    /// length-prefixed value. Lengths are 32-bit big-endian.
    public var encoded: [UInt8] {
        var bytes: [UInt8] = [UInt8(ascii: "V"), 1]
        LengthPrefix.append(UInt32(clamping: entries.count), to: &bytes)
        for entry in entries {
            LengthPrefix.appendField(Array(entry.name.utf8), to: &bytes)
            if let value = entry.value {
                bytes.append(1)
                LengthPrefix.appendField(Array(value.utf8), to: &bytes)
            } else {
                bytes.append(0)
            }
        }
        return bytes
    }

    private static func collapseWhitespace(_ text: String) -> String {
        var result = ""
        var pendingSpace = false
        for scalar in text.unicodeScalars {
            if scalar == " " || scalar == "\t" {
                pendingSpace = !result.isEmpty
            } else {
                if pendingSpace { result.unicodeScalars.append(" ") }
                pendingSpace = false
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
