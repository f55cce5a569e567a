import CachingProxy
import Foundation
import LoopbackOrigin
import Testing
import TestProcess

/// The proxy serialises its responses itself (ProxyResponseEncoder) and must frame them
/// as NIO's encoder did (RFC 9112 §6): chunked when the length is unknown, no body after HEAD, 204
/// and 304, HTTP/1.0 by length or by close, pipelined answers complete and in order. Each test
/// sends a second request on the same connection where it can, so a framing error (body bytes
/// left over, a missing chunk terminator) shows as a broken second answer.
@Suite(.blockingWaits, .timeLimit(.minutes(10)))
struct ProxyResponseFramingTests {
    /// 1 MiB: more than the proxy gathers before it writes a head (256 KiB), so the answer to a
    /// body of unknown length is streamed.
    static let large: [UInt8] = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 11) }

    @Test("a streamed miss of unknown length arrives chunked, complete, and the connection goes on")
    func streamedMissIsChunked() async throws {
        let fixture = try await ProxyFixture.start { request, _ in
            if request.target == "/small" {
                return LoopbackOrigin.Response(status: 200, headers: [("Cache-Control", "no-store")], body: "next")
            }
            var response = LoopbackOrigin.Response(status: 200, headers: [("Cache-Control", "no-store")])
            response.body = Self.large
            response.chunked = true
            return response
        }
        let connection = try await fixture.connect()
        defer { connection.close() }
        let streamed = try await connection.exchange("GET", "/stream")
        #expect(streamed.status == 200)
        #expect(streamed.values("Transfer-Encoding") == ["chunked"])
        #expect(streamed.header("Content-Length") == nil)
        #expect(streamed.body == Self.large)
        let next = try await connection.exchange("GET", "/small")
        #expect(next.status == 200 && next.text == "next" && next.header("Content-Length") == "4")
        try await fixture.stop()
    }

    @Test("HEAD of a cached entry has its Content-Length and no body; a chunked origin's HEAD none either")
    func headHasNoBody() async throws {
        let fixture = try await ProxyFixture.start { request, _ in
            var response = LoopbackOrigin.Response(
                status: 200, headers: [("Cache-Control", "max-age=600")], body: "twelve bytes")
            response.chunked = request.target == "/chunked"
            return response
        }
        let connection = try await fixture.connect()
        defer { connection.close() }
        #expect(try await connection.exchange("GET", "/h").text == "twelve bytes")
        let head = try await connection.exchange("HEAD", "/h")
        #expect(head.status == 200 && head.cacheStatus == "HIT")
        #expect(head.header("Content-Length") == "12")
        #expect(head.header("Transfer-Encoding") == nil)
        // No body bytes went out after the head: the next answer on the connection parses.
        let again = try await connection.exchange("GET", "/h")
        #expect(again.status == 200 && again.text == "twelve bytes")
        // An origin that answers HEAD without a length: a head alone (chunking may be announced,
        // as for the GET, RFC 9112 §6.1), and no chunk terminator after it.
        let headOfChunked = try await connection.exchange("HEAD", "/chunked")
        #expect(headOfChunked.status == 200 && headOfChunked.header("Content-Length") == nil)
        let afterwards = try await connection.exchange("GET", "/h")
        #expect(afterwards.status == 200 && afterwards.text == "twelve bytes")
        try await fixture.stop()
    }

    @Test("a 304 to a conditional request and a 204 carry no body and no length; the connection goes on")
    func notModifiedAndNoContentHaveNoBody() async throws {
        let fixture = try await ProxyFixture.start { request, _ in
            if request.target == "/empty" {
                return LoopbackOrigin.Response(status: 204, headers: [("Cache-Control", "no-store")])
            }
            return LoopbackOrigin.Response(
                status: 200, headers: [("Cache-Control", "max-age=600"), ("ETag", "\"v1\"")], body: "validated")
        }
        let connection = try await fixture.connect()
        defer { connection.close() }
        #expect(try await connection.exchange("GET", "/v").text == "validated")
        let notModified = try await connection.exchange("GET", "/v", headers: [("If-None-Match", "\"v1\"")])
        #expect(notModified.status == 304)
        #expect(notModified.header("Content-Length") == nil && notModified.header("Transfer-Encoding") == nil)
        #expect(notModified.header("ETag") == "\"v1\"")
        let noContent = try await connection.exchange("GET", "/empty")
        #expect(noContent.status == 204)
        #expect(noContent.header("Content-Length") == nil && noContent.header("Transfer-Encoding") == nil)
        let again = try await connection.exchange("GET", "/v")
        #expect(again.status == 200 && again.text == "validated")
        try await fixture.stop()
    }

    @Test("HTTP/1.0 gets a length-framed answer, never chunked; keep-alive only when asked for")
    func http10IsLengthFramed() async throws {
        let fixture = try await ProxyFixture.start { request, _ in
            if request.target == "/stream" {
                var response = LoopbackOrigin.Response(status: 200, headers: [("Cache-Control", "no-store")])
                response.body = Self.large
                response.chunked = true
                return response
            }
            return LoopbackOrigin.Response(status: 200, headers: [("Cache-Control", "max-age=600")], body: "old client")
        }
        let keptAlive = try await fixture.connect()
        defer { keptAlive.close() }
        for round in 0..<2 { // a miss, then a hit from memory
            try await keptAlive.write("GET /ten HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\n\r\n")
            let response = try await keptAlive.readResponse()
            #expect(response.status == 200 && response.text == "old client", "round \(round)")
            #expect(response.header("Content-Length") == "10" && response.header("Transfer-Encoding") == nil)
            #expect(response.header("Connection")?.lowercased() == "keep-alive")
        }
        // Without keep-alive, a body of unknown length ends with the connection (RFC 9112 §6.3).
        let closing = try await fixture.connect()
        defer { closing.close() }
        try await closing.write("GET /stream HTTP/1.0\r\nHost: x\r\n\r\n")
        let streamed = try await closing.readResponse()
        #expect(streamed.status == 200 && streamed.header("Transfer-Encoding") == nil)
        #expect(streamed.header("Connection")?.lowercased() == "close")
        #expect(streamed.body == Self.large)
        try await fixture.stop()
    }

    @Test("pipelined requests on one connection get complete answers, in order (hits, a miss, HEAD)")
    func pipelinedAnswersInOrder() async throws {
        let fixture = try await ProxyFixture.start { request, _ in
            LoopbackOrigin.Response(
                status: 200, headers: [("Cache-Control", "max-age=600")], body: "body of \(request.target)")
        }
        let warm = try await fixture.send("GET", "/one")
        #expect(warm.text == "body of /one")
        let connection = try await fixture.connect()
        defer { connection.close() }
        try await connection.write(
            "GET /one HTTP/1.1\r\nHost: x\r\n\r\nGET /two HTTP/1.1\r\nHost: x\r\n\r\n"
                + "HEAD /one HTTP/1.1\r\nHost: x\r\n\r\nGET /one HTTP/1.1\r\nHost: x\r\n\r\n")
        let first = try await connection.readResponse()
        let second = try await connection.readResponse()
        let third = try await connection.readResponse(method: "HEAD")
        let fourth = try await connection.readResponse()
        #expect(first.text == "body of /one" && first.cacheStatus == "HIT")
        #expect(second.text == "body of /two" && second.cacheStatus == "MISS")
        #expect(third.status == 200 && third.header("Content-Length") == "12" && third.body.isEmpty)
        #expect(fourth.text == "body of /one" && fourth.cacheStatus == "HIT")
        try await fixture.stop()
    }
}
