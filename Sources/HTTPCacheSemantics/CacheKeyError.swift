/// Why a URL, method or partition cannot form a cache key (docs/Reliability.md §3.2, §3.6): such a
/// request is simply not cacheable.
public enum CacheKeyError: Error, Sendable, Hashable {
    /// The URL is longer than ``NormalizedURL/maximumBytes``.
    case urlTooLong(bytes: Int)
    /// A control byte, space, non-ASCII byte outside the host, or a character RFC 3986 does not
    /// allow, at this byte offset.
    case invalidCharacter(offset: Int)
    /// No `scheme:` prefix.
    case missingScheme
    /// A scheme other than http or https.
    case unsupportedScheme
    /// No `//authority`, or an empty host.
    case missingHost
    /// The authority carries userinfo (`user:pass@`): never cached, never keyed.
    case userinfoNotAllowed
    /// The host has characters outside letters, digits, `-`, `.`, `_` (or a malformed IP literal).
    case invalidHost
    /// The host is not ASCII (IDN): only punycode (`xn--…`) hosts are accepted.
    case nonASCIIHost
    /// The host is longer than 255 bytes (RFC 1035 §2.3.4 / RFC 3986 §3.2.2).
    case hostTooLong(bytes: Int)
    /// The port is not a number in 1…65535.
    case invalidPort
    /// A `%` not followed by two hex digits, at this byte offset.
    case invalidPercentEscape(offset: Int)
    /// The method is not GET or HEAD (docs/Reliability.md §3.2).
    case methodNotCacheable
    /// The partition is longer than ``CacheKey/maximumPartitionBytes``.
    case partitionTooLong(bytes: Int)
}
