#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HTTPTypes

/// The `If-Range` precondition (RFC 9110 §13.1.5), evaluated by the cache against the stored
/// response whose bytes it would send: true lets the `Range` apply, false means the whole
/// response is sent instead.
public enum IfRange {
    /// True when `value` validates `stored` for a range request (§13.1.5):
    /// - an entity-tag: it is strong and equals the stored `ETag` by strong comparison (§8.8.3.2);
    /// - an HTTP-date: it equals the stored `Last-Modified` exactly, and that `Last-Modified` is
    ///   strong, which a cache can only deduce when the stored `Date` is at least 60 seconds
    ///   later (§8.8.2.2);
    /// - anything else (a weak tag, a value that parses as neither): false.
    ///
    /// - Parameters:
    ///   - value: The `If-Range` field value.
    ///   - stored: The stored response the range would be taken from.
    public static func allowsRange(_ value: String, stored: StoredResponse) -> Bool {
        let text = value.trimmingOWS()
        if text.hasPrefix("\"") || text.hasPrefix("W/") {
            guard let tag = EntityTag(text), let storedTag = stored.entityTag else { return false }
            return tag.strongMatches(storedTag)
        }
        let received = HTTPDate(stored.responseTime)
        guard let date = HTTPDate(text, relativeTo: received), let lastModified = stored.lastModified,
            date == lastModified,
            let dateText = stored.headerFields[values: .date].first, let sent = HTTPDate(dateText, relativeTo: received)
        else { return false }
        return sent.secondsSince1970 - lastModified.secondsSince1970 >= 60
    }
}
