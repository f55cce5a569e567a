import Foundation
import LoopbackOrigin
import Testing
import TestProcess

/// The real `urlcache proxy` binary: it serves, and SIGTERM shuts it down gracefully — a request
/// in flight is answered before the process exits 0. Serialized: each test hands its child a port
/// that was free a moment ago (`LoopbackSocket.freePort()`); side by side, the two could be handed
/// the same one, and one test's requests would reach the other's proxies.
@Suite(.blockingWaits, .serialized, .timeLimit(.minutes(10)))
struct ProxyProcessTests {
    @Test(
        "urlcache proxy serves from the cache (9 MiB bodies too) and exits 0 on SIGTERM after finishing the request in flight"
    )
    func sigtermIsGraceful() async throws {
        signal(SIGPIPE, SIG_IGN)
        let release = DispatchSemaphore(value: 0)
        let origin = try LoopbackOrigin { request, _ in
            if request.target == "/slow" { _ = release.wait(timeout: .now() + 120) }
            var response = LoopbackOrigin.Response(
                status: 200, headers: [("Cache-Control", "max-age=600")], body: "from \(request.target)")
            if request.target == "/big" { response.body = ProxyLargeEntryTests.nineMiB }
            return response
        }
        defer { origin.stop() }
        let directory = TemporaryDirectory(prefix: "suc-proxy-cli")
        let port = LoopbackSocket.freePort()
        let child = try ChildProcess(
            ChildProcess.builtExecutable("urlcache"),
            [
                "proxy", directory.root + "/cache", "--listen", "127.0.0.1:\(port)", "--upstream", origin.url,
                "--threads", "1",
                "--x-cache-status", "--cache-status-name", "edge-1",
            ])
        let ready = try await runBlocking { child.waitForLine("listening on 127.0.0.1:\(port)") }
        #expect(ready)

        // Given: a stored response and a request stuck at the origin.
        _ = try await send(port: port, "/cached")
        let hit = try await send(port: port, "/cached")
        #expect(hit.cacheStatus == "HIT" && hit.text == "from /cached")
        #expect(hit.header("Cache-Status")?.hasPrefix("edge-1;hit;ttl=") == true, "\(hit.headers)")
        // The CLI's default entry size takes a 9 MiB body (the library's default would not).
        _ = try await send(port: port, "/big")
        let bigHit = try await send(port: port, "/big")
        #expect(bigHit.cacheStatus == "HIT" && bigHit.body == ProxyLargeEntryTests.nineMiB)
        let inFlight = Task { try await send(port: port, "/slow") }
        try #require(await eventually { origin.requests.contains { $0.target == "/slow" } })

        // When: SIGTERM arrives while that request is in flight.
        kill(child.pid, SIGTERM)
        // New connections are refused once the listening socket is closed.
        let refused = await eventually {
            do { _ = try await RawConnection.open(port: port).close() } catch { return true }
            return false
        }
        #expect(refused, "new connections are refused")
        release.signal()

        // Then: the request in flight is answered, and the process exits 0.
        let answered = try await inFlight.value
        #expect(answered.status == 200 && answered.text == "from /slow")
        let outcome = try await runBlocking { child.finish(deadline: 60) }
        #expect(outcome.status == 0, "stderr: \(outcome.err)")
        #expect(outcome.err.contains("GET /cached 200 HIT"))
        #expect(outcome.err.contains("shutting down"))
    }

    @Test(
        "three urlcache proxy processes with --reuse-port on one port and one directory all answer, and share the entries"
    )
    func reusePortProcessesShareTheDirectory() async throws {
        signal(SIGPIPE, SIG_IGN)
        let origin = try LoopbackOrigin { request, _ in
            LoopbackOrigin.Response(
                status: 200, headers: [("Cache-Control", "max-age=600")], body: "from \(request.target)")
        }
        defer { origin.stop() }
        let directory = TemporaryDirectory(prefix: "suc-proxy-reuseport")
        let port = LoopbackSocket.freePort()
        // Given: three processes bound to one port (SO_REUSEPORT) over one cache directory, each
        // naming itself in Cache-Status so the test sees which one answered.
        var children: [ChildProcess] = []
        for index in 1...3 {
            let child = try ChildProcess(
                ChildProcess.builtExecutable("urlcache"),
                [
                    "proxy", directory.root + "/cache", "--listen", "127.0.0.1:\(port)", "--upstream", origin.url,
                    "--threads", "1",
                    "--reuse-port", "--x-cache-status", "--cache-status-name", "p\(index)",
                ])
            children.append(child)
            let ready = try await runBlocking { child.waitForLine("listening on 127.0.0.1:\(port)") }
            #expect(ready, "process \(index) did not listen")
        }

        // When: one request stores the entry, then many new connections ask for it.
        let first = try await send(port: port, "/shared")
        #expect(first.status == 200 && first.text == "from /shared")
        var answeredBy: Set<String> = []
        for _ in 0..<60 {
            let hit = try await send(port: port, "/shared")
            #expect(hit.status == 200 && hit.text == "from /shared")
            #expect(hit.cacheStatus == "HIT", "\(hit.headers)")
            if let status = hit.header("Cache-Status"), let name = status.split(separator: ";").first {
                answeredBy.insert(String(name))
            }
        }

        // Then: the origin saw one request (every process found the entry in the shared
        // directory), and more than one process answered (the kernel spread the connections).
        #expect(origin.requests.filter { $0.target == "/shared" }.count == 1)
        #expect(answeredBy.count > 1, "answered by \(answeredBy)")
        for child in children {
            kill(child.pid, SIGTERM)
            let outcome = try await runBlocking { child.finish(deadline: 60) }
            #expect(outcome.status == 0, "stderr: \(outcome.err)")
        }
    }

    private func send(port: Int, _ target: String) async throws -> RawResponse {
        let connection = try await RawConnection.open(port: port)
        defer { connection.close() }
        return try await connection.exchange("GET", target)
    }
}
