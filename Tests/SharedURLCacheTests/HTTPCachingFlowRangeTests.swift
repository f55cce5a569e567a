import Foundation
import HTTPCacheSemantics
import HTTPTypes
import LoopbackOrigin
@testable import SharedURLCache
import Testing
import TestProcess

/// Range requests answered from a stored 200 (RFC 9110 §14), for bodies in memory and bodies
/// streamed from the store.
@Suite(.blockingWaits, .timeLimit(.minutes(5)))
struct HTTPCachingFlowRangeTests {
    /// 1000 bytes, no two neighbours alike, so an offset error shows.
    static let small = String((0..<1000).map { Character(UnicodeScalar(UInt8(33 + ($0 * 7) % 90))) })
    /// Larger than `CacheEngine.streamedHitBytes`: hits stream from the store in 64 KiB chunks.
    static let large = HTTPCachingFlowStreamingTests.large

    static func bytes(_ text: String, _ range: ClosedRange<Int>) -> Data { Data(Array(text.utf8)[range]) }

    /// (Range value, offsets it selects of `length`).
    static func forms(length: Int) -> [(String, ClosedRange<Int>)] {
        [
            ("bytes=10-19", 10...19), ("bytes=\(length - 5)-", (length - 5)...(length - 1)),
            ("bytes=-500", (length - 500)...(length - 1)),
            ("bytes=0-0", 0...0), ("bytes=\(length - 3)-\(length + 100)", (length - 3)...(length - 1)),
            ("bytes=-\(length + 1)", 0...(length - 1)),
            ("bytes=65530-65545", 65530...65545),
        ] // across the store's 64 KiB chunks
        .filter { $0.1.upperBound < length }
    }

