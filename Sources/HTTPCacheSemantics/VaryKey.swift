import CacheEntryFormat
import HTTPTypes

// RFC 9111 §4.1: two requests' selecting fields match when one can be turned into the other by
// "adding or removing whitespace, where allowed in the header field's syntax", combining field
// lines, and "normalizing both header field values in a way that is known to have identical
// semantics". What each field's syntax allows is known only for the fields below; every other
// field is only trimmed and has runs of whitespace collapsed: conservative on purpose.

/// The content negotiation fields of RFC 9110 §12.5: comma-separated lists (§5.6.1: whitespace
/// around "," is optional and empty members are ignored) whose members take parameters or a
/// weight after ";" with optional whitespace around it (§5.6.6, §12.4.2). Quoted strings
/// (RFC 9110 §5.6.4, media type parameters of Accept) are kept as they are.
private let negotiationListFields: Set<String> = ["accept", "accept-charset", "accept-encoding", "accept-language"]

/// Lists whose members are case-insensitive: charsets (RFC 9110 §8.3.2), content codings
/// (§8.4.1) and language ranges (RFC 4647 §2); `q` and its value too (§12.4.2).
private let caseInsensitiveListFields: Set<String> = ["accept-charset", "accept-encoding", "accept-language"]

/// Lists whose member order has no meaning: Accept-Encoding names a set of acceptable codings,
/// preference is given by weights (RFC 9110 §12.5.3). Accept and Accept-Language keep their
/// order: many origins break ties between equal weights by it.
private let unorderedListFields: Set<String> = ["accept-encoding"]

/// The selecting request values of a variant (RFC 9111 §4.1), normalised, usable as a secondary
/// key.
///
/// A field absent from the request is recorded as absent, which matches only another absent
/// field (docs/Reliability.md §3.6); an empty field is present with the value "".
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
    /// trimmed and inner runs of whitespace collapsed to one space. The negotiation fields of
    /// RFC 9110 §12.5 are normalised as lists besides: whitespace around "," and ";" and empty
    /// members dropped, members lowercased where case-insensitive, and sorted where their order
    /// has no meaning (the tables above).
    ///
    /// - Parameters:
    ///   - name: The field name.
    ///   - requestFields: The request header fields.
    /// - Returns: The normalised value, or nil when the field is absent.
    public static func normalizedValue(of name: HTTPField.Name, in requestFields: HTTPFields) -> String? {
        let lines = requestFields[values: name]
        guard !lines.isEmpty else { return nil }
        let field = name.canonicalName
        guard negotiationListFields.contains(field) else {
            return lines.map(collapseWhitespace).joined(separator: ", ")
        }
        var members = lines.flatMap(listMembers)
        if caseInsensitiveListFields.contains(field) { members = members.map { $0.lowercased() } }
        if unorderedListFields.contains(field) { members.sort() }
        return members.joined(separator: ", ")
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
        VariantLayout.encode(entries.map { VariantLayout.Field(name: $0.name, value: $0.value) })
    }

    /// The members of one list line (RFC 9110 §5.6.1), empty ones dropped, with whitespace
    /// around ";" removed and other runs collapsed to one space, outside quoted strings only.
    private static func listMembers(_ line: String) -> [String] {
        var members: [String] = []
        var member = ""
        var pendingSpace = false
        var inQuotes = false
        var escaped = false
        func finishMember() {
            if !member.isEmpty { members.append(member) }
            member = ""
            pendingSpace = false
        }
        for scalar in line.unicodeScalars {
            if inQuotes {
                member.unicodeScalars.append(scalar)
                if escaped {
                    escaped = false
                } else if scalar == "\\" {
                    escaped = true
                } else if scalar == "\"" {
                    inQuotes = false
                }
                continue
            }
            switch scalar {
            case " ", "\t":
                pendingSpace = !member.isEmpty && member.unicodeScalars.last != ";"
            case ",":
                finishMember()
            case ";":
                pendingSpace = false
                member.unicodeScalars.append(scalar)
            default:
                if pendingSpace { member.unicodeScalars.append(" ") }
                pendingSpace = false
                if scalar == "\"" { inQuotes = true }
                member.unicodeScalars.append(scalar)
            }
        }
        finishMember()
        return members
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
