import Foundation
import HTTPCacheSemantics
import HTTPTypes
import Testing

struct TargetedCase: Sendable, CustomTestStringConvertible {
    let name: String
    let section: String
    let headers: [(String, String)]
    /// Stored, and fresh for how long (nil: not stored).
    let lifetime: Int?
    var testDescription: String { "\(name) [\(section)]" }
}

@Suite("Targeted cache-control fields: CDN-Cache-Control (RFC 9213)")
struct TargetedCacheControlTests {
    static let cdn = CachePolicyConfiguration.cdnCacheControl
    static var configuration: CachePolicyConfiguration {
        var configuration = CachePolicyConfiguration()
        configuration.targetedFields = [cdn]
        return configuration
    }

    static let cases: [TargetedCase] = [
        .init(name: "cdn-max-age", section: "§2.1", headers: [("CDN-Cache-Control", "max-age=100")], lifetime: 100),
        .init(
            name: "cdn-overrides-cc-max-age", section: "§2.1",
            headers: [("Cache-Control", "max-age=10"), ("CDN-Cache-Control", "max-age=100")], lifetime: 100),
        .init(
            name: "cdn-overrides-cc-no-store", section: "§2.1",
            headers: [("Cache-Control", "no-store"), ("CDN-Cache-Control", "max-age=100")], lifetime: 100),
        .init(
            name: "cdn-no-store", section: "§2.1",
            headers: [("Cache-Control", "max-age=100"), ("CDN-Cache-Control", "no-store")],
            lifetime: nil),
        .init(
            name: "cdn-private", section: "§2.1",
            headers: [("Cache-Control", "max-age=100"), ("CDN-Cache-Control", "private")],
            lifetime: nil),
        .init(
            name: "cdn-ignores-expires", section: "§2.1",
            headers: [("Expires", httpDate(1000)), ("Date", httpDate(0)), ("CDN-Cache-Control", "max-age=100")],
            lifetime: 100),
        .init(
            name: "cdn-expires-alone-not-explicit", section: "§2.1",
            headers: [
                ("Expires", httpDate(1000)), ("Date", httpDate(0)), ("CDN-Cache-Control", "must-revalidate"),
                ("ETag", "\"e\""),
            ],
            lifetime: 0),
        .init(
            name: "cdn-invalid-falls-back", section: "§2.2",
            headers: [("Cache-Control", "no-store"), ("CDN-Cache-Control", "max-age=100, &&&&&")], lifetime: nil),
        .init(
            name: "cdn-wrong-type-falls-back", section: "§2.2",
            headers: [("Cache-Control", "no-store"), ("CDN-Cache-Control", "max-age=\"100\"")], lifetime: nil),
        .init(
            name: "cdn-negative-falls-back", section: "§2.2",
            headers: [("Cache-Control", "max-age=7"), ("CDN-Cache-Control", "max-age=-1")], lifetime: 7),
        .init(
            name: "cdn-empty-falls-back", section: "§2.1",
            headers: [("Cache-Control", "max-age=7"), ("CDN-Cache-Control", "")],
            lifetime: 7),
        .init(
            name: "cdn-unknown-directive-ignored", section: "§2.2",
            headers: [("Cache-Control", "no-store"), ("CDN-Cache-Control", "max-age=100, foo=bar;x=1")], lifetime: 100),
        .init(
            name: "cdn-s-maxage", section: "§2.2", headers: [("CDN-Cache-Control", "max-age=10, s-maxage=50")],
            lifetime: 50),
        .init(
            name: "cdn-boolean-false-is-absent", section: "§2.2",
            headers: [("CDN-Cache-Control", "max-age=100, no-store=?0")], lifetime: 100),
        .init(
            name: "cdn-qualified-private", section: "§2.2",
            headers: [("CDN-Cache-Control", "max-age=100, private=(\"set-cookie\")")], lifetime: nil),
        .init(
            name: "cdn-parameters-ignored", section: "§2.2", headers: [("CDN-Cache-Control", "max-age=100;foo=bar")],
            lifetime: 100),
        .init(name: "cc-when-no-cdn", section: "§2.1", headers: [("Cache-Control", "max-age=7")], lifetime: 7),
    ]

    @Test(arguments: cases)
    func storageAndFreshness(_ testCase: TargetedCase) {
        let decision = StorageDecision.evaluate(
            request: request(), response: response(200, testCase.headers), responseTime: t0,
            configuration: Self.configuration)
        switch decision {
        case .store(let storable):
            #expect(testCase.lifetime == storable.freshnessLifetimeSeconds)
        case .notStorable(let reason):
            #expect(testCase.lifetime == nil, "not stored: \(reason)")
        }
    }

    @Test("without a target list the field is ignored (the library's default)")
    func ignoredWithoutTargets() {
        let pairs = [("Cache-Control", "max-age=100"), ("CDN-Cache-Control", "no-store")]
        let decision = StorageDecision.evaluate(request: request(), response: response(200, pairs), responseTime: t0)
        guard case .store = decision else { Issue.record("expected store, got \(decision)"); return }
        #expect(TargetedCacheControl.directives(in: fields(pairs), targets: []) == nil)
    }

    @Test("reuse follows the targeted field: CDN no-cache revalidates although Cache-Control says fresh")
    func reuseFollowsTargetedField() {
        let entry = stored(
            200, [("Cache-Control", "max-age=1000"), ("CDN-Cache-Control", "no-cache"), ("ETag", "\"e\"")])
        let decision = ReuseDecision.decide(
            request: request(), stored: entry, now: at(5), configuration: Self.configuration)
        guard case .revalidate(let revalidation) = decision else {
            Issue.record("expected revalidate, got \(decision)"); return
        }
        #expect(revalidation.reason == .responseNoCache)
        let plain = ReuseDecision.decide(
            request: request(), stored: entry, now: at(5), configuration: CachePolicyConfiguration())
        #expect(plain == .fresh(ageSeconds: 5))
    }

    @Test("the first listed field with a valid value wins")
    func targetOrder() {
        let other = HTTPField.Name("Example-Cache-Control")!
        let headers = fields([
            ("CDN-Cache-Control", "max-age=&"), ("Example-Cache-Control", "max-age=30"), ("CDN-Cache-Control", ""),
        ])
        #expect(TargetedCacheControl.directives(in: headers, targets: [Self.cdn, other])?.maxAge == 30)
        let valid = fields([("CDN-Cache-Control", "max-age=20"), ("Example-Cache-Control", "max-age=30")])
        #expect(TargetedCacheControl.directives(in: valid, targets: [Self.cdn, other])?.maxAge == 20)
    }
}
