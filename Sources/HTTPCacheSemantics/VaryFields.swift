import HTTPTypes

/// The `Vary` field of a stored response (RFC 9110 §12.5.5, RFC 9111 §4.1).
public struct VaryFields: Sendable, Hashable {
    /// Names kept at most while parsing; any list this long is already over every storage limit.
    public static let maximumParsedNames = 64

    /// The field names listed, lowercased, duplicates removed, in first-seen order.
    public var names: [HTTPField.Name]
    /// True when `Vary` contains `*`: the response never matches a later request (RFC 9111 §4.1).
    public var isWildcard: Bool
    /// True when a listed member is not a valid field name (the response is not stored).
    public var hasInvalidName: Bool

    /// Parses every `Vary` line of a response as one list.
    ///
    /// - Parameters:
    ///   - responseFields: The response header fields.
    public init(responseFields: HTTPFields) {
        var names: [HTTPField.Name] = []
        var wildcard = false
        var invalid = false
        for line in responseFields[values: .vary] {
            for member in line.split(separator: ",") where names.count <= Self.maximumParsedNames {
                let text = member.trimmingOWS()
                if text.isEmpty { continue }
                if text == "*" {
                    wildcard = true
                } else if let name = HTTPField.Name(text.lowercased()) {
                    if !names.contains(name) { names.append(name) }
                } else {
                    invalid = true
                }
            }
        }
        self.names = names
        self.isWildcard = wildcard
        self.hasInvalidName = invalid
    }

    /// True when the response has no `Vary` names and no `*`.
    public var isEmpty: Bool { names.isEmpty && !isWildcard }
}
