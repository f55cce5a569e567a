import CachingProxy
import Foundation
import LoopbackOrigin
import SharedURLCache
import Synchronization
import Testing
import TestProcess

/// A memory item's hits are written from a head prepared once and kept with
/// the item (docs/Proxy.md, "A hit from memory"). These check that the prepared bytes are the
/// general path's, that per-answer values change per answer, and that a replaced entry is never
/// answered with the head prepared for the entry it replaced.
@Suite(.blockingWaits, .timeLimit(.minutes(10)))
struct ProxyPreparedHeadTests {
    /// Stored fields that the answer changes: an `Age` from upstream (replaced in place), an
    /// upstream `X-Cache-Status` (replaced by the proxy's), an upstream `Cache-Status` (kept).
    static let storedHeaders: [(String, String)] = [
        ("Cache-Control", "max-age=600"), ("Age", "5"), ("ETag", "\"v1\""), ("X-Cache-Status", "MISS"),
        ("Cache-Status", "upstream;hit"), ("X-Custom", "a"), ("Content-Type", "text/plain"),
    ]

    /// The same requests on one connection: a miss, then hits (GET, GET, HEAD, HTTP/1.0 keep-alive,
    /// and a GET asking for close).
    private func answers(memoryCapacityBytes: Int) async throws -> [RawResponse] {
        let fixture = try await ProxyFixture.start(memoryCapacityBytes: memoryCapacityBytes) { _, _ in
            LoopbackOrigin.Response(status: 200, headers: Self.storedHeaders, body: "prepared body")
        }
        let connection = try await fixture.connect()
        var answers: [RawResponse] = []
        for method in ["GET", "GET", "GET", "HEAD"] { answers.append(try await connection.exchange(method, "/r")) }
        try await connection.write("GET /r HTTP/1.0\r\nHost: proxy.test\r\nConnection: keep-alive\r\n\r\n")
        answers.append(try await connection.readResponse())
        answers.append(try await connection.exchange("GET", "/r", headers: [("Connection", "close")]))
        connection.close()
        #expect(fixture.origin.requestCount == 1)
        try await fixture.stop()
        return answers
    }

    @Test("a memory hit sends the general path's fields, in the same order, with this answer's values")
    func sameFieldsAsTheGeneralPath() async throws {
        // Without a memory tier every hit reads the store and takes the general path.
        let general = try await answers(memoryCapacityBytes: 0)
        let prepared = try await answers(memoryCapacityBytes: 1 << 20)
        #expect(prepared.map(\.cacheStatus) == ["MISS", "HIT", "HIT", "HIT", "HIT", "HIT"])
        let perAnswer: Set<String> = ["date", "age", "cache-status"]
        for (one, other) in zip(general, prepared) {
            #expect(one.status == other.status && one.body == other.body)
            #expect(one.headers.map(\.name) == other.headers.map(\.name))
            let values = { (response: RawResponse) in
                response.headers.filter { !perAnswer.contains($0.name.lowercased()) }.map(\.value)
            }
            #expect(values(one) == values(other))
        }
        for hit in prepared.dropFirst() {
            #expect(hit.values("Age").count == 1 && Int(hit.header("Age") ?? "") ?? 0 >= 5)
            #expect(hit.values("Cache-Status").first == "upstream;hit")
            #expect(hit.values("Cache-Status").last?.hasPrefix("urlcache;hit;ttl=") == true)
            #expect(hit.values("X-Cache-Status") == ["HIT"])
        }
        #expect(prepared[3].body.isEmpty && prepared[3].header("Content-Length") == "13") // HEAD
        #expect(prepared[4].header("Connection") == "keep-alive") // HTTP/1.0
        #expect(prepared[5].header("Connection") == "close")
    }

    @Test("Age grows and ttl falls between two hits of one prepared item; a stale answer says so")
    func ageGrows() async throws {
        let fixture = try await ProxyFixture.start { _, _ in
            LoopbackOrigin.Response(status: 200, headers: [("Cache-Control", "max-age=100")], body: "aging")
        }
        let connection = try await fixture.connect()
        _ = try await connection.exchange("GET", "/a")
        let first = try await connection.exchange("GET", "/a")
        fixture.clock.advance(seconds: 30)
        let second = try await connection.exchange("GET", "/a")
        let firstAge = try #require(Int(first.header("Age") ?? ""))
        #expect(second.cacheStatus == "HIT" && Int(second.header("Age") ?? "") == firstAge + 30)
        #expect(first.header("Cache-Status") != second.header("Cache-Status"))
        fixture.clock.advance(seconds: 100)
        let stale = try await connection.exchange("GET", "/a", headers: [("Cache-Control", "max-stale=600")])
        #expect(stale.cacheStatus == "STALE" && stale.text == "aging")
        #expect(Int(stale.header("Age") ?? "") == firstAge + 130)
        connection.close()
        try await fixture.stop()
    }

