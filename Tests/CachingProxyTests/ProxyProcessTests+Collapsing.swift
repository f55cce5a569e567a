import Foundation
import LoopbackOrigin
import Testing
import TestProcess

/// Request collapsing across processes, with real `urlcache proxy` processes on
/// one directory (each on a port of its own, so the test decides which process gets a request).
extension ProxyProcessTests {
    /// Starts `count` proxies on one directory in front of `origin`.
    private func proxies(_ count: Int, directory: TemporaryDirectory, origin: LoopbackOrigin) async throws
        -> [(child: ChildProcess, port: Int)]
    {
        var started: [(child: ChildProcess, port: Int)] = []
        for index in 1...count {
            let port = LoopbackSocket.freePort()
            let child = try ChildProcess(
                ChildProcess.builtExecutable("urlcache"),
                [
                    "proxy", directory.root + "/cache", "--listen", "127.0.0.1:\(port)", "--upstream", origin.url,
                    "--threads", "1", "--x-cache-status", "--cache-status-name", "p\(index)",
                    // Leaders are held at a gate while the followers gather: longer than the default.
                    "--lock-timeout", "240",
                ])
            started.append((child, port))
            let ready = try await runBlocking { child.waitForLine("listening on 127.0.0.1:\(port)") }
            #expect(ready, "proxy \(index) did not listen")
        }
        return started
    }

    private func stop(_ proxies: [(child: ChildProcess, port: Int)]) async throws {
        for proxy in proxies {
            kill(proxy.child.pid, SIGTERM)
            _ = try await runBlocking { proxy.child.finish(deadline: 60) }
        }
    }

