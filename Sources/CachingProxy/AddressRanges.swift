import NIOCore

/// A list of IP address ranges (`10.0.0.0/8`, `192.168.1.7`, `fd00::/8`, `::1`) that an admin
/// surface (`PURGE`, `/metrics`) answers, matched against the connection's peer address.
///
/// Why not "loopback" alone: behind a TLS terminator or a sidecar on the same host (stunnel,
/// Envoy, nginx in front), every client's connection reaches the proxy from 127.0.0.1, so
/// loopback names the terminator, not the client. An explicit list (or the purge token) says who
/// may purge or scrape; put the terminator's address in it only if it authenticates for you.
public struct AddressRanges: Sendable, Hashable, CustomStringConvertible {
    /// One range: the first `prefixLength` bits of `address` (4 bytes for IPv4, 16 for IPv6).
    struct Range: Sendable, Hashable {
        var address: [UInt8]
        var prefixLength: Int

        func contains(_ candidate: [UInt8]) -> Bool {
            guard candidate.count == address.count else { return false }
            var bits = prefixLength
            for (a, b) in zip(address, candidate) where bits > 0 {
                let mask: UInt8 = bits >= 8 ? 0xFF : ~(0xFF >> UInt8(bits))
                if a & mask != b & mask { return false }
                bits -= 8
            }
            return true
        }
    }

    let ranges: [Range]
    /// The ranges as given.
    public let description: String

    /// The loopback ranges, 127.0.0.0/8 and ::1 (what `--allow-purge` means).
    public static let loopback = try! AddressRanges(["127.0.0.0/8", "::1/128"])

    /// Addresses a forward proxy does not reach unless told to: loopback, the private and
    /// shared ranges (RFC 1918, RFC 6598, RFC 4193), link-local (cloud metadata services answer
    /// at 169.254.169.254) and the unspecified addresses.
    public static let internalNetworks = try! AddressRanges([
        "127.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "169.254.0.0/16",
        "0.0.0.0/8", "::1/128", "::/128", "fc00::/7", "fe80::/10",
    ])

    /// Whether the IP literal `text` (IPv6 with or without brackets) is in one of the ranges;
    /// false for a name.
    public func contains(literal text: String) -> Bool {
        var text = text
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        return contains(try? SocketAddress(ipAddress: text, port: 0))
    }

    /// Parses `CIDR` items (an address alone is a single host).
    /// - Throws: ``ProxyConfigurationError/invalidAddressRange(_:)``.
    public init(_ items: [String]) throws(ProxyConfigurationError) {
        ranges = try items.map { item throws(ProxyConfigurationError) in
            let parts = item.split(separator: "/", maxSplits: 1)
            guard let first = parts.first, let bytes = Self.bytes(of: String(first)) else {
                throw .invalidAddressRange(item)
            }
            let maximum = bytes.count * 8
            guard let length = parts.count == 2 ? Int(parts[1]) : maximum, (0...maximum).contains(length) else {
                throw .invalidAddressRange(item)
            }
            return Range(address: bytes, prefixLength: length)
        }
        description = items.joined(separator: " ")
    }

    /// Whether `address` (an IPv4 or IPv6 peer; an IPv4 address mapped into IPv6 counts as the
    /// IPv4 one) is in one of the ranges.
    public func contains(_ address: SocketAddress?) -> Bool {
        guard let text = address?.ipAddress, var bytes = Self.bytes(of: text) else { return false }
        if bytes.count == 16, bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
            bytes = Array(bytes[12...]) // ::ffff:a.b.c.d
        }
        return ranges.contains { $0.contains(bytes) }
    }

    /// The address's bytes, parsed as NIO parses a literal (IPv4 dotted quad, or IPv6).
    private static func bytes(of text: String) -> [UInt8]? {
        guard let address = try? SocketAddress(ipAddress: text, port: 0) else { return nil }
        switch address {
        case .v4(let v4):
            return withUnsafeBytes(of: v4.address.sin_addr) { Array($0) }
        case .v6(let v6):
            return withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
        default:
            return nil
        }
    }
}
