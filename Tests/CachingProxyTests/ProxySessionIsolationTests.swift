import Foundation
import LoopbackOrigin
import Testing
import TestProcess

/// One client's session never reaches another through a real `urlcache proxy` process: a 304's
/// `Set-Cookie`, received while revalidating for one client, is that client's alone (RFC 9111
/// §7.3), whether the revalidation ran in the foreground or in the background
/// (`stale-while-revalidate`, RFC 5861 §3).
@Suite(.blockingWaits, .timeLimit(.minutes(10)))
struct ProxySessionIsolationTests {
    /// An origin whose full answer carries `cacheControl` and an `ETag`; its 304 makes the entry
    /// fresh for 10 minutes and sets back the cookie the request sent.
    static func origin(cacheControl: String) throws -> LoopbackOrigin {
        try LoopbackOrigin { request, _ in
            if request.header("If-None-Match") == "\"v1\"" {
                var headers = [("ETag", "\"v1\""), ("Cache-Control", "max-age=600")]
                if let cookie = request.header("Cookie") { headers.append(("Set-Cookie", "\(cookie); Path=/")) }
                return LoopbackOrigin.Response(status: 304, headers: headers)
            }
            return LoopbackOrigin.Response(
                status: 200, headers: [("ETag", "\"v1\""), ("Cache-Control", cacheControl)], body: "account page")
        }
    }

    @Test("a foreground revalidation's Set-Cookie goes to the client that sent the Cookie, not to the next client")
    func foregroundRevalidation() async throws {
        let origin = try Self.origin(cacheControl: "max-age=0")
        defer { origin.stop() }
        let proxy = try await ProxyProcess.start(upstream: origin.url)
        _ = try await proxy.send("/account")

        let victim = try await proxy.send("/account", headers: [("Cookie", "sid=VICTIM")])
        #expect(victim.cacheStatus == "REVALIDATED" && victim.text == "account page")
        #expect(victim.values("Set-Cookie") == ["sid=VICTIM; Path=/"])

        let next = try await proxy.send("/account")
        #expect(next.cacheStatus == "HIT" && next.text == "account page", "the 304 refreshed the entry")
        #expect(next.values("Set-Cookie").isEmpty, "\(next.headers)")
        #expect(origin.requestCount == 2)
        let outcome = try await proxy.stop()
        #expect(outcome.status == 0, "\(outcome.err)")
    }

    @Test("a stale-while-revalidate background revalidation's Set-Cookie is never stored for the next client")
    func backgroundRevalidation() async throws {
        let origin = try Self.origin(cacheControl: "max-age=0, stale-while-revalidate=600")
        defer { origin.stop() }
        let proxy = try await ProxyProcess.start(upstream: origin.url)
        _ = try await proxy.send("/account")

        // Served stale at once; the revalidation with this client's Cookie runs in the background.
        let victim = try await proxy.send("/account", headers: [("Cookie", "sid=VICTIM")])
        #expect(victim.cacheStatus == "UPDATING" && victim.text == "account page")
        _ = await eventually { origin.requestCount >= 2 }
        #expect(origin.requests.last?.header("Cookie") == "sid=VICTIM", "the background revalidation ran")

        // Until the refreshed head lands the next clients get the stale entry (and revalidate
        // without a cookie, which sets none); then hits. None of them gets the victim's cookie.
        var answers: [RawResponse] = []
        _ = try await eventually {
            let answer = try await proxy.send("/account")
            answers.append(answer)
            return answers.last?.cacheStatus == "HIT"
        }
        #expect(answers.last?.cacheStatus == "HIT")
        #expect(answers.allSatisfy { $0.values("Set-Cookie").isEmpty }, "\(answers.map(\.headers))")
        let outcome = try await proxy.stop()
        #expect(outcome.status == 0, "\(outcome.err)")
    }
}