    /// Sends `perProxy` concurrent requests for `target` to each port; the answers, in no order.
    private func concurrently(_ ports: [Int], perProxy: Int, _ target: String) -> Task<[RawResponse], any Error> {
        Task {
            try await withThrowingTaskGroup(of: RawResponse.self) { group in
                for port in ports {
                    for _ in 0..<perProxy {
                        group.addTask {
                            let connection = try await RawConnection.open(port: port)
                            defer { connection.close() }
                            return try await connection.exchange("GET", target)
                        }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
    }

    @Test("8 proxy processes × 8 concurrent misses of one slow URL: one origin request, 64 correct bodies")
    func collapsingAcrossProcesses() async throws {
        signal(SIGPIPE, SIG_IGN)
        let gate = OriginGate()
        let origin = try LoopbackOrigin { request, n in
            gate.pass()
            return LoopbackOrigin.Response(
                status: 200, headers: [("Cache-Control", "max-age=600")], body: "slow \(request.target) #\(n)")
        }
        defer { origin.stop() }
        let directory = TemporaryDirectory(prefix: "suc-proxy-collapse")
        let started = try await proxies(8, directory: directory, origin: origin)
        let answers = concurrently(started.map(\.port), perProxy: 8, "/cold")
        // The first request reaches the origin and is held there; the other 63 reach their
        // proxies meanwhile (loopback: well within a second) and wait, in their process behind
        // its leader, and across processes on the directory's lease. Without the lease, each
        // other process would send its own request during this second.
        #expect(try await gate.open { origin.requestCount >= 1 })
        // A window in which nothing may happen: there is no event for "no other request came".
        try await Task.sleep(for: .seconds(1))
        let responses = try await answers.value
        #expect(responses.count == 64)
        #expect(responses.allSatisfy { $0.status == 200 && $0.text == "slow /cold #1" })
        #expect(origin.requestCount == 1, "\(origin.requests.map(\.target))")
        try await stop(started)
    }

    @Test(
        "the lease owner killed with SIGKILL mid-fetch: one waiting process takes over, every other request is answered"
    )
    func ownerKilled() async throws {
        signal(SIGPIPE, SIG_IGN)
        let gate = OriginGate()
        let origin = try LoopbackOrigin { request, n in
            if n == 1 { gate.pass() } // the first owner's request hangs until it is dead
            return LoopbackOrigin.Response(
                status: 200, headers: [("Cache-Control", "max-age=600")], body: "body \(request.target) #\(n)")
        }
        defer { origin.stop() }
        let directory = TemporaryDirectory(prefix: "suc-proxy-takeover")
        let started = try await proxies(3, directory: directory, origin: origin)
        let owner = concurrently([started[0].port], perProxy: 1, "/k")
        _ = await eventually { origin.requestCount >= 1 }
        #expect(origin.requestCount == 1)
        let waiting = concurrently([started[1].port, started[2].port], perProxy: 4, "/k")
        // A window in which no other request may reach the origin (nothing to wait for instead).
        try await Task.sleep(for: .seconds(1))
        #expect(origin.requestCount == 1, "the others wait on the owner's lease")
        // The kill point: the owner holds the lease, its origin request in flight.
        _ = try await runBlocking { started[0].child.killed() }
        let responses = try await waiting.value
        gate.open()
        _ = try? await owner.value // its connection died with it
        #expect(responses.count == 8)
        #expect(responses.allSatisfy { $0.status == 200 && $0.text == "body /k #2" }, "\(responses.map(\.text))")
        #expect(origin.requestCount == 2, "one process took the lease over")
        try await stop(Array(started.dropFirst()))
    }

    @Test("an answer that is not stored: every waiting process goes to the origin, at once")
    func uncacheableReleasesFollowers() async throws {
        signal(SIGPIPE, SIG_IGN)
        let gate = OriginGate()
        let origin = try LoopbackOrigin { _, n in
            if n == 1 { gate.pass() }
            return LoopbackOrigin.Response(status: 200, headers: [("Cache-Control", "no-store")], body: "private #\(n)")
        }
        defer { origin.stop() }
        let directory = TemporaryDirectory(prefix: "suc-proxy-nostore")
        let started = try await proxies(3, directory: directory, origin: origin)
        let first = concurrently([started[0].port], perProxy: 1, "/u")
        _ = await eventually { origin.requestCount >= 1 }
        let others = concurrently([started[1].port, started[2].port], perProxy: 1, "/u")
        // A window in which no other request may reach the origin (nothing to wait for instead).
        try await Task.sleep(for: .seconds(1))
        #expect(origin.requestCount == 1, "the others wait on the owner's lease")
        gate.open()
        let responses = try await first.value + others.value
        #expect(responses.count == 3 && responses.allSatisfy { $0.status == 200 })
        #expect(Set(responses.map(\.text)) == ["private #1", "private #2", "private #3"])
        #expect(origin.requestCount == 3)
        try await stop(started)
    }

    @Test("background revalidations (stale-while-revalidate) of 3 processes send one origin request")
    func backgroundRevalidationsCollapse() async throws {
        signal(SIGPIPE, SIG_IGN)
        let gate = OriginGate()
        let origin = try LoopbackOrigin { _, n in
            if n == 2 { gate.pass() } // the first revalidation hangs until the others have come
            // Only the first answer goes stale: a revalidated v2 that went stale again while a
            // loaded machine polled for it would start a second, legitimate revalidation.
            let maxAge = n == 1 ? "max-age=1" : "max-age=600"
            return LoopbackOrigin.Response(
                status: 200, headers: [("Cache-Control", "\(maxAge), stale-while-revalidate=600")], body: "v\(n)")
        }
        defer { origin.stop() }
        let directory = TemporaryDirectory(prefix: "suc-proxy-swr")
        let started = try await proxies(3, directory: directory, origin: origin)
        #expect(try await concurrently([started[0].port], perProxy: 1, "/s").value.first?.text == "v1")
        // Stale now, within stale-while-revalidate: the proxy processes read the real clock.
        try await Task.sleep(for: .seconds(2.1))
        let first = try await concurrently([started[0].port], perProxy: 1, "/s").value
        #expect(first.first?.text == "v1", "served stale while it revalidates")
        _ = await eventually { origin.requestCount >= 2 }
        let others = try await concurrently([started[1].port, started[2].port], perProxy: 2, "/s").value
        #expect(others.allSatisfy { $0.text == "v1" }, "\(others.map(\.text))")
        // A window in which no other revalidation may reach the origin.
        try await Task.sleep(for: .seconds(1))
        #expect(origin.requestCount == 2, "the other processes' revalidations waited on the lease and were dropped")
        gate.open()
        _ = try await eventually {
            try await concurrently([started[2].port], perProxy: 1, "/s").value.first?.text == "v2"
        }
        #expect(origin.requestCount == 2)
        try await stop(started)
    }
}
