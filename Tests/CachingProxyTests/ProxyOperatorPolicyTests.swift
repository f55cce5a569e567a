import Foundation
import LoopbackOrigin
import Testing
import TestProcess

/// Operator choices of a real `urlcache proxy` process about what clients may make it do: reach
/// internal addresses as a forward proxy, bypass the cache with their own `Cache-Control`, and
/// empty entries with unsafe requests.
@Suite(.blockingWaits, .timeLimit(.minutes(10)))
struct ProxyOperatorPolicyTests {
    @Test(
        "a forward proxy refuses loopback, private and link-local destinations (403) unless --forward-allow lists them")
    func forwardDestinations() async throws {
        let origin = try LoopbackOrigin { _, _ in LoopbackOrigin.Response(status: 200, body: "internal") }
        defer { origin.stop() }
        for (arguments, expected) in [([String](), 403), (["--forward-allow", "127.0.0.0/8"], 200)] {
            let proxy = try await ProxyProcess.start(upstream: "", ["--forward"] + arguments)
            for target in ["http://127.0.0.1:\(origin.port)/x", "http://localhost:\(origin.port)/x"] {
                let answer = try await proxy.send(target)
                #expect(answer.status == expected, "\(arguments) \(target)")
            }
            let metadata = try await proxy.send("http://169.254.169.254/latest/meta-data/")
            #expect(metadata.status == 403, "link-local is not in the allowed list")
            #expect(try await proxy.stop().status == 0)
        }
        #expect(origin.requestCount == 2, "only the allowed proxy reached the origin")
    }

    @Test("--ignore-request-cache-control: a client's no-cache is answered from the cache; without it, from the origin")
    func ignoreRequestCacheControl() async throws {
        for (arguments, originRequests) in [(["--ignore-request-cache-control"], 1), ([String](), 2)] {
            let origin = try LoopbackOrigin { _, n in
                LoopbackOrigin.Response(status: 200, headers: [("Cache-Control", "max-age=600")], body: "n=\(n)")
            }
            defer { origin.stop() }
            let proxy = try await ProxyProcess.start(upstream: origin.url, arguments)
            _ = try await proxy.send("/r")
            let reload = try await proxy.send("/r", headers: [("Cache-Control", "no-cache"), ("Pragma", "no-cache")])
            #expect(reload.status == 200)
            #expect(origin.requestCount == originRequests, "\(arguments)")
            #expect(try await proxy.stop().status == 0)
        }
    }

    @Test("--no-invalidate-on-unsafe: a POST to a stored URL leaves its entry; without it, the entry goes")
    func noInvalidation() async throws {
        for (arguments, status) in [(["--no-invalidate-on-unsafe"], "HIT"), ([String](), "MISS")] {
            let origin = try LoopbackOrigin { _, n in
                LoopbackOrigin.Response(status: 200, headers: [("Cache-Control", "max-age=600")], body: "n=\(n)")
            }
            defer { origin.stop() }
            let proxy = try await ProxyProcess.start(upstream: origin.url, arguments)
            _ = try await proxy.send("/r")
            #expect(try await proxy.send("/r", method: "POST", body: Array("x".utf8)).status == 200)
            #expect(try await proxy.send("/r").cacheStatus == status, "\(arguments)")
            #expect(try await proxy.stop().status == 0)
        }
    }
}
