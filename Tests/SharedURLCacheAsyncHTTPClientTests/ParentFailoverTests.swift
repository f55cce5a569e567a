import AsyncHTTPClient
import Foundation
import LoopbackOrigin
import NIOCore
import SharedURLCache
import SharedURLCacheAsyncHTTPClient
import Testing
import TestProcess

/// How a child gets past a parent that misbehaves, with loopback servers standing in for parents
/// that reset the connection, never answer, or answer 503 (no Varnish needed for these).
@Suite(.blockingWaits, .timeLimit(.minutes(3)))
struct ParentFailoverTests {
    static func client(_ root: String, parents: [String], timeout: TimeAmount = .seconds(30)) throws
        -> CachingHTTPClient
    {
        var configuration = CachingHTTPClient.Configuration()
        configuration.parents = try ParentTier(parents)
        configuration.parents?.timeout = timeout
        configuration.parents?.retryAfter = .seconds(60)
        return try CachingHTTPClient(
            cache: try AHCTest.cache(root), httpClient: AHCTest.httpClient, configuration: configuration)
    }

    static func origin() throws -> LoopbackOrigin {
        try LoopbackOrigin { request, _ in
            .init(headers: [("Cache-Control", "max-age=60")], body: "origin \(request.target)")
        }
    }

    @Test("a parent that resets the connection is marked down: this request and the next go direct at once")
    func resettingParent() async throws {
        let root = AHCTest.makeDirectory("suc-parent-reset")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let origin = try Self.origin()
        defer { origin.stop() }
        let parent = try LoopbackOrigin { _, _ in
            var response = LoopbackOrigin.Response()
            response.resetsWithoutResponse = true
            return response
        }
        defer { parent.stop() }
        let client = try Self.client(root, parents: [parent.url])
        let started = ContinuousClock.now
        for n in 0..<3 {
            let answer = try await AHCTest.get(client, origin.url + "/reset/\(n)")
            #expect(answer.status == 200 && answer.text == "origin /reset/\(n)")
        }
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(parent.requestCount == 1) // down for its back-off after the first reset
        #expect(origin.requestCount == 3)
    }

    @Test("a parent that gives no response head within the tier's timeout is skipped")
    func silentParent() async throws {
        let root = AHCTest.makeDirectory("suc-parent-silent")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let origin = try Self.origin()
        defer { origin.stop() }
        // The parent stays silent until the test ends: a tier that waited for it instead of
        // skipping it would run into the request's own deadline and throw.
        let release = DispatchSemaphore(value: 0)
        let parent = try LoopbackOrigin { _, _ in
            _ = release.wait(timeout: .now() + 120)
            return LoopbackOrigin.Response(status: 200, body: "too late")
        }
        defer {
            parent.stop()
            for _ in 0..<4 { release.signal() }
        }
        let client = try Self.client(root, parents: [parent.url], timeout: .milliseconds(500))
        let answer = try await AHCTest.get(client, origin.url + "/silent")
        #expect(answer.status == 200 && answer.text == "origin /silent")
        // The skip is timed from the parent's receipt of the request to the origin's, both noted by
        // the servers' own threads: the tier's timeout runs from the parent attempt. Timing the
        // whole `get` also counted the cache's dispatch work and the task reading the body, which
        // in a parallel `swift test` waited seconds for a thread that tests blocking theirs held.
        let asked = try #require(parent.requests.first?.received, "the parent was asked first")
        let direct = try #require(origin.requests.first?.received)
        #expect(direct > asked && direct - asked < .seconds(10), "skipped after its 500 ms: \(direct - asked)")
        let next = try await AHCTest.get(client, origin.url + "/silent-2")
        #expect(next.status == 200 && parent.requestCount == 1)
    }

    @Test("a parent answering 503 (it cannot reach the origin) is not marked down, and the request goes direct")
    func gatewayErrorFromParent() async throws {
        let root = AHCTest.makeDirectory("suc-parent-503")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let origin = try Self.origin()
        defer { origin.stop() }
        let parent = try LoopbackOrigin { _, _ in LoopbackOrigin.Response(status: 503, body: "Backend fetch failed") }
        defer { parent.stop() }
        let client = try Self.client(root, parents: [parent.url])
        for n in 0..<2 {
            let answer = try await AHCTest.get(client, origin.url + "/gateway/\(n)")
            #expect(answer.status == 200 && answer.text == "origin /gateway/\(n)")
        }
        #expect(parent.requestCount == 2 && origin.requestCount == 2)
        // What the parent was sent: the origin's Host and the origin-form target.
        #expect(parent.requests[0].target == "/gateway/0")
        #expect(parent.requests[0].header("Host") == "127.0.0.1:\(origin.port)")
    }

    @Test("with an active probe, a parent that is down comes back when its probe is answered, not by requests")
    func probeBringsAParentBack() async throws {
        let root = AHCTest.makeDirectory("suc-parent-probe")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let origin = try Self.origin()
        defer { origin.stop() }
        let parent = try LoopbackOrigin { request, index in
            var response = LoopbackOrigin.Response(status: 200, body: "parent \(request.target)")
            response.resetsWithoutResponse = index <= 2 // down for the first request and the first probe
            return response
        }
        defer { parent.stop() }
        var configuration = CachingHTTPClient.Configuration()
        configuration.parents = try ParentTier([parent.url])
        configuration.parents?.retryAfter = .milliseconds(1) // the probe decides, not the back-off
        configuration.parents?.probe = .init(target: "health", interval: .milliseconds(100))
        let client = try CachingHTTPClient(
            cache: try AHCTest.cache(root), httpClient: AHCTest.httpClient, configuration: configuration)

        #expect(try await AHCTest.get(client, origin.url + "/a").text == "origin /a")
        // Past the 1 ms back-off (the waiting is the point): only the probe may bring it back.
        try await Task.sleep(for: .milliseconds(20))
        #expect(try await AHCTest.get(client, origin.url + "/b").text == "origin /b") // still down
        // Requests go direct until the probe's answer has been noted, then to the parent.
        var n = 0
        var text = ""
        _ = try await eventually {
            n += 1
            text = try await AHCTest.get(client, origin.url + "/c\(n)").text
            return text.hasPrefix("parent")
        }
        #expect(text == "parent /c\(n)")
        let probes = parent.requests.filter { $0.target == "/health" }
        #expect(probes.count == 2 && probes.allSatisfy { $0.method == "HEAD" })
        #expect(parent.requests.map(\.target).filter { $0 != "/health" } == ["/a", "/c\(n)"])
    }

    @Test("POST and other unsafe methods go to the origin, not to a parent")
    func unsafeMethodsGoDirect() async throws {
        let root = AHCTest.makeDirectory("suc-parent-post")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let origin = try Self.origin()
        defer { origin.stop() }
        let parent = try Self.origin()
        defer { parent.stop() }
        let client = try Self.client(root, parents: [parent.url])
        let answer = try await AHCTest.get(client, origin.url + "/post", method: .POST)
        #expect(answer.status == 200 && parent.requestCount == 0 && origin.requestCount == 1)
    }
}
