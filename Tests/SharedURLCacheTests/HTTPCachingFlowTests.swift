import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPCacheSemantics
import HTTPTypes
import LoopbackOrigin
@testable import SharedURLCache
import Synchronization
import Testing
import TestProcess

/// The caching flow against a real loopback origin that counts requests (RFC 9111 + RFC 5861).
final class FlowHarness: Sendable {
    let directory = TestDirectory()
    let cache: SharedCache
    let flow: HTTPCachingFlow
    let origin: LoopbackOrigin
    let clock = TestClock()

    init(
        configure: (inout HTTPCachingConfiguration) -> Void = { _ in },
        _ handler: @escaping @Sendable (LoopbackOrigin.Request, Int) -> LoopbackOrigin.Response
    ) throws {
        origin = try LoopbackOrigin(handler)
        cache = try directory.makeCache()
        var configuration = HTTPCachingConfiguration()
        let clock = self.clock
        configuration.now = { clock.now() }
        configure(&configuration)
        flow = HTTPCachingFlow(cache: cache, configuration: configuration)
    }

    deinit { origin.stop() }

    func advance(_ seconds: Double) { clock.advance(seconds) }

    func send(
        _ path: String = "/r", method: HTTPRequest.Method = .get, headers: [String: String] = [:],
        policy: RequestCachePolicy = .useProtocolCachePolicy, body: Data? = nil, through other: HTTPCachingFlow? = nil
    ) async throws -> CachedHTTPResponse {
        let flow = other ?? self.flow
        var fields = HTTPFields()
        for (name, value) in headers { fields[HTTPField.Name(name)!] = value }
        let request = HTTPRequest(
            method: method, scheme: "http", authority: "127.0.0.1:\(origin.port)", path: path, headerFields: fields)
        return try await flow.response(for: request, body: body, policy: policy) { request, body in
            // The socket calls block: on runBlocking's threads, never the cooperative pool's, or a
            // background revalidation's fetch waited behind other tests' blocked threads for over
            // 10 s in the parallel ASan stage (two stale-while-revalidate tests failed there once).
            try await runBlocking { try LoopbackClient.send(request, body: body) }
        }
    }
}

/// A clock the tests move by hand.
final class TestClock: Sendable {
    private let value = Mutex(Date(timeIntervalSince1970: 1_900_000_000))
    func now() -> Date { value.withLock { $0 } }
    func advance(_ seconds: Double) { value.withLock { $0 = $0.addingTimeInterval(seconds) } }
}

@Suite(.blockingWaits, .timeLimit(.minutes(5)))
struct HTTPCachingFlowTests {
    static func body(_ n: Int) -> String { "{\"n\":\(n),\"payload\":\"" + String(repeating: "x", count: 500) + "\"}" }

    @Test("freshness-max-age: a fresh hit never reaches the origin (RFC 9111 §4.2)")
    func freshHit() async throws {
        let h = try FlowHarness { _, n in .init(headers: [("Cache-Control", "max-age=60")], body: Self.body(n)) }
        let first = try await h.send()
        h.advance(10)
        let second = try await h.send()
        #expect(first.cacheStatus == .miss && second.cacheStatus == .hit)
        #expect(second.body == first.body)
        #expect(second.response.headerFields[.age] == "10")
        #expect(h.origin.requestCount == 1)
    }

    @Test("one cache, two flows: a response parsed for the hits of a private flow is judged again under a shared one")
    func parsedPerPolicy() async throws {
        let h = try FlowHarness(configure: { $0.policy = CachePolicyConfiguration(mode: .private) }) { _, n in
            .init(headers: [("Cache-Control", "private, max-age=60")], body: Self.body(n))
        }
        _ = try await h.send()
        h.advance(1)
        // A memory hit: the stored exchange is parsed under the private policy and kept.
        #expect(try await h.send().cacheStatus == .hit)
        #expect(try await h.send().cacheStatus == .hit)
        var shared = HTTPCachingConfiguration()
        let clock = h.clock
        shared.now = { clock.now() }
        // RFC 9111 §5.2.2.7: a shared cache never reuses a private response.
        let answer = try await h.send(through: HTTPCachingFlow(cache: h.cache, configuration: shared))
        #expect(answer.cacheStatus != .hit && answer.cacheStatus != .stale)
        #expect(h.origin.requestCount == 2)
    }

