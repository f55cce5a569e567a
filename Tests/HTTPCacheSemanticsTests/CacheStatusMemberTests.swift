import HTTPCacheSemantics
import Testing

struct CacheStatusCase: Sendable, CustomTestStringConvertible {
    let name: String
    let member: CacheStatusMember
    var cacheName = CacheStatusMember.defaultCacheName
    let expected: String
    var testDescription: String { "\(name) [RFC 9211]" }
}

@Suite("The Cache-Status field (RFC 9211)")
struct CacheStatusMemberTests {
    static let cases: [CacheStatusCase] = [
        .init(name: "status-hit", member: .init(hit: true), expected: "urlcache;hit"),
        .init(name: "status-hit-ttl", member: .init(hit: true, ttlSeconds: 376), expected: "urlcache;hit;ttl=376"),
        .init(
            name: "status-stale-hit-negative-ttl", member: .init(hit: true, ttlSeconds: -412),
            expected: "urlcache;hit;ttl=-412"),
        .init(
            name: "status-miss-stored",
            member: .init(forward: .uriMiss, forwardStatus: 200, ttlSeconds: 60, stored: true),
            expected: "urlcache;fwd=uri-miss;fwd-status=200;ttl=60;stored"),
        .init(
            name: "status-revalidated", member: .init(forward: .stale, forwardStatus: 304),
            expected: "urlcache;fwd=stale;fwd-status=304"),
        .init(
            name: "status-collapsed", member: .init(forward: .uriMiss, collapsed: true),
            expected: "urlcache;fwd=uri-miss;collapsed"),
        .init(
            name: "status-not-collapsed", member: .init(forward: .uriMiss, collapsed: false),
            expected: "urlcache;fwd=uri-miss;collapsed=?0"),
        .init(
            name: "status-detail",
            member: .init(forward: .uriMiss, forwardStatus: 200, detail: NotStorableReason.privateResponse.token),
            expected: "urlcache;fwd=uri-miss;fwd-status=200;detail=private"),
        .init(name: "status-vary-miss", member: .init(forward: .varyMiss), expected: "urlcache;fwd=vary-miss"),
        .init(name: "status-nothing", member: .init(), expected: "urlcache"),
        .init(
            name: "status-name-token", member: .init(hit: true), cacheName: "edge-1.example",
            expected: "edge-1.example;hit"),
        .init(
            name: "status-name-string", member: .init(hit: true), cacheName: "Example \"CDN\"",
            expected: "\"Example \\\"CDN\\\"\";hit"),
    ]

    @Test(arguments: cases)
    func fieldValue(_ testCase: CacheStatusCase) {
        #expect(testCase.member.fieldValue(cacheName: testCase.cacheName) == testCase.expected)
    }

    @Test("cache names: a Token or a String of printable ASCII (RFC 9211 §2)")
    func cacheNames() {
        #expect(CacheStatusMember.isValidCacheName("urlcache") && CacheStatusMember.isValidCacheName("my cache"))
        #expect(
            !CacheStatusMember.isValidCacheName("") && !CacheStatusMember.isValidCacheName("caché")
                && !CacheStatusMember.isValidCacheName("a\r\nb"))
    }

    @Test("status-collapsed: a request that waited on another's forward request (RFC 9211 §2.6)")
    func collapsed() {
        let hit = CacheStatusMember(hit: true, ttlSeconds: 60)
        #expect(
            hit.collapsed(behind: .uriMiss) == CacheStatusMember(forward: .uriMiss, ttlSeconds: 60, collapsed: true))
        #expect(hit.collapsed(behind: .stale).fieldValue() == "urlcache;fwd=stale;ttl=60;collapsed")
        #expect(hit.collapsed(behind: nil) == hit, "the other request went nowhere: nothing was collapsed")
        let forwarded = CacheStatusMember(forward: .uriMiss, forwardStatus: 200)
        #expect(
            forwarded.collapsed(behind: .uriMiss).fieldValue() == "urlcache;fwd=uri-miss;fwd-status=200;collapsed=?0")
    }

    @Test("status-fwd-reasons: revalidations and misses name why they went forward (RFC 9211 §2.2)")
    func forwardReasons() {
        #expect(CacheStatusMember.Forward(ReuseDecision.RevalidationReason.stale) == .stale)
        #expect(CacheStatusMember.Forward(ReuseDecision.RevalidationReason.responseNoCache) == .stale)
        #expect(CacheStatusMember.Forward(ReuseDecision.RevalidationReason.requestNoCache) == .request)
        #expect(CacheStatusMember.Forward(ReuseDecision.RevalidationReason.requestMaxAge) == .request)
        #expect(CacheStatusMember.Forward(ReuseDecision.MissReason.noStoredResponse) == .uriMiss)
        #expect(CacheStatusMember.Forward(ReuseDecision.MissReason.varyMismatch) == .varyMiss)
        #expect(CacheStatusMember.Forward(ReuseDecision.MissReason.methodMismatch) == .miss)
    }

    @Test("status-detail-tokens: every not-stored reason is a distinct Structured Field Token (RFC 9651 §3.3.4)")
    func reasonTokens() {
        let reasons: [NotStorableReason] = [
            .methodNotCacheable, .statusNotFinal, .partialContent, .notModified, .mustUnderstandUnknownStatus,
            .requestNoStore,
            .responseNoStore, .privateResponse, .authorizationWithoutPermission, .setCookieInSharedCache,
            .requestCookieInSharedCache, .serverError, .clientErrorWithoutSharedMaxAge,
            .noExplicitFreshnessOrHeuristicStatus,
            .notReusable, .varyWildcard, .invalidOrOversizedVary, .malformedCacheControl,
            .invalidHeaders(.tooManyFields(count: 1)),
        ]
        let tokens = reasons.map(\.token)
        #expect(Set(tokens).count == reasons.count)
        for token in tokens {
            // Serialized bare (a Token), not quoted (a String).
            #expect(CacheStatusMember(detail: token).fieldValue() == "urlcache;detail=\(token)")
        }
    }
}
