import HTTPTypes

/// A parsed `Cache-Control` field (RFC 9111 §5.2), request or response side.
///
/// Parsing is lenient and bounded (docs/Reliability.md §3.6):
/// - directive names are case-insensitive; unknown directives are ignored; stray commas and
///   whitespace are skipped;
/// - arguments may be tokens or quoted strings (`max-age="60"` is accepted: RFC 9111 §5.2
///   "recipients ought to accept both forms");
/// - an invalid delta-seconds argument (negative, fraction, empty) counts as 0, so an invalid
///   `max-age` makes the response stale (RFC 9111 §4.2.1) and an invalid request `max-age` forces
///   revalidation;
/// - a directive repeated with a different argument is a conflict: the response is treated as
///   stale (RFC 9111 §4.2.1 "either the first occurrence should be used or the response should be
///   considered stale"; we choose stale for `max-age`/`s-maxage`, and the most restrictive value
///   for the request directives);
/// - an unbalanced quote, more than ``maximumDirectives`` directives or more than
///   ``maximumBytes`` bytes stop the parse and set ``isMalformed``: the response is then treated as
///   stale, and the storage decision refuses it (a swallowed `no-store` could hide behind the quote).
public struct CacheControl: Sendable, Hashable {
    /// The number of directives parsed at most (docs/Reliability.md §3.6: huge lists are bounded).
    public static let maximumDirectives = 256
    /// The number of bytes of the combined field value parsed at most.
    public static let maximumBytes = 16 * 1024

    /// A request's `max-stale` (RFC 9111 §5.2.1.2).
    public enum MaxStale: Sendable, Hashable {
        /// `max-stale` without a value: any staleness is accepted.
        case any
        /// `max-stale=N`: staleness of at most N seconds is accepted.
        case seconds(Int)
    }

    /// `max-age` (RFC 9111 §5.2.1.1 request, §5.2.2.1 response).
    public var maxAge: Int?
    /// `s-maxage` (RFC 9111 §5.2.2.10), shared caches only.
    public var sharedMaxAge: Int?
    /// `max-stale` (RFC 9111 §5.2.1.2), request only.
    public var maxStale: MaxStale?
    /// `min-fresh` (RFC 9111 §5.2.1.3), request only.
    public var minFresh: Int?
    /// `stale-while-revalidate` (RFC 5861 §3).
    public var staleWhileRevalidate: Int?
    /// `stale-if-error` (RFC 5861 §4), request or response.
    public var staleIfError: Int?
    /// `no-cache`, qualified or not (RFC 9111 §5.2.1.4, §5.2.2.4).
    public var noCache = false
    /// Field names of a qualified `no-cache="…"` (lowercased); empty when unqualified.
    public var noCacheFieldNames: [String] = []
    /// `no-store` (RFC 9111 §5.2.1.5, §5.2.2.5).
    public var noStore = false
    /// `no-transform` (RFC 9111 §5.2.1.6, §5.2.2.6).
    public var noTransform = false
    /// `must-revalidate` (RFC 9111 §5.2.2.2).
    public var mustRevalidate = false
    /// `proxy-revalidate` (RFC 9111 §5.2.2.8), shared caches only.
    public var proxyRevalidate = false
    /// `must-understand` (RFC 9111 §5.2.2.3).
    public var mustUnderstand = false
    /// `private`, qualified or not (RFC 9111 §5.2.2.7).
    public var isPrivate = false
    /// Field names of a qualified `private="…"` (lowercased); empty when unqualified.
    public var privateFieldNames: [String] = []
    /// `public` (RFC 9111 §5.2.2.9).
    public var isPublic = false
    /// `immutable` (RFC 8246).
    public var immutable = false
    /// `only-if-cached` (RFC 9111 §5.2.1.7), request only.
    public var onlyIfCached = false
    /// True when a freshness directive (`max-age`, `s-maxage`) was invalid or repeated with a
    /// different value: the response must be treated as stale (RFC 9111 §4.2.1).
    public var hasInvalidFreshness = false
    /// True when parsing stopped early: unbalanced quote or size limits (docs/Reliability.md §3.6).
    public var isMalformed = false