    @Test(
        "validation-etag: a stale entry is revalidated with If-None-Match; the 304 merges headers, keeps the body (§4.3)"
    )
    func etagRevalidation() async throws {
        let h = try FlowHarness { request, n in
            if request.header("If-None-Match") == "\"v1\"" {
                return .init(
                    status: 304, headers: [("ETag", "\"v1\""), ("Cache-Control", "max-age=60"), ("X-Refreshed", "yes")])
            }
            return .init(headers: [("ETag", "\"v1\""), ("Cache-Control", "max-age=0")], body: Self.body(n))
        }
        let first = try await h.send()
        h.advance(1)
        let second = try await h.send()
        #expect(second.cacheStatus == .revalidated)
        #expect(second.response.status == .ok)
        #expect(second.body == first.body)
        #expect(second.response.headerFields[HTTPField.Name("X-Refreshed")!] == "yes")
        #expect(h.origin.requests.last?.header("If-None-Match") == "\"v1\"")
        // The refreshed entry (now max-age=60) is a plain hit.
        let third = try await h.send()
        #expect(third.cacheStatus == .hit && third.body == first.body)
        #expect(h.origin.requestCount == 2)
    }

    @Test("validation-last-modified: revalidation with If-Modified-Since (§4.3.1)")
    func lastModifiedRevalidation() async throws {
        let lastModified = "Sun, 06 Nov 1994 08:49:37 GMT"
        let h = try FlowHarness { request, n in
            // The 304 repeats the validator: without one it would not select the stored response (§4.3.4).
            if request.header("If-Modified-Since") == lastModified {
                return .init(status: 304, headers: [("Cache-Control", "max-age=60"), ("Last-Modified", lastModified)])
            }
            return .init(headers: [("Last-Modified", lastModified), ("Cache-Control", "no-cache")], body: Self.body(n))
        }
        let first = try await h.send()
        let second = try await h.send()
        #expect(second.cacheStatus == .revalidated && second.body == first.body)
        #expect(h.origin.requests.last?.header("If-Modified-Since") == lastModified)
    }

    @Test("a full 200 during revalidation replaces the stored response (§4.3.3)")
    func replaceOnRevalidation() async throws {
        let h = try FlowHarness { _, n in
            .init(headers: [("ETag", "\"v\(n)\""), ("Cache-Control", "max-age=5")], body: Self.body(n))
        }
        _ = try await h.send()
        h.advance(10)
        let second = try await h.send()
        #expect(second.cacheStatus == .expired && second.body == Data(Self.body(2).utf8))
        let third = try await h.send()
        #expect(third.cacheStatus == .hit && third.body == Data(Self.body(2).utf8))
    }

    @Test("vary: variants by Accept-Language are stored and served separately (§4.1)")
    func vary() async throws {
        let h = try FlowHarness { request, _ in
            .init(
                headers: [("Cache-Control", "max-age=60"), ("Vary", "Accept-Language")],
                body: "lang=" + (request.header("Accept-Language") ?? "none"))
        }
        let en = try await h.send(headers: ["Accept-Language": "en"])
        let fr = try await h.send(headers: ["Accept-Language": "fr"])
        let enAgain = try await h.send(headers: ["Accept-Language": "en"])
        let frAgain = try await h.send(headers: ["Accept-Language": "fr"])
        #expect(en.cacheStatus == .miss && fr.cacheStatus == .miss)
        #expect(enAgain.cacheStatus == .hit && String(decoding: enAgain.body, as: UTF8.self) == "lang=en")
        #expect(frAgain.cacheStatus == .hit && String(decoding: frAgain.body, as: UTF8.self) == "lang=fr")
        #expect(h.origin.requestCount == 2)
    }

    @Test("invalidation: a successful POST invalidates the target and same-origin Location (§4.4)")
    func invalidation() async throws {
        let h = try FlowHarness { request, n in
            if request.method == "POST" { return .init(status: 201, headers: [("Location", "/other")]) }
            return .init(headers: [("Cache-Control", "max-age=600")], body: Self.body(n))
        }
        _ = try await h.send("/items")
        _ = try await h.send("/other")
        let post = try await h.send("/items", method: .post, body: Data("new".utf8))
        #expect(post.cacheStatus == .bypass)
        #expect(try await h.send("/items").cacheStatus == .miss)
        #expect(try await h.send("/other").cacheStatus == .miss)
        #expect(h.origin.requestCount == 5)
    }