    @Test("a HEAD, a conditional request and a range on a prepared item")
    func headConditionalAndRange() async throws {
        let fixture = try await ProxyFixture.start { _, _ in
            LoopbackOrigin.Response(
                status: 200, headers: [("Cache-Control", "max-age=600"), ("ETag", "\"v1\"")], body: "0123456789")
        }
        let connection = try await fixture.connect()
        _ = try await connection.exchange("GET", "/c")
        let get = try await connection.exchange("GET", "/c") // prepares the head
        let head = try await connection.exchange("HEAD", "/c")
        #expect(head.status == 200 && head.body.isEmpty && head.header("Content-Length") == "10")
        #expect(head.headers.map(\.name) == get.headers.map(\.name))
        let notModified = try await connection.exchange("GET", "/c", headers: [("If-None-Match", "\"v1\"")])
        #expect(notModified.status == 304 && notModified.body.isEmpty && notModified.header("ETag") == "\"v1\"")
        let changed = try await connection.exchange("GET", "/c", headers: [("If-None-Match", "\"v0\"")])
        #expect(changed.status == 200 && changed.text == "0123456789")
        let range = try await connection.exchange("GET", "/c", headers: [("Range", "bytes=2-5")])
        #expect(range.status == 206 && range.text == "2345" && range.header("Content-Range") == "bytes 2-5/10")
        let again = try await connection.exchange("GET", "/c")
        #expect(again.status == 200 && again.text == "0123456789" && again.cacheStatus == "HIT")
        #expect(fixture.origin.requestCount == 1)
        connection.close()
        try await fixture.stop()
    }

    @Test("a Vary'd entry's variants each answer with their own prepared head and body")
    func varyVariants() async throws {
        let fixture = try await ProxyFixture.start { request, _ in
            let language = request.header("Accept-Language") ?? "none"
            return LoopbackOrigin.Response(
                status: 200,
                headers: [
                    ("Cache-Control", "max-age=600"), ("Vary", "Accept-Language"), ("Content-Language", language),
                ], body: "in \(language)")
        }
        let connection = try await fixture.connect()
        for _ in 0..<3 {
            for language in ["en", "fr"] {
                let answer = try await connection.exchange("GET", "/v", headers: [("Accept-Language", language)])
                #expect(answer.text == "in \(language)" && answer.header("Content-Language") == language)
            }
        }
        #expect(fixture.origin.requestCount == 2)
        connection.close()
        try await fixture.stop()
    }

    /// An origin that answers version 1 first, then version 2.
    private static func versioned() -> @Sendable (LoopbackOrigin.Request, Int) -> LoopbackOrigin.Response {
        { _, count in // the origin's requests so far, this one included
            let version = count == 1 ? 1 : 2
            return LoopbackOrigin.Response(
                status: 200, headers: [("Cache-Control", "max-age=600"), ("X-Version", "\(version)")],
                body: "version \(version)")
        }
    }

    /// A proxy in front of ``versioned()`` whose `path` is stored and answered once from memory,
    /// which prepares version 1's head.
    private static func versionOnePrepared(at path: String) async throws -> (ProxyFixture, RawConnection) {
        let fixture = try await ProxyFixture.start(Self.versioned())
        let connection = try await fixture.connect()
        _ = try await connection.exchange("GET", path)
        let old = try await connection.exchange("GET", path)
        #expect(old.header("X-Version") == "1" && old.cacheStatus == "HIT")
        return (fixture, connection)
    }

    /// Two hits of `path` that must both be version 2, head and body.
    private static func expectVersionTwoHits(at path: String, on connection: RawConnection) async throws {
        for _ in 0..<2 {
            let hit = try await connection.exchange("GET", path)
            #expect(hit.cacheStatus == "HIT" && hit.header("X-Version") == "2" && hit.text == "version 2")
        }
    }

    @Test("an entry this proxy stores again is answered with the new head, not the one prepared before")
    func replacedByThisProxy() async throws {
        let (fixture, connection) = try await Self.versionOnePrepared(at: "/p")
        // no-cache: the origin is asked again, and version 2 replaces the memory item.
        let refreshed = try await connection.exchange("GET", "/p", headers: [("Cache-Control", "no-cache")])
        #expect(refreshed.header("X-Version") == "2")
        try await Self.expectVersionTwoHits(at: "/p", on: connection)
        connection.close()
        try await fixture.stop()
    }

    @Test("an entry another process replaces on the directory is answered with the new head")
    func replacedByAnotherStore() async throws {
        let (fixture, connection) = try await Self.versionOnePrepared(at: "/s")
        // Another process, a second `urlcache proxy` on the same directory and origin, stores
        // version 2.
        let port = LoopbackSocket.freePort()
        let other = try ChildProcess(
            ChildProcess.builtExecutable("urlcache"),
            [
                "proxy", fixture.directory.root, "--listen", "127.0.0.1:\(port)", "--upstream", fixture.origin.url,
                "--threads", "1",
            ])
        #expect(try await runBlocking { other.waitForLine("listening on 127.0.0.1:\(port)") })
        let otherConnection = try await RawConnection.open(port: port)
        let stored = try await otherConnection.exchange("GET", "/s", headers: [("Cache-Control", "no-cache")])
        otherConnection.close()
        #expect(stored.header("X-Version") == "2")
        kill(other.pid, SIGTERM)
        #expect(try await runBlocking { other.finish() }.status == 0)
        try await Self.expectVersionTwoHits(at: "/s", on: connection)
        #expect(fixture.origin.requestCount == 2)
        connection.close()
        try await fixture.stop()
    }
}
