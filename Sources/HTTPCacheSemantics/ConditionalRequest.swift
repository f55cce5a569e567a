import HTTPTypes

/// The validator fields of a conditional request built from stored responses (RFC 9111 §4.3.1).
public enum ConditionalRequest {
    /// The conditional header fields to add to a request validating one stored response.
    ///
    /// - Parameters:
    ///   - stored: The stored response being validated.
    /// - Returns: `If-None-Match` and/or `If-Modified-Since`; empty when the response has no
    ///   validator (the request is then unconditional).
    public static func headers(for stored: StoredResponse) -> HTTPFields {
        headers(for: [stored])
    }

    /// The conditional header fields to add to a request validating several stored variants.
    ///
    /// RFC 9111 §4.3.1: the cache MUST send the entity tags of the stored responses being
    /// validated (If-None-Match, compared weakly by the origin, RFC 9110 §13.1.2), and SHOULD send
    /// If-Modified-Since with the Last-Modified value when a single response is validated. The
    /// `Date` of a response is not used as a stand-in for a missing Last-Modified: it is not a
    /// validator the origin generated (RFC 9110 §13.1.3 prefers Last-Modified).
    ///
    /// - Parameters:
    ///   - stored: The stored responses being validated.
    public static func headers(for stored: [StoredResponse]) -> HTTPFields {
        var fields = HTTPFields()
        var tags: [String] = []
        for response in stored {
            if let tag = response.entityTag, !tags.contains(tag.fieldValue) { tags.append(tag.fieldValue) }
        }
        if !tags.isEmpty { fields[.ifNoneMatch] = tags.joined(separator: ", ") }
        if stored.count == 1, let lastModified = stored[0].lastModified {
            fields[.ifModifiedSince] = lastModified.imfFixdate
        }
        return fields
    }
}
