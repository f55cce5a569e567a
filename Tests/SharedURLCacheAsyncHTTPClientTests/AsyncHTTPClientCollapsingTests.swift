import AsyncHTTPClient
import Foundation
import LoopbackOrigin
import SharedURLCache
import SharedURLCacheAsyncHTTPClient
import Testing
import TestProcess

/// Concurrent misses of one URL through one client make one origin request. The origin holds its
/// answers until the test has seen the followers queue behind their leaders (`gate`), so the misses
/// overlap however the machine schedules them.
@Suite(.blockingWaits, .timeLimit(.minutes(5)))
final class AsyncHTTPClientCollapsingTests {
    let root: String
    let origin: LoopbackOrigin
    let gate = OriginGate()

    init() throws {
        root = AHCTest.makeDirectory("suc-ahc-collapse")
        let gate = self.gate
        origin = try LoopbackOrigin { request, n in
            gate.pass()
            if request.target.hasPrefix("/vary") {
                return .init(
                    headers: [("Cache-Control", "max-age=600"), ("Vary", "Accept-Language")],
                    body: "lang=" + (request.header("Accept-Language") ?? "-"))
            }
            if request.target.hasPrefix("/nostore") {
                return .init(headers: [("Cache-Control", "no-store")], body: "n=\(n)")
            }
            return .init(headers: [("Cache-Control", "max-age=600")], body: "n=\(n)")
        }
    }

    deinit {
        origin.stop()
        try? FileManager.default.removeItem(atPath: root)
    }

    /// Sends `requests` at once; the origin answers once `followers` of them wait on a leader
    /// (with collapsing off, once every request has reached the origin).
    func concurrently(
        _ client: CachingHTTPClient, _ requests: [(path: String, headers: [(String, String)])], followers: Int
    ) async throws -> [AHCTest.Answer] {
        let base = origin.url
        return try await withThrowingTaskGroup(of: AHCTest.Answer.self) { group in
            for request in requests {
                group.addTask { try await AHCTest.get(client, base + request.path, headers: request.headers) }
            }
            let origin = self.origin
            let leaders = requests.count - followers
            let queued = try await gate.open {
                client.requestsWaitingOnLeaders == followers && origin.requestCount == leaders
            }
            #expect(queued, "the requests never overlapped as the test expects")
            return try await group.reduce(into: []) { $0.append($1) }
        }
    }

    @Test("20 concurrent misses of one URL → exactly 1 origin request; the 19 others are answered from the cache")
    func twentyMisses() async throws {
        let client = CachingHTTPClient(cache: try AHCTest.cache(root), httpClient: AHCTest.httpClient)
        let answers = try await concurrently(
            client, Array(repeating: (path: "/slow", headers: []), count: 20), followers: 19)
        #expect(origin.requestCount == 1)
        #expect(answers.allSatisfy { $0.text == "n=1" && $0.status == 200 })
        #expect(answers.filter { $0.response.cacheStatus == .miss }.count == 1)
        #expect(answers.filter { $0.response.cacheStatus == .hit }.count == 19)
        // RFC 9211 §2.6: the 19 say they were collapsed into the one that went forward.
        let members = answers.map { $0.response.cacheStatusMember }
        #expect(members.filter { $0.forward == .uriMiss && $0.collapsed == nil }.count == 1)
        #expect(answers.filter { $0.response.storeSettlement.isCommitted }.count == 1, "the leader's body was stored")
        #expect(members.filter { $0.forward == .uriMiss && !$0.hit && $0.collapsed == true }.count == 19)
    }

    @Test("Vary: 10 en + 10 fr concurrent misses → 2 origin requests; each caller gets its own variant")
    func varyMisses() async throws {
        let client = CachingHTTPClient(cache: try AHCTest.cache(root), httpClient: AHCTest.httpClient)
        let requests = (0..<20).map { i in (path: "/vary", headers: [("Accept-Language", i % 2 == 0 ? "en" : "fr")]) }
        // All 20 follow one leader at first (its Vary is not known yet); then the other language's
        // requests follow a leader of their own, through the open gate.
        let answers = try await concurrently(client, requests, followers: 19)
        #expect(origin.requestCount == 2)
        #expect(
            answers.filter { $0.text == "lang=en" }.count == 10 && answers.filter { $0.text == "lang=fr" }.count == 10)
    }

    @Test(
        "not stored (no-store): followers wait for the leader, then go to the origin themselves, never get its response"
    )
    func noStore() async throws {
        let client = CachingHTTPClient(cache: try AHCTest.cache(root), httpClient: AHCTest.httpClient)
        let answers = try await concurrently(
            client, Array(repeating: (path: "/nostore", headers: []), count: 3), followers: 2)
        #expect(origin.requestCount == 3)
        #expect(Set(answers.map(\.text)).count == 3, "each caller got its own origin response")
        // RFC 9211 §2.6: collapsing was tried and failed for the two that waited.
        #expect(answers.filter { $0.response.cacheStatusMember.collapsed == false }.count == 2)
        #expect(answers.allSatisfy { $0.response.cacheStatusMember.detail == "response-no-store" })
    }

    @Test("control: with collapsing off, concurrent misses each reach the origin")
    func withoutCollapsing() async throws {
        let client = try CachingHTTPClient(
            cache: try AHCTest.cache(root), configuration: .init(collapsesRequests: false))
        _ = try await concurrently(client, Array(repeating: (path: "/slow", headers: []), count: 4), followers: 0)
        #expect(origin.requestCount == 4)
    }

    /// The leader's flight ends in a task once its store settles; a request arriving before that
    /// task runs must not follow a flight that is over (it used to: `fwd=uri-miss;collapsed`).
    @Test("a request after the leader's answer is stored is a plain hit, not collapsed, every time")
    func afterTheStoreSettledNoFollowing() async throws {
        gate.open() // one request at a time: nothing to overlap
        let client = CachingHTTPClient(cache: try AHCTest.cache(root), httpClient: AHCTest.httpClient)
        for round in 0..<5 {
            let url = origin.url + "/settled-\(round)"
            let miss = try await AHCTest.get(client, url)
            #expect(miss.response.storeSettlement.isCommitted)
            _ = await eventually { client.immediateResponse(for: HTTPClientRequest(url: url)) != nil }
            let hit = try await AHCTest.get(client, url)
            #expect(
                hit.response.cacheStatusMember.hit && hit.response.cacheStatusMember.collapsed == nil,
                "round \(round): \(hit.response.cacheStatusMember)")
        }
        #expect(origin.requestCount == 5)
    }
}
