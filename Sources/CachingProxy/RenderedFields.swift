import Foundation
import HTTPCacheSemantics

/// Field values a connection sends again and again, rendered once and reused while they still
/// apply: `Date` changes once a second (nginx keeps its date string the same way), and the
/// `Cache-Status` member of repeated hits on one response changes only when its `ttl` does.
/// Rendering either was a few percent of a cached answer's instructions each.
struct RenderedFields {
    private var dateSecond: Int64 = .min
    private var dateValue = ""
    private var member: CacheStatusMember?
    private var memberCacheName = ""
    private var memberValue = ""

    /// `Date` for now (RFC 9110 §6.6.1, IMF-fixdate).
    mutating func date(now: Date = Date()) -> String {
        let date = HTTPDate(now)
        if date.secondsSince1970 != dateSecond {
            dateSecond = date.secondsSince1970
            dateValue = date.imfFixdate
        }
        return dateValue
    }

    /// `member` as a `Cache-Status` list member (``CacheStatusMember/fieldValue(cacheName:)``).
    mutating func cacheStatus(_ member: CacheStatusMember, cacheName: String) -> String {
        if member != self.member || cacheName != memberCacheName {
            self.member = member
            memberCacheName = cacheName
            memberValue = member.fieldValue(cacheName: cacheName)
        }
        return memberValue
    }
}
