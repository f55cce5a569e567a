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
        // The table is built once; a listed name it already holds (`Connection: keep-alive`, the
        // usual one) adds nothing, so the usual message costs no copy of it.
        var names = hopByHopFieldNames
        for line in fields[values: .connection] {
            for member in line.split(separator: ",") {
                let name = member.trimmingOWS().lowercased()
                if !name.isEmpty && !names.contains(name) { names.insert(name) }
            }
        }
        return names
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