    /// Creates an empty value (no directive).
    public init() {}

    /// Parses one `Cache-Control` field value.
    ///
    /// - Parameters:
    ///   - value: The field value, e.g. `"max-age=60, must-revalidate"`.
    public init(_ value: String) {
        self.init()
        parse(Array(value.utf8))
    }

    /// Parses every `Cache-Control` line of a response, combined as one list (RFC 9110 §5.3).
    ///
    /// - Parameters:
    ///   - responseFields: The response header fields.
    public init(responseFields: HTTPFields) {
        self.init()
        parse(Self.combinedBytes(responseFields[values: .cacheControl]))
    }

    /// Parses every `Cache-Control` line of a request; with no `Cache-Control` at all,
    /// `Pragma: no-cache` counts as `no-cache` (RFC 9111 §5.4).
    ///
    /// - Parameters:
    ///   - requestFields: The request header fields.
    public init(requestFields: HTTPFields) {
        self.init()
        let lines = requestFields[values: .cacheControl]
        if lines.isEmpty {
            // RFC 9111 §5.4: Pragma: no-cache is honoured only when Cache-Control is absent.
            for pragma in requestFields[values: .pragma] {
                let tokens = pragma.split(separator: ",").map { $0.trimmingOWS().lowercased() }
                if tokens.contains("no-cache") { noCache = true }
            }
        } else {
            parse(Self.combinedBytes(lines))
        }
    }

    /// True when the response must be treated as stale whatever its directives say
    /// (RFC 9111 §4.2.1 invalid freshness, docs/Reliability.md §3.6 malformed field).
    public var forcesStale: Bool { hasInvalidFreshness || isMalformed }

    private static func combinedBytes(_ lines: [String]) -> [UInt8] {
        var bytes: [UInt8] = []
        for line in lines {
            if !bytes.isEmpty { bytes.append(UInt8(ascii: ",")) }
            bytes.append(contentsOf: line.utf8)
            if bytes.count > maximumBytes { break }
        }
        return bytes
    }

    // MARK: - Parsing

    private mutating func parse(_ input: [UInt8]) {
        var bytes = input
        if bytes.count > Self.maximumBytes {
            // docs/Reliability.md §3.6: huge lists are bounded; what is past the limit is not read.
            bytes = Array(bytes[..<Self.maximumBytes])
            isMalformed = true
        }
        var seen: [String: String?] = [:]
        var index = 0
        var count = 0
        let end = bytes.count
        while index < end {
            while index < end, bytes[index].isOWS || bytes[index] == UInt8(ascii: ",") { index += 1 }
            guard index < end else { break }
            guard count < Self.maximumDirectives else {
                isMalformed = true
                return
            }
            let nameStart = index
            while index < end, bytes[index] != UInt8(ascii: "="), bytes[index] != UInt8(ascii: ","),
                !bytes[index].isOWS
            {
                index += 1
            }
            if bytes[nameStart..<index].contains(UInt8(ascii: "\"")) {
                isMalformed = true
                return
            }
            let name = String(decoding: bytes[nameStart..<index], as: UTF8.self).lowercased()
            while index < end, bytes[index].isOWS { index += 1 }
            var argument: String?
            if index < end, bytes[index] == UInt8(ascii: "=") {
                index += 1
                while index < end, bytes[index].isOWS { index += 1 }
                if index < end, bytes[index] == UInt8(ascii: "\"") {
                    // RFC 9110 §5.6.4 quoted-string with quoted-pair.
                    index += 1
                    var value: [UInt8] = []
                    var closed = false
                    while index < end {
                        let byte = bytes[index]
                        if byte == UInt8(ascii: "\\"), index + 1 < end {
                            value.append(bytes[index + 1])
                            index += 2
                        } else if byte == UInt8(ascii: "\"") {
                            closed = true
                            index += 1
                            break
                        } else {
                            value.append(byte)
                            index += 1
                        }
                    }
                    guard closed else {
                        // docs/Reliability.md §3.6: unbalanced quote → stop parsing, treat as stale.
                        isMalformed = true
                        return
                    }
                    argument = String(decoding: value, as: UTF8.self)
                } else {
                    let valueStart = index
                    while index < end, bytes[index] != UInt8(ascii: ","), !bytes[index].isOWS { index += 1 }
                    argument = String(decoding: bytes[valueStart..<index], as: UTF8.self)
                }
            }
            // Anything after the directive up to the next comma is junk and skipped.
            while index < end, bytes[index] != UInt8(ascii: ",") {
                if bytes[index] == UInt8(ascii: "\"") {
                    isMalformed = true
                    return
                }
                index += 1
            }
            guard !name.isEmpty else { continue }
            count += 1
            apply(name: name, argument: argument, seen: &seen)
        }
    }

