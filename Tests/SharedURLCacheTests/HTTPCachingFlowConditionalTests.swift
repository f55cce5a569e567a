import Foundation
import HTTPCacheSemantics
import HTTPTypes
import LoopbackOrigin
@testable import SharedURLCache
import Testing
import TestProcess

/// The flow with a client's own validators, `Date` stamping on receipt and exact header replay.
@Suite(.blockingWaits, .timeLimit(.minutes(5)))
struct HTTPCachingFlowConditionalTests {
    static let body = "{\"payload\":\"" + String(repeating: "y", count: 400) + "\"}"

    @Test("conditional-etag: a fresh hit answers the client's matching If-None-Match with 304 (RFC 9111 §4.3.2)")
    func freshHitAnswersIfNoneMatch() async throws {
        let h = try FlowHarness { _, _ in
            .init(headers: [("Cache-Control", "max-age=60"), ("ETag", "\"v1\"")], body: Self.body)
        }
        _ = try await h.send()
        h.advance(5)
        let matching = try await h.send(headers: ["If-None-Match": "\"v0\", \"v1\""])
        #expect(matching.response.status == .notModified && matching.cacheStatus == .hit)
        #expect(matching.body.isEmpty)
        #expect(matching.response.headerFields[.eTag] == "\"v1\"")
        #expect(matching.response.headerFields[.cacheControl] == "max-age=60")
        #expect(matching.response.headerFields[.age] == "5")
        let other = try await h.send(headers: ["If-None-Match": "\"v2\""])
        #expect(other.response.status == .ok && other.body == Data(Self.body.utf8))
        #expect(h.origin.requestCount == 1)
    }

    @Test("conditional-lastmodified: a fresh hit answers If-Modified-Since with 304 when not modified since")
    func freshHitAnswersIfModifiedSince() async throws {
        let lastModified = "Sun, 06 Nov 1994 08:49:37 GMT"
        let h = try FlowHarness { _, _ in
            .init(headers: [("Cache-Control", "max-age=60"), ("Last-Modified", lastModified)], body: Self.body)
        }
        _ = try await h.send()
        let same = try await h.send(headers: ["If-Modified-Since": lastModified])
        #expect(same.response.status == .notModified && same.response.headerFields[.lastModified] == lastModified)
        let earlier = try await h.send(headers: ["If-Modified-Since": "Sat, 05 Nov 1994 08:49:37 GMT"])
        #expect(earlier.response.status == .ok && !earlier.body.isEmpty)
        #expect(h.origin.requestCount == 1)
    }

    @Test("revalidation asks the origin about the stored response, not the client's tag; the client then gets 200")
    func revalidationUsesStoredValidator() async throws {
        let h = try FlowHarness { request, _ in
            if request.header("If-None-Match") == "\"v1\"" {
                return .init(status: 304, headers: [("ETag", "\"v1\""), ("Cache-Control", "max-age=60")])
            }
            return .init(headers: [("ETag", "\"v1\""), ("Cache-Control", "max-age=0")], body: Self.body)
        }
        _ = try await h.send()
        h.advance(1)
        let answer = try await h.send(headers: ["If-None-Match": "\"client-old\""])
        #expect(h.origin.requests.last?.header("If-None-Match") == "\"v1\"")
        #expect(answer.cacheStatus == .revalidated && answer.response.status == .ok)
        #expect(answer.body == Data(Self.body.utf8))
    }

    /// What the origin stores for each path of ``notModifiedWithoutValidator``.
    static let validatorlessPaths: [(path: String, headers: [(String, String)], request: [String: String])] = [
        ("/must-revalidate", [("ETag", "\"abcd\""), ("Cache-Control", "max-age=2, must-revalidate")], [:]),
        ("/no-cache", [("ETag", "\"abcd\""), ("Cache-Control", "no-cache")], [:]),
        ("/last-modified", [("Last-Modified", "Sun, 06 Nov 1994 08:49:37 GMT"), ("Cache-Control", "max-age=2")], [:]),
        (
            "/vary", [("ETag", "\"abcd\""), ("Cache-Control", "max-age=2"), ("Vary", "Accept-Encoding")],
            ["Accept-Encoding": "gzip"]
        ),
    ]

