import HTTPTypes

/// A client's own conditional request, evaluated by the cache against the stored response it is
/// about to serve (RFC 9111 §4.3.2, RFC 9110 §13.2.2).
///
/// Only `If-None-Match` and `If-Modified-Since` are evaluated here: they are the fields a cache
/// can answer 304 for. `If-Match` and `If-Unmodified-Since` are preconditions meant for the
/// origin (RFC 9111 §4.3.2: a cache MUST NOT evaluate those); a request carrying them is answered
/// as if it had none. `If-Range` only decides whether a `Range` applies (``RangeSelection``).
public enum ClientConditional {
    /// The client fields the cache evaluates itself. They are taken off a request before the
    /// cache sends its own validators upstream, so the origin answers for the stored response.
    public static let evaluatedFieldNames: [HTTPField.Name] = [.ifNoneMatch, .ifModifiedSince]

    /// True when the answer to `request` should be 304 Not Modified instead of `stored`.
    ///
    /// RFC 9110 §13.2.2: `If-None-Match` first, compared weakly (§13.1.2), `*` matching any
    /// stored response; `If-Modified-Since` only without `If-None-Match`, and only when its value
    /// is a valid HTTP-date, against `Last-Modified`, else `Date`, else the time the response was
    /// received (RFC 9111 §4.3.2). Only GET and HEAD are answered this way.
    ///
    /// - Parameters:
    ///   - request: The client's request.
    ///   - stored: The stored response the cache would serve.
    public static func isNotModified(request: HTTPRequest, stored: StoredResponse) -> Bool {
        guard request.method == .get || request.method == .head else { return false }
        let received = HTTPDate(stored.responseTime)
        let noneMatch = request.headerFields[values: .ifNoneMatch]
        if !noneMatch.isEmpty {
            return noneMatchSatisfiedBy(noneMatch, tag: stored.entityTag) == false
        }
        guard let sinceText = request.headerFields[values: .ifModifiedSince].first,
            let since = HTTPDate(sinceText, relativeTo: received)
        else { return false }
        let modified =
            stored.lastModified ?? Freshness.dateValue(headerFields: stored.headerFields, responseTime: received)
        return !(since < modified)
    }

    /// RFC 9110 §13.1.2: false when a listed tag (or `*`) matches the stored one weakly, so the
    /// condition fails and the answer is 304; true when nothing matches; nil for a list that
    /// does not parse (then nothing is answered 304). Tags may hold commas, so the list is
    /// read tag by tag rather than split.
    private static func noneMatchSatisfiedBy(_ lines: [String], tag: EntityTag?) -> Bool? {
        var sawMember = false
        for line in lines {
            var rest = Substring(line)
            while true {
                rest = rest.drop(while: { $0 == " " || $0 == "\t" || $0 == "," })
                if rest.isEmpty { break }
                sawMember = true
                if rest.first == "*" { return false }
                let weakPrefix = rest.hasPrefix("W/") ? 2 : 0
                let quoted = rest.dropFirst(weakPrefix)
                guard quoted.first == "\"", let close = quoted.dropFirst().firstIndex(of: "\"") else { return nil }
                guard let listed = EntityTag(String(rest[..<quoted.index(after: close)])) else { return nil }
                if let tag, listed.weakMatches(tag) { return false }
                rest = rest[quoted.index(after: close)...]
            }
        }
        return sawMember ? true : nil
    }

    /// The head of the 304 that answers a client's conditional request from `stored`: its fields
    /// without those that describe a body (RFC 9110 §15.4.5: the 304 carries the fields a 200
    /// would have, for the client to update its own copy; there is no content to describe).
    ///
    /// - Parameters:
    ///   - fields: The fields the 200 would have carried (Age included).
    public static func notModifiedFields(from fields: HTTPFields) -> HTTPFields {
        var result = fields
        result[.contentLength] = nil
        result[.contentRange] = nil
        result[.transferEncoding] = nil
        return result
    }
}