    private mutating func apply(name: String, argument: String?, seen: inout [String: String?]) {
        let previous = seen[name]
        let isRepeat = previous != nil
        let conflicts = isRepeat && previous! != argument
        if !isRepeat { seen[name] = .some(argument) }
        let seconds = argument.flatMap { DeltaSeconds.parse($0) }

        switch name {
        case "max-age":
            // RFC 9111 §4.2.1: invalid → stale; repeated with another value → stale.
            if seconds == nil || conflicts { hasInvalidFreshness = true }
            maxAge = (seconds == nil || conflicts) ? 0 : (maxAge ?? seconds)
        case "s-maxage":
            if seconds == nil || conflicts { hasInvalidFreshness = true }
            sharedMaxAge = (seconds == nil || conflicts) ? 0 : (sharedMaxAge ?? seconds)
        case "max-stale":
            // RFC 9111 §5.2.1.2: without a value any staleness; an invalid value allows none;
            // repeated → the most restrictive.
            let value: MaxStale = argument == nil ? .any : .seconds(seconds ?? 0)
            switch (maxStale, value) {
            case (.none, _), (.any, _): maxStale = value
            case (.seconds, .any): break
            case (.seconds(let old), .seconds(let new)): maxStale = .seconds(min(old, new))
            }
        case "min-fresh":
            // RFC 9111 §5.2.1.3; invalid → the most restrictive value.
            minFresh = max(minFresh ?? 0, seconds ?? DeltaSeconds.maximum)
        case "stale-while-revalidate":
            // RFC 5861 §3; invalid or conflicting → no stale serving.
            staleWhileRevalidate = (seconds == nil || conflicts) ? 0 : (staleWhileRevalidate ?? seconds)
        case "stale-if-error":
            // RFC 5861 §4.
            staleIfError = (seconds == nil || conflicts) ? 0 : (staleIfError ?? seconds)
        case "no-cache":
            noCache = true
            if let argument { noCacheFieldNames += Self.fieldNames(argument) }
        case "private":
            isPrivate = true
            if let argument { privateFieldNames += Self.fieldNames(argument) }
        case "no-store": noStore = true
        case "no-transform": noTransform = true
        case "must-revalidate": mustRevalidate = true
        case "proxy-revalidate": proxyRevalidate = true
        case "must-understand": mustUnderstand = true
        case "public": isPublic = true
        case "immutable": immutable = true
        case "only-if-cached": onlyIfCached = true
        default:
            // RFC 9111 §5.2.3: unknown extension directives are ignored.
            break
        }
    }

    private static func fieldNames(_ argument: String) -> [String] {
        argument.split(separator: ",").map { $0.trimmingOWS().lowercased() }.filter { !$0.isEmpty }
    }
}
