import HTTPTypes

/// Field names the cache needs that swift-http-types does not predefine.
extension HTTPField.Name {
    /// `Pragma` (RFC 9111 §5.4, deprecated but still honoured on requests).
    static let pragma = HTTPField.Name("Pragma")!
    /// `Keep-Alive` (hop-by-hop, RFC 9110 §7.6.1).
    static let keepAlive = HTTPField.Name("Keep-Alive")!
    /// `Proxy-Connection` (non-standard hop-by-hop field still sent by old clients).
    static let proxyConnection = HTTPField.Name("Proxy-Connection")!
}