    @Test(
        "a 304 without ETag or Last-Modified answers the revalidation of the one stored response: one origin request (§4.3.4)",
        arguments: validatorlessPaths.indices)
    func notModifiedWithoutValidator(_ index: Int) async throws {
        let (path, headers, requestHeaders) = Self.validatorlessPaths[index]
        // The origin answers its 304s with Content-Type only, as many real origins do.
        let h = try FlowHarness { request, _ in
            if request.header("If-None-Match") != nil || request.header("If-Modified-Since") != nil {
                return .init(status: 304, headers: [("Content-Type", "text/plain; charset=utf-8")])
            }
            return .init(headers: headers + [("Content-Type", "text/plain")], body: Self.body)
        }
        let first = try await h.send(path, headers: requestHeaders)
        #expect(first.cacheStatus == .miss && h.origin.requestCount == 1)
        h.advance(5)
        let second = try await h.send(path, headers: requestHeaders)
        #expect(h.origin.requestCount == 2, "exactly one origin request for the revalidated client request")
        let conditional = h.origin.requests.last
        #expect(conditional?.header("If-None-Match") != nil || conditional?.header("If-Modified-Since") != nil)
        #expect(second.cacheStatus == .revalidated && second.response.status == .ok)
        #expect(second.body == Data(Self.body.utf8))
        #expect(
            second.response.headerFields[.contentType] == "text/plain; charset=utf-8",
            "the 304's fields are merged (§3.2)")
        h.advance(5)
        let third = try await h.send(path, headers: requestHeaders)
        #expect(third.cacheStatus == .revalidated && third.body == Data(Self.body.utf8))
        #expect(h.origin.requestCount == 3)
    }

    @Test("date: a response received without Date is stamped with its receipt time (RFC 9110 §6.6.1)")
    func stampsDateOnReceipt() async throws {
        let h = try FlowHarness { _, _ in .init(headers: [("Cache-Control", "max-age=60")], body: Self.body) }
        let receivedAt = HTTPDate(h.clock.now()).imfFixdate
        let first = try await h.send()
        #expect(first.response.headerFields[.date] == receivedAt)
        h.advance(7)
        let hit = try await h.send()
        #expect(hit.cacheStatus == .hit && hit.response.headerFields[.date] == receivedAt)
        #expect(hit.response.headerFields[.age] == "7")
    }

    @Test("date: a 304 without Date refreshes the entry's age from the revalidation (§4.3.4)")
    func notModifiedWithoutDateRefreshesAge() async throws {
        let h = try FlowHarness { request, _ in
            if request.header("If-None-Match") == "\"v1\"" {
                return .init(status: 304, headers: [("ETag", "\"v1\""), ("Cache-Control", "max-age=30")])
            }
            return .init(headers: [("ETag", "\"v1\""), ("Cache-Control", "max-age=30")], body: Self.body)
        }
        _ = try await h.send()
        h.advance(100)
        let revalidated = try await h.send()
        #expect(revalidated.cacheStatus == .revalidated)
        #expect(revalidated.response.headerFields[.date] == HTTPDate(h.clock.now()).imfFixdate)
        h.advance(10)
        let hit = try await h.send()
        #expect(hit.cacheStatus == .hit && hit.response.headerFields[.age] == "10")
        #expect(h.origin.requestCount == 2)
    }

    @Test("a hit replays header names as the origin spelled them")
    func headerNamesReplayedExactly() async throws {
        let h = try FlowHarness { _, _ in
            .init(
                headers: [("Cache-Control", "max-age=60"), ("X-Mixed-Case", "1"), ("x-lower", "2"), ("X-UPPER", "3")],
                body: Self.body)
        }
        _ = try await h.send()
        let hit = try await h.send()
        #expect(hit.cacheStatus == .hit)
        let names = Set(hit.response.headerFields.map(\.name.rawName))
        #expect(names.isSuperset(of: ["Cache-Control", "X-Mixed-Case", "x-lower", "X-UPPER"]))
    }
}