    @Test("a body in memory: 206 with Content-Range, Content-Length and the exact bytes for each form")
    func inMemory() async throws {
        let h = try FlowHarness { _, _ in
            .init(headers: [("Cache-Control", "max-age=60"), ("ETag", "\"v1\"")], body: Self.small)
        }
        _ = try await h.send()
        for (value, range) in Self.forms(length: 1000) {
            let answer = try await h.send(headers: ["Range": value])
            #expect(answer.response.status.code == 206, "\(value)")
            #expect(
                answer.response.headerFields[.contentRange] == "bytes \(range.lowerBound)-\(range.upperBound)/1000",
                "\(value)")
            #expect(answer.response.headerFields[.contentLength] == String(range.count), "\(value)")
            #expect(answer.body == Self.bytes(Self.small, range), "\(value)")
            #expect(answer.cacheStatus == .hit)
            // The synchronous path (the proxy's event loop) answers the same.
            let fast = h.flow.storedResponse(for: h.request(headers: ["Range": value]))
            #expect(fast?.response.status.code == 206 && fast?.body == Self.bytes(Self.small, range), "\(value)")
        }
        #expect(h.origin.requestCount == 1)
    }

    @Test("a body streamed from the store is sliced as it is read")
    func streamed() async throws {
        let h = try FlowHarness { _, _ in .init(headers: [("Cache-Control", "max-age=60")], body: Self.large) }
        let miss = try await h.stream()
        _ = try await miss.body.collect()
        await miss.body.storeSettlement.wait()
        let length = Self.large.utf8.count
        for (value, range) in Self.forms(length: length) {
            let answer = try await h.stream(headers: ["Range": value])
            #expect(answer.response.status.code == 206, "\(value)")
            #expect(
                answer.response.headerFields[.contentRange]
                    == "bytes \(range.lowerBound)-\(range.upperBound)/\(length)", "\(value)")
            #expect(answer.response.headerFields[.contentLength] == String(range.count), "\(value)")
            #expect(answer.body.knownLength == range.count)
            #expect(try await answer.body.collect() == Self.bytes(Self.large, range), "\(value)")
        }
        #expect(h.origin.requestCount == 1)
    }

    @Test("an unsatisfiable range gets 416 with Content-Range: bytes */length")
    func unsatisfiable() async throws {
        let h = try FlowHarness { _, _ in
            .init(headers: [("Cache-Control", "max-age=60"), ("ETag", "\"v1\"")], body: Self.small)
        }
        _ = try await h.send()
        let answer = try await h.send(headers: ["Range": "bytes=1000-"])
        #expect(answer.response.status.code == 416)
        #expect(answer.response.headerFields[.contentRange] == "bytes */1000")
        #expect(answer.response.headerFields[.cacheControl] == nil, "nothing a cache downstream could store it by")
        #expect(answer.body.isEmpty)
        #expect(h.origin.requestCount == 1)
    }

    @Test("If-Range: a matching strong ETag lets the range apply, another tag gets the whole 200")
    func ifRange() async throws {
        let h = try FlowHarness { _, _ in
            .init(headers: [("Cache-Control", "max-age=60"), ("ETag", "\"v1\"")], body: Self.small)
        }
        _ = try await h.send()
        let match = try await h.send(headers: ["Range": "bytes=100-199", "If-Range": "\"v1\""])
        #expect(match.response.status.code == 206 && match.body == Self.bytes(Self.small, 100...199))
        let mismatch = try await h.send(headers: ["Range": "bytes=100-199", "If-Range": "\"v0\""])
        #expect(mismatch.response.status.code == 200 && mismatch.body == Data(Self.small.utf8))
        #expect(mismatch.response.headerFields[.contentRange] == nil)
        #expect(h.origin.requestCount == 1)
    }

    @Test("several ranges, bad syntax and HEAD get the whole stored 200")
    func whole() async throws {
        let h = try FlowHarness { _, _ in .init(headers: [("Cache-Control", "max-age=60")], body: Self.small) }
        _ = try await h.send()
        for value in ["bytes=0-1,5-6", "bytes=5-4", "lines=1-2"] {
            let answer = try await h.send(headers: ["Range": value])
            #expect(answer.response.status.code == 200 && answer.body == Data(Self.small.utf8), "\(value)")
        }
        let head = try await h.send(method: .head, headers: ["Range": "bytes=0-1"])
        #expect(head.response.status.code == 200 && head.body.isEmpty)
        #expect(h.origin.requestCount == 1)
    }

    @Test("a range request that misses goes to the origin; its 206 is not stored")
    func missGoesToOrigin() async throws {
        let h = try FlowHarness { request, _ in
            if request.header("Range") == "bytes=0-9" {
                return .init(
                    status: 206, headers: [("Cache-Control", "max-age=60"), ("Content-Range", "bytes 0-9/1000")],
                    body: String(Self.small.prefix(10)))
            }
            return .init(headers: [("Cache-Control", "max-age=60")], body: Self.small)
        }
        let partial = try await h.send(headers: ["Range": "bytes=0-9"])
        #expect(partial.response.status.code == 206 && partial.cacheStatus == .miss)
        let full = try await h.send()
        #expect(full.response.status.code == 200 && full.cacheStatus == .miss, "the 206 was not stored")
        let hit = try await h.send(headers: ["Range": "bytes=0-9"])
        #expect(hit.response.status.code == 206 && hit.cacheStatus == .hit && hit.body == Self.bytes(Self.small, 0...9))
        #expect(h.origin.requestCount == 2)
    }

    @Test("a revalidation asks for the whole response (no Range upstream); its 304 then serves the range")
    func revalidation() async throws {
        let h = try FlowHarness { request, _ in
            if request.header("If-None-Match") != nil { return .init(status: 304, headers: [("ETag", "\"v1\"")]) }
            return .init(headers: [("Cache-Control", "max-age=10"), ("ETag", "\"v1\"")], body: Self.small)
        }
        _ = try await h.send()
        h.advance(20)
        let answer = try await h.send(headers: ["Range": "bytes=-10", "If-Range": "\"v1\""])
        #expect(answer.response.status.code == 206 && answer.cacheStatus == .revalidated)
        #expect(answer.body == Self.bytes(Self.small, 990...999))
        #expect(h.origin.requestCount == 2)
        #expect(h.origin.requests.last?.header("Range") == nil && h.origin.requests.last?.header("If-Range") == nil)
        #expect(h.origin.requests.last?.header("If-None-Match") == "\"v1\"")
    }
}

extension FlowHarness {
    /// A GET (or another method) for `path` at the origin, with `headers`.
    func request(_ path: String = "/r", method: HTTPRequest.Method = .get, headers: [String: String] = [:])
        -> HTTPRequest
    {
        var fields = HTTPFields()
        for (name, value) in headers { fields[HTTPField.Name(name)!] = value }
        return HTTPRequest(
            method: method, scheme: "http", authority: "127.0.0.1:\(origin.port)", path: path, headerFields: fields)
    }
}
