import Foundation
import LoopbackOrigin
import Testing
import TestProcess
import VarnishParent

/// The parent tier (docs/ParentTier.md) through the real `urlcache proxy` binary: three proxies with directories of their own
/// (three hosts) and two real Varnish parents (`--parent`) in front of the loopback origin.
/// Serialized, as ProxyProcessTests: each proxy is handed a port that was free a moment ago.
@Suite(.blockingWaits, .serialized, .timeLimit(.minutes(10)))
struct ProxyParentTierTests {
    @Test(
        "three urlcache proxies with --parent send each object to the origin once; --purge-parents purges up; parents killed: no 502"
    )
    func threeProxiesShareTheTier() async throws {
        signal(SIGPIPE, SIG_IGN)
        let origin = try LoopbackOrigin { request, _ in
            LoopbackOrigin.Response(
                status: 200, headers: [("Cache-Control", "max-age=60")], body: "from \(request.target)")
        }
        defer { origin.stop() }
        let parents = [
            try VarnishParent(name: "p1", originPort: origin.port),
            try VarnishParent(name: "p2", originPort: origin.port),
        ]
        defer { parents.forEach { $0.stop() } }
        let directory = TemporaryDirectory(prefix: "suc-proxy-parents")
        var proxies: [(child: ChildProcess, port: Int)] = []
        defer {
            for proxy in proxies { kill(proxy.child.pid, SIGTERM) }
            for proxy in proxies { _ = proxy.child.finish(deadline: 30) }
        }
        for host in 1...3 {
            let port = LoopbackSocket.freePort()
            let child = try ChildProcess(
                ChildProcess.builtExecutable("urlcache"),
                [
                    "proxy", directory.root + "/host\(host)", "--listen", "127.0.0.1:\(port)", "--upstream", origin.url,
                    "--threads", "1", "--no-access-log", "--parent", parents[0].url, "--parent", parents[1].url,
                    "--allow-purge", "--purge-parents",
                ])
            proxies.append((child, port))
            #expect(try await runBlocking { child.waitForLine("listening on 127.0.0.1:\(port)") })
        }

        var throughParent: Set<String> = []
        for proxy in proxies {
            for n in 0..<12 {
                let answer = try await send(port: proxy.port, "GET", "/items/\(n)")
                #expect(answer.status == 200 && answer.text == "from /items/\(n)")
                throughParent.insert(answer.header("X-Parent") ?? "none")
            }
        }
        #expect(origin.requestCount == 12)
        #expect(throughParent == ["p1", "p2"])

        // PURGE at one host removes its own entry and, with --purge-parents, the parent's copy:
        // its next request goes through the parent to the origin.
        let purged = try await send(port: proxies[0].port, "PURGE", "/items/0")
        #expect(purged.status == 200)
        let again = try await send(port: proxies[0].port, "GET", "/items/0")
        #expect(again.status == 200)
        #expect(origin.requests.filter { $0.target == "/items/0" }.count == 2)

        // One parent killed, then both: new objects still come, never a 502.
        parents[0].stop()
        for n in 20..<26 {
            let answer = try await send(port: proxies[1].port, "GET", "/items/\(n)")
            #expect(answer.status == 200 && answer.header("X-Parent") == "p2")
        }
        parents[1].stop()
        for n in 30..<36 {
            let answer = try await send(port: proxies[2].port, "GET", "/items/\(n)")
            #expect(answer.status == 200 && answer.header("X-Parent") == nil && answer.text == "from /items/\(n)")
        }
        // The origin down too: what was stored is still served (fresh), a miss is a 502.
        origin.stop()
        #expect(try await send(port: proxies[2].port, "GET", "/items/30").status == 200)
        #expect(try await send(port: proxies[2].port, "GET", "/items/99").status == 502)
    }

    @Test("a malformed --parent is refused with a clear message")
    func malformedParent() async throws {
        let directory = TemporaryDirectory(prefix: "suc-proxy-bad-parent")
        for bad in ["ftp://127.0.0.1:6081", "http://127.0.0.1:6081/path", "127.0.0.1:6081"] {
            let outcome = try await runBlocking {
                try ChildProcess.run(
                    ChildProcess.builtExecutable("urlcache"),
                    ["proxy", directory.root, "--upstream", "http://127.0.0.1:9", "--parent", bad])
            }
            #expect(outcome.status == 2)
            #expect(outcome.err.contains("not a parent cache URL (http://host:port): \(bad)"), "\(outcome.err)")
        }
    }

    private func send(port: Int, _ method: String, _ target: String) async throws -> RawResponse {
        let connection = try await RawConnection.open(port: port)
        defer { connection.close() }
        return try await connection.exchange(method, target)
    }
}
