import HTTPTypes

/// Hop-by-hop fields, never stored (RFC 9111 §3.1) nor merged from a 304 (RFC 9111 §3.2).
/// Source: RFC 9110 §7.6.1 (Connection, and the fields it names; Proxy-Connection, Keep-Alive,
/// TE, Transfer-Encoding, Upgrade), RFC 9110 §11.7.1–§11.7.2 (Proxy-Authenticate,
/// Proxy-Authorization: consumed by the proxy they are addressed to), RFC 9110 §6.6.2 (Trailer).
private let hopByHopFieldNames: Set<String> = Set(
    [
        HTTPField.Name.connection, .keepAlive, .proxyConnection, .te, .transferEncoding, .upgrade,
        .proxyAuthenticate, .proxyAuthorization, .trailer,
    ].map(\.canonicalName))

/// Removal of hop-by-hop fields before a response head is stored.
public enum HopByHopFields {
    /// The lowercased names that must not be stored: the fixed table plus every name listed in
    /// `Connection` (RFC 9110 §7.6.1).
    ///
    /// - Parameters:
    ///   - fields: The received header fields.
    public static func names(in fields: HTTPFields) -> Set<String> {
        names(listedIn: fields[values: .connection])
    }

    /// ``names(in:)`` from the message's `Connection` lines alone, for a caller that holds its
    /// fields in another library's form.
    ///
    /// - Parameters:
    ///   - connectionLines: The values of the message's `Connection` fields, as received.
    public static func names(listedIn connectionLines: some Sequence<String>) -> Set<String> {
        // The table is built once; a listed name it already holds (`Connection: keep-alive`, the
        // usual one) is recognised in place, without a lowered copy, so the usual message costs
        // no string and no copy of the set. Bytes, not characters: the list is ASCII tokens.
        var names = hopByHopFieldNames
        for line in connectionLines {
            for member in line.utf8.split(separator: UInt8(ascii: ",")) {
                let token = member.trimmingOWS()
                if token.isEmpty || isInTable(token) { continue }
                names.insert(Substring(token).lowercased())
            }
        }
        return names
    }

    /// Whether a listed name is one of the fixed table's, compared without regard to ASCII case.
    private static func isInTable(_ token: Substring.UTF8View) -> Bool {
        hopByHopFieldNames.contains { name in
            name.utf8.count == token.count
                && zip(name.utf8, token).allSatisfy { known, byte in
                    known == byte || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") && known == byte + 32)
                }
        }
    }

    /// The fields without the hop-by-hop ones (RFC 9110 §7.6.1, RFC 9111 §3.1); order kept.
    ///
    /// - Parameters:
    ///   - fields: The received header fields.
    public static func removing(from fields: HTTPFields) -> HTTPFields {
        let excluded = names(in: fields)
        var result = HTTPFields()
        for field in fields where !excluded.contains(field.name.canonicalName) {
            result.append(field)
        }
        return result
    }
}
