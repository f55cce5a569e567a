import Foundation
import LoopbackOrigin
import Testing
import TestProcess

/// What a real `urlcache proxy` process lets reach the origin, and what it keys on: the proxy
/// writes `X-Forwarded-For`, `X-Forwarded-Proto` and `Via`, drops the fields frameworks read to
/// rewrite host, target or method unless `--pass-header` names them, adds `--key-header` fields
/// to the key, and stores a 405 only with `s-maxage`.
@Suite(.blockingWaits, .timeLimit(.minutes(10)))
struct ProxyRequestHygieneTests {
    @Test(
        "the origin sees X-Forwarded-For with the peer appended, the proxy's X-Forwarded-Proto and Via, and no rewriting fields"
    )
    func forwardedFields() async throws {
        let origin = try LoopbackOrigin { _, _ in LoopbackOrigin.Response(status: 200, body: "fine") }
        defer { origin.stop() }
        let proxy = try await ProxyProcess.start(upstream: origin.url, ["--pass-header", "X-Original-URL"])
        let answer = try await proxy.send(
            "/page",
            headers: [
                ("X-Forwarded-For", "203.0.113.7"), ("X-Forwarded-Proto", "https"), ("X-Forwarded-Host", "evil.test"),
                ("X-Original-URL", "/legacy"), ("X-Rewrite-URL", "/admin"), ("X-HTTP-Method-Override", "DELETE"),
                ("X-HTTP-Method", "DELETE"), ("X-Method-Override", "DELETE"),
            ])
        #expect(answer.status == 200)
        let seen = try #require(origin.requests.first)
        #expect(seen.header("X-Forwarded-For") == "203.0.113.7, 127.0.0.1")
        #expect(seen.header("X-Forwarded-Proto") == "http")
        #expect(seen.header("Via") == "1.1 urlcache")
        #expect(seen.header("X-Original-URL") == "/legacy", "let through by --pass-header")
        for dropped in [
            "X-Forwarded-Host", "X-Rewrite-URL", "X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override",
        ] {
            #expect(seen.header(dropped) == nil, "\(dropped) reached the origin")
        }
        let outcome = try await proxy.stop()
        #expect(outcome.status == 0, "\(outcome.err)")
    }

    @Test("--key-header adds a request field to the key: each tenant gets its own entry")
    func keyHeader() async throws {
        let origin = try LoopbackOrigin { request, _ in
            LoopbackOrigin.Response(
                status: 200, headers: [("Cache-Control", "max-age=600")],
                body: "tenant \(request.header("X-Tenant") ?? "none")")
        }
        defer { origin.stop() }
        let proxy = try await ProxyProcess.start(upstream: origin.url, ["--key-header", "X-Tenant"])
        #expect(try await proxy.send("/home", headers: [("X-Tenant", "a")]).text == "tenant a")
        let other = try await proxy.send("/home", headers: [("X-Tenant", "b")])
        #expect(other.text == "tenant b" && other.cacheStatus == "MISS")
        let again = try await proxy.send("/home", headers: [("X-Tenant", "a")])
        #expect(again.text == "tenant a" && again.cacheStatus == "HIT")
        #expect(again.header("Vary")?.contains("X-Tenant") == true)
        #expect(origin.requestCount == 2)
        let outcome = try await proxy.stop()
        #expect(outcome.status == 0, "\(outcome.err)")
    }

    @Test("a 405 is stored only with s-maxage")
    func methodNotAllowed() async throws {
        let origin = try LoopbackOrigin { request, index in
            let cacheControl = request.target == "/shared" ? "max-age=600, s-maxage=600" : "max-age=600"
            return LoopbackOrigin.Response(status: 405, headers: [("Cache-Control", cacheControl)], body: "no \(index)")
        }
        defer { origin.stop() }
        let proxy = try await ProxyProcess.start(upstream: origin.url)
        _ = try await proxy.send("/plain")
        #expect(try await proxy.send("/plain").text == "no 2", "max-age alone: not stored")
        _ = try await proxy.send("/shared")
        let hit = try await proxy.send("/shared")
        #expect(hit.text == "no 3" && hit.cacheStatus == "HIT")
        let outcome = try await proxy.stop()
        #expect(outcome.status == 0, "\(outcome.err)")
    }
}
