@testable import CachingProxy
import Foundation
import LoopbackOrigin
import Testing
import TestProcess

/// The target a reverse proxy forwards is the one it keyed, under the upstream's base path
/// (RFC 3986 §5.2.4): dot-segments are removed before the base path is joined, a target that
/// would climb above it is refused, and percent-encoding never becomes path structure.
@Suite(.blockingWaits, .timeLimit(.minutes(10)))
struct ProxyTargetTests {
    @Test(
        "dot-segments are removed; climbing above the root or an encoded dot-segment is refused",
        arguments: [
            ("/a/../b", "/b"), ("/a/./b/", "/a/b/"), ("/a/b/..", "/a/"), ("/a/.", "/a/"), ("/./a", "/a"),
            ("/a/..?x=/../y", "/?x=/../y"), ("/a.b/..c/.d", "/a.b/..c/.d"), ("/a%2Fb/%2e%2ex", "/a%2Fb/%2e%2ex"),
            ("//a/../b", "//b"), ("/", "/"), ("/plain?q=1", "/plain?q=1"),
        ])
    func resolved(target: String, expected: String) {
        #expect(OriginFormTarget.normalized(target) == expected)
    }

    @Test(
        "targets that would leave the base path are refused",
        arguments: ["/../admin", "/a/../../admin", "/..", "/%2e%2e/admin", "/a/.%2E/../admin", "/%2E/x/%2e%2E"])
    func refused(target: String) {
        #expect(OriginFormTarget.normalized(target) == nil)
    }

    @Test("a real proxy with a base path answers /../admin 400 without asking the origin, and sends /a/../b as /base/b")
    func basePathHolds() async throws {
        let origin = try LoopbackOrigin { request, _ in
            LoopbackOrigin.Response(
                status: 200, headers: [("Cache-Control", "max-age=600")], body: "origin saw \(request.target)")
        }
        defer { origin.stop() }
        let proxy = try await ProxyProcess.start(upstream: origin.url + "/base")

        for target in ["/../admin", "/%2e%2e/admin", "/a/../../admin", "http://proxy.test/../admin"] {
            let refused = try await proxy.send(target)
            #expect(refused.status == 400, "\(target)")
        }
        #expect(origin.requestCount == 0, "\(origin.requests.map(\.target))")

        let resolved = try await proxy.send("/a/../b")
        #expect(resolved.status == 200 && resolved.text == "origin saw /base/b")
        // One key for every spelling: /b is the entry /a/../b stored.
        let sameEntry = try await proxy.send("/b")
        #expect(sameEntry.cacheStatus == "HIT" && sameEntry.text == "origin saw /base/b")
        let encoded = try await proxy.send("/x%2F..%2Fy")
        #expect(encoded.text == "origin saw /base/x%2F..%2Fy", "%2F is not a separator")
        #expect(origin.requests.map(\.target) == ["/base/b", "/base/x%2F..%2Fy"])
        let outcome = try await proxy.stop()
        #expect(outcome.status == 0, "\(outcome.err)")
    }
}