    @Test("stale-if-error: with the origin down a stale entry is served inside the window (RFC 5861 §4)")
    func staleIfError() async throws {
        let h = try FlowHarness { _, n in
            .init(headers: [("Cache-Control", "max-age=1, stale-if-error=600")], body: Self.body(n))
        }
        let first = try await h.send()
        h.advance(30)
        h.origin.stop()
        let offline = try await h.send()
        #expect(offline.cacheStatus == .stale && offline.body == first.body)
        h.advance(1000) // past the window: nothing may be served; like a gateway, the flow answers 504
        #expect(try await h.send().response.status == .gatewayTimeout)
    }

    @Test("must-revalidate: with the origin down the answer is 504, never stale (§5.2.2.2)")
    func mustRevalidateOffline() async throws {
        let h = try FlowHarness { _, n in
            .init(headers: [("Cache-Control", "max-age=1, must-revalidate")], body: Self.body(n))
        }
        _ = try await h.send()
        h.advance(30)
        h.origin.stop()
        let answer = try await h.send()
        #expect(answer.response.status == .gatewayTimeout)
    }

    @Test("stale-while-revalidate: served at once, revalidated in the background (RFC 5861 §3)")
    func staleWhileRevalidate() async throws {
        let h = try FlowHarness { _, n in
            .init(
                headers: [("Cache-Control", "max-age=1, stale-while-revalidate=600"), ("ETag", "\"e\(n)\"")],
                body: Self.body(n))
        }
        let first = try await h.send()
        h.advance(5)
        let updating = try await h.send()
        #expect(updating.cacheStatus == .updating && updating.body == first.body)
        #expect(await eventually { h.origin.requestCount >= 2 })
        #expect(h.origin.requestCount == 2, "one background revalidation")
        // The background store lands after the origin answers.
        #expect(
            try await eventually {
                try await h.send(policy: .returnCacheDataDontLoad).body == Data(Self.body(2).utf8)
            })
        #expect(try await h.send().body == Data(Self.body(2).utf8))
    }

    @Test("policy: reloadIgnoringLocalCacheData fetches even when fresh, and stores the answer")
    func reloadIgnoringLocal() async throws {
        let h = try FlowHarness { _, n in .init(headers: [("Cache-Control", "max-age=600")], body: Self.body(n)) }
        _ = try await h.send()
        let reloaded = try await h.send(policy: .reloadIgnoringLocalCacheData)
        #expect(reloaded.cacheStatus == .bypass && h.origin.requestCount == 2)
        #expect(try await h.send().body == Data(Self.body(2).utf8))
    }

    @Test("policy: reloadIgnoringLocalAndRemoteCacheData tells upstream caches no-cache")
    func reloadIgnoringRemote() async throws {
        let h = try FlowHarness { _, n in .init(headers: [("Cache-Control", "max-age=600")], body: Self.body(n)) }
        _ = try await h.send()
        _ = try await h.send(policy: .reloadIgnoringLocalAndRemoteCacheData)
        #expect(h.origin.requests.last?.header("Cache-Control") == "no-cache")
        #expect(h.origin.requests.last?.header("Pragma") == "no-cache")
    }

    @Test("policy: returnCacheDataElseLoad serves a stale entry without the network")
    func returnCacheElseLoad() async throws {
        let h = try FlowHarness { _, n in .init(headers: [("Cache-Control", "max-age=1")], body: Self.body(n)) }
        let first = try await h.send()
        h.advance(3600)
        let answer = try await h.send(policy: .returnCacheDataElseLoad)
        #expect(answer.cacheStatus == .stale && answer.body == first.body && h.origin.requestCount == 1)
        #expect(try await h.send("/absent", policy: .returnCacheDataElseLoad).cacheStatus == .miss)
    }

    @Test("policy: returnCacheDataDontLoad is offline: any age served, a miss fails without network")
    func returnCacheDontLoad() async throws {
        let h = try FlowHarness { _, n in .init(headers: [("Cache-Control", "max-age=1")], body: Self.body(n)) }
        let first = try await h.send()
        h.origin.stop()
        h.advance(86_400)
        #expect(try await h.send(policy: .returnCacheDataDontLoad).body == first.body)
        await #expect(throws: HTTPCachingError.self) { try await h.send("/absent", policy: .returnCacheDataDontLoad) }
        #expect(h.origin.requestCount == 1)
    }

    @Test("policy: reloadRevalidatingCacheData always revalidates, even a fresh entry")
    func reloadRevalidating() async throws {
        let h = try FlowHarness { request, n in
            if request.header("If-None-Match") != nil { return .init(status: 304, headers: [("ETag", "\"a\"")]) }
            return .init(headers: [("Cache-Control", "max-age=600"), ("ETag", "\"a\"")], body: Self.body(n))
        }
        let first = try await h.send()
        let second = try await h.send(policy: .reloadRevalidatingCacheData)
        #expect(second.cacheStatus == .revalidated && second.body == first.body)
        #expect(h.origin.requests.last?.header("If-None-Match") == "\"a\"")
    }

    @Test("the hook can veto a store")
    func hookVeto() async throws {
        let h = try FlowHarness(configure: { $0.willCacheResponse = { _ in nil } }) { _, n in
            .init(headers: [("Cache-Control", "max-age=600")], body: Self.body(n))
        }
        _ = try await h.send()
        #expect(try await h.send().cacheStatus == .miss && h.origin.requestCount == 2)
    }

    @Test("the hook can modify what is stored (body, userInfo)")
    func hookModify() async throws {
        let h = try FlowHarness(configure: {
            $0.willCacheResponse = { proposal in
                var changed = proposal
                changed.body = Data("rewritten".utf8)
                changed.userInfo = ["source": "hook"]
                return changed
            }
        }) { _, n in .init(headers: [("Cache-Control", "max-age=600")], body: Self.body(n)) }
        let first = try await h.send()
        #expect(first.body == Data(Self.body(1).utf8), "the caller gets the origin's body")
        #expect(try await h.send().body == Data("rewritten".utf8))
    }

    @Test("a forced-TTL rule caches an origin that sends no cache headers")
    func forcedTTL() async throws {
        let h = try FlowHarness(configure: { $0.rules = [CachingRule(pathPrefix: "/static/", forcedTTLSeconds: 300)] })
        { _, n in
            .init(body: Self.body(n))
        }
        _ = try await h.send("/static/app.js")
        #expect(try await h.send("/static/app.js").cacheStatus == .hit)
        _ = try await h.send("/dynamic")
        #expect(try await h.send("/dynamic").cacheStatus == .miss, "no rule, no freshness, no validator: not reused")
    }

    @Test(
        "not stored: no-store, private, Authorization without public, 5xx, Set-Cookie (§3, §3.5)",
        arguments: [
            ("no-store", [("Cache-Control", "no-store")], [String: String]()),
            ("private", [("Cache-Control", "private, max-age=600")], [:]),
            ("authorization", [("Cache-Control", "max-age=600")], ["Authorization": "Bearer x"]),
            ("set-cookie", [("Cache-Control", "max-age=600"), ("Set-Cookie", "session=1")], [:]),
        ])
    func notStored(name: String, headers: [(String, String)], requestHeaders: [String: String]) async throws {
        let h = try FlowHarness { _, n in .init(headers: headers, body: Self.body(n)) }
        _ = try await h.send(headers: requestHeaders)
        let second = try await h.send(headers: requestHeaders)
        #expect(second.cacheStatus == .miss, "\(name)")
        #expect(h.origin.requestCount == 2, "\(name)")
    }

    @Test("authorization-public: a public response to an authorized request is stored and reused (§3.5)")
    func authorizationPublic() async throws {
        let h = try FlowHarness { _, n in .init(headers: [("Cache-Control", "public, max-age=600")], body: Self.body(n))
        }
        _ = try await h.send(headers: ["Authorization": "Bearer x"])
        #expect(try await h.send(headers: ["Authorization": "Bearer x"]).cacheStatus == .hit)
    }

    @Test("status: an explicitly fresh 503 is served from the cache (RFC 9111 §3)")
    func explicitlyFreshServerError() async throws {
        let h = try FlowHarness { _, n in
            .init(status: 503, headers: [("Cache-Control", "max-age=60")], body: "busy \(n)")
        }
        let first = try await h.send()
        h.advance(10)
        let second = try await h.send()
        #expect(first.cacheStatus == .miss)
        #expect(second.cacheStatus == .hit && second.response.status == .serviceUnavailable)
        #expect(second.body == Data("busy 1".utf8) && second.response.headerFields[.age] == "10")
        #expect(h.origin.requestCount == 1)
    }

    @Test("status: a 5xx is not stored when storeServerErrors is off; one without freshness never is")
    func serverErrorNotStored() async throws {
        let off = try FlowHarness(configure: { $0.policy.storeServerErrors = false }) { _, _ in
            .init(status: 500, headers: [("Cache-Control", "max-age=600")], body: "oops")
        }
        _ = try await off.send()
        #expect(try await off.send().cacheStatus == .miss && off.origin.requestCount == 2)
        let plain = try FlowHarness { _, _ in .init(status: 500, headers: [("ETag", "\"e\"")], body: "oops") }
        _ = try await plain.send()
        #expect(try await plain.send().cacheStatus == .miss && plain.origin.requestCount == 2)
    }

    @Test(
        "status: a fresh 503 answering a revalidation is stored; a 500 without freshness keeps the stored response (§4.3.3)"
    )
    func serverErrorDuringRevalidation() async throws {
        let h = try FlowHarness { _, n in
            switch n {
            case 1: return .init(headers: [("Cache-Control", "max-age=5")], body: "good")
            case 2: return .init(status: 500, body: "oops")
            default: return .init(status: 503, headers: [("Cache-Control", "max-age=60")], body: "busy")
            }
        }
        _ = try await h.send()
        h.advance(10)
        let failed = try await h.send()
        #expect(failed.response.status == .internalServerError && failed.cacheStatus == .expired)
        #expect(try await h.send(policy: .returnCacheDataDontLoad).body == Data("good".utf8), "not replaced by the 500")
        let busy = try await h.send()
        #expect(busy.response.status == .serviceUnavailable && busy.cacheStatus == .expired)
        let cached = try await h.send()
        #expect(
            cached.response.status == .serviceUnavailable && cached.cacheStatus == .hit
                && cached.body == Data("busy".utf8))
        #expect(h.origin.requestCount == 3)
    }

    @Test("status: heuristic freshness for a 404 with Last-Modified (RFC 9110 §15.1, RFC 9111 §4.2.2)")
    func heuristicNotFound() async throws {
        let h = try FlowHarness { _, _ in
            .init(status: 404, headers: [("Last-Modified", "Sun, 06 Nov 1994 08:49:37 GMT")], body: "gone")
        }
        _ = try await h.send()
        h.advance(60)
        let second = try await h.send()
        #expect(second.cacheStatus == .hit && second.response.status == .notFound && h.origin.requestCount == 1)
    }

    @Test("status: a 400 with max-age is not stored in a shared cache; with s-maxage it is (§7.1 poisoning guard)")
    func badRequestPoisoningGuard() async throws {
        let h = try FlowHarness { request, _ in
            let control = request.target.hasPrefix("/shared") ? "max-age=600, s-maxage=600" : "max-age=600"
            return .init(status: 400, headers: [("Cache-Control", control)], body: "bad")
        }
        _ = try await h.send("/blanket", headers: ["X-Oversized": String(repeating: "a", count: 1000)])
        let other = try await h.send("/blanket")
        #expect(
            other.cacheStatus == .miss && h.origin.requestCount == 2,
            "one client's bad request is not served to another")
        _ = try await h.send("/shared")
        #expect(try await h.send("/shared").cacheStatus == .hit && h.origin.requestCount == 3)
    }

    @Test("HEAD is answered from a stored GET, without a body (§4)")
    func headFromGet() async throws {
        let h = try FlowHarness { _, n in .init(headers: [("Cache-Control", "max-age=600")], body: Self.body(n)) }
        _ = try await h.send()
        let head = try await h.send(method: .head)
        #expect(head.cacheStatus == .hit && head.body.isEmpty && h.origin.requestCount == 1)
    }

    @Test("only-if-cached with nothing stored is a 504 (§5.2.1.7)")
    func onlyIfCached() async throws {
        let h = try FlowHarness { _, n in .init(headers: [("Cache-Control", "max-age=600")], body: Self.body(n)) }
        let answer = try await h.send(headers: ["Cache-Control": "only-if-cached"])
        #expect(answer.response.status == .gatewayTimeout && h.origin.requestCount == 0)
    }
}
