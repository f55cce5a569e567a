import AsyncHTTPClient
import Foundation
import HTTPTypes
import LoopbackOrigin
import NIOCore
import NIOHTTP1
import SharedURLCache
import SharedURLCacheAsyncHTTPClient
import Synchronization
import Testing
import TestProcess

/// Test support for the AsyncHTTPClient integration: a fresh directory per test (mkdtemp,
/// removed by the owner), and GETs whose body is read as the stream it is.
enum AHCTest {
    /// The origin client of these tests: `CachingHTTPClient.defaultHTTPClient`'s settings with a
    /// 30 s connect timeout instead of 3 s. Every origin here is on loopback, where a connect
    /// fails or succeeds at once, but a parallel suite on two cores once saw two connects time
    /// out at 3 s (the cause not pinned down: the accept thread or the event loop waiting for a
    /// core). The dead-origin tests keep the default client: a refused connect waits for no
    /// timeout.
    static let httpClient = HTTPClient(
        eventLoopGroup: HTTPClient.defaultEventLoopGroup,
        configuration: CachingHTTPClient.originConfiguration(connectTimeout: .seconds(30)))

    static func makeDirectory(_ prefix: String) -> String {
        var template = Array((NSTemporaryDirectory() + "/\(prefix)-XXXXXX").utf8CString)
        _ = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        return String(decoding: template.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func cache(_ root: String, memory: Int = 4 << 20, disk: Int = 256 << 20, maximumEntry: Int = 8 << 20) throws
        -> SharedCache
    {
        var configuration = SharedCacheConfiguration(
            memoryCapacity: memory, diskCapacity: disk, directory: URL(fileURLWithPath: root + "/cache"))
        configuration.maximumEntrySizeBytes = maximumEntry
        return try SharedCache(configuration: configuration)
    }

    struct Answer {
        var response: CachingHTTPClientResponse
        var body: Data
        var chunks: Int
        var status: Int { Int(response.status.code) }
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    static func get(
        _ client: CachingHTTPClient, _ url: String, policy: RequestCachePolicy = .useProtocolCachePolicy,
        headers: [(String, String)] = [], method: HTTPMethod = .GET, timeout: TimeAmount = .seconds(30)
    ) async throws -> Answer {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        let response = try await client.execute(request, timeout: timeout, policy: policy)
        var body = Data()
        var chunks = 0
        for try await chunk in response.body {
            chunks += 1
            body.append(contentsOf: chunk.readableBytesView)
        }
        return Answer(response: response, body: body, chunks: chunks)
    }
}

/// A clock offset a test moves (the flow's `now` is the machine's clock plus it).
final class ClockOffset: Sendable {
    private let seconds = Atomic<Int>(0)
    var now: Date { Date().addingTimeInterval(TimeInterval(seconds.load(ordering: .relaxed))) }
    func advance(seconds added: Int) { _ = seconds.add(added, ordering: .relaxed) }
}

/// The caching client against a loopback origin that counts requests.
@Suite(.blockingWaits, .timeLimit(.minutes(3)))
final class AsyncHTTPClientCachingTests {
    let root: String
    let origin: LoopbackOrigin
    let cache: SharedCache
    let client: CachingHTTPClient
    /// Seconds the caching flow's clock runs ahead of the machine's: a test ages its entries by
    /// moving it instead of sleeping past their max-age.
    let clockOffset: ClockOffset

    static func body(_ n: Int) -> String { LoopbackOrigin.numberedBody(n) }

    init() throws {
        root = AHCTest.makeDirectory("suc-ahc")
        origin = try LoopbackOrigin { request, n in AsyncHTTPClientCachingTests.respond(request, n) }
        cache = try AHCTest.cache(root)
        // A user writes `CachingHTTPClient(cache: try SharedCache(…))`; the tests name their
        // origin client (see AHCTest.httpClient) and keep the cache for the tests that open a
        // second, private client on it; the flow's clock is one they can move.
        let clockOffset = ClockOffset()
        self.clockOffset = clockOffset
        var configuration = CachingHTTPClient.Configuration()
        configuration.caching.now = { clockOffset.now }
        client = try CachingHTTPClient(cache: cache, httpClient: AHCTest.httpClient, configuration: configuration)
    }

    deinit {
        origin.stop()
        try? FileManager.default.removeItem(atPath: root)
    }

    /// The origin: the path says what to send; the paths this suite adds to the shared ones
    /// (``LoopbackOrigin/clientIntegrationResponse(_:_:)``) first.
    static func respond(_ request: LoopbackOrigin.Request, _ n: Int) -> LoopbackOrigin.Response {
        let path = request.target
        if path.hasPrefix("/policy") {
            return LoopbackOrigin.tagged("\"p\"", cacheControl: "max-age=600", request: request, body: body(n))
        }
        if path.hasPrefix("/auth-public") {
            return .init(headers: [("Cache-Control", "public, max-age=600")], body: body(n))
        }
        if path.hasPrefix("/private") {
            return .init(headers: [("Cache-Control", "private, max-age=600")], body: body(n))
        }
        if path.hasPrefix("/big") {
            return .init(
                headers: [("Cache-Control", "max-age=600")], body: String(repeating: "0123456789abcdef", count: 12_800))
        }
        return LoopbackOrigin.clientIntegrationResponse(request, n)
    }

    func get(
        _ path: String, policy: RequestCachePolicy = .useProtocolCachePolicy, headers: [(String, String)] = [],
        method: HTTPMethod = .GET, client: CachingHTTPClient? = nil, timeout: TimeAmount = .seconds(30)
    ) async throws -> AHCTest.Answer {
        try await AHCTest.get(
            client ?? self.client, origin.url + path, policy: policy, headers: headers, method: method, timeout: timeout
        )
    }

    @Test("fresh hit: five GETs of a max-age=600 resource reach the origin once; the body streams in chunks")
    func freshHits() async throws {
        // Given / When
        var answers: [AHCTest.Answer] = []
        for _ in 0..<5 { answers.append(try await get("/fresh")) }
        // Then
        #expect(origin.requestCount == 1)
        #expect(answers.map(\.response.cacheStatus) == [.miss, .hit, .hit, .hit, .hit])
        #expect(Set(answers.map(\.body)).count == 1 && answers[0].text == Self.body(1))
        #expect(answers.allSatisfy { $0.status == 200 })
        #expect(answers[1].response.headers.first(name: "Age") != nil, "a stored response carries Age (RFC 9111 §5.1)")
        #expect(answers[1].response.headers.first(name: "Content-Type") == "application/json")
        #expect(try FileManager.default.contentsOfDirectory(atPath: root + "/cache").contains("index.lmdb"))
        // A 200 KiB body streams: from the origin in the chunks the origin's connection delivers
        // (teed into the store), from the cache in chunks of 64 KiB.
        let big = try await get("/big")
        let bigHit = try await get("/big")
        #expect(big.body.count == 204_800 && bigHit.body == big.body && bigHit.response.cacheStatus == .hit)
        #expect(big.chunks >= 1 && bigHit.chunks == 4)
    }

    @Test("revalidation with ETag: If-None-Match, a 304 that repeats the validator, a 200 with the stored body")
    func etag() async throws {
        let first = try await get("/etag")
        let second = try await get("/etag")
        #expect(second.body == first.body && second.status == 200)
        #expect(first.response.cacheStatus == .miss && second.response.cacheStatus == .revalidated)
        #expect(origin.requests.last?.header("If-None-Match") == "\"v1\"")
        #expect(origin.requestCount == 2)
    }

    @Test("revalidation with Last-Modified: If-Modified-Since, a 304 that repeats it, a 200 with the stored body")
    func lastModified() async throws {
        let first = try await get("/lastmod")
        let second = try await get("/lastmod")
        #expect(second.body == first.body && second.status == 200 && second.response.cacheStatus == .revalidated)
        #expect(origin.requests.last?.header("If-Modified-Since") == "Sun, 06 Nov 1994 08:49:37 GMT")
    }

    /// One case per cache policy: what a request with it does when a fresh response (with an
    /// ETag) is stored, and when nothing is.
    struct PolicyCase: Sendable, CustomTestStringConvertible {
        var policy: RequestCachePolicy
        var storedOriginRequests: Int
        var storedStatus: CacheStatus
        var sends: (name: String, value: String)?
        /// Origin requests for a miss; -1: the request throws `notCached` instead.
        var missOriginRequests: Int
        var testDescription: String { "\(policy)" }
    }

    static let policyCases: [PolicyCase] = [
        .init(
            policy: .useProtocolCachePolicy, storedOriginRequests: 0, storedStatus: .hit, sends: nil,
            missOriginRequests: 1),
        .init(
            policy: .reloadIgnoringLocalCacheData, storedOriginRequests: 1, storedStatus: .bypass, sends: nil,
            missOriginRequests: 1),
        .init(
            policy: .reloadIgnoringLocalAndRemoteCacheData, storedOriginRequests: 1, storedStatus: .bypass,
            sends: ("Cache-Control", "no-cache"), missOriginRequests: 1),
        .init(
            policy: .returnCacheDataElseLoad, storedOriginRequests: 0, storedStatus: .hit, sends: nil,
            missOriginRequests: 1),
        .init(
            policy: .returnCacheDataDontLoad, storedOriginRequests: 0, storedStatus: .hit, sends: nil,
            missOriginRequests: -1),
        .init(
            policy: .reloadRevalidatingCacheData, storedOriginRequests: 1, storedStatus: .revalidated,
            sends: ("If-None-Match", "\"p\""), missOriginRequests: 1),
    ]

    @Test(
        "each of the six cache policies, per request, with a fresh entry stored and with none", arguments: policyCases)
    func policies(_ testCase: PolicyCase) async throws {
        // Given a fresh stored response
        let stored = try await get("/policy")
        // When
        let answer = try await get("/policy", policy: testCase.policy)
        // Then
        #expect(origin.requestCount == 1 + testCase.storedOriginRequests)
        #expect(answer.response.cacheStatus == testCase.storedStatus)
        let reloaded = testCase.storedOriginRequests == 1 && testCase.storedStatus == .bypass
        #expect(answer.text == Self.body(reloaded ? 2 : 1) && stored.text == Self.body(1) && answer.status == 200)
        if let sends = testCase.sends { #expect(origin.requests.last?.header(sends.name) == sends.value) }
        if testCase.storedOriginRequests == 1 && testCase.policy != .reloadRevalidatingCacheData {
            #expect(origin.requests.last?.header("If-None-Match") == nil, "a reload is unconditional")
        }
        // And with nothing stored
        let before = origin.requestCount
        if testCase.missOriginRequests < 0 {
            await #expect(throws: HTTPCachingError.notCached(url: origin.url + "/policy-miss")) {
                _ = try await self.get("/policy-miss", policy: testCase.policy)
            }
        } else {
            let miss = try await get("/policy-miss", policy: testCase.policy)
            #expect(miss.status == 200 && [.miss, .bypass].contains(miss.response.cacheStatus))
        }
        #expect(origin.requestCount == before + max(0, testCase.missOriginRequests))
    }

    @Test(
        "offline: with the origin stopped, returnCacheDataElseLoad / DontLoad serve any age, stale-if-error serves stale, a DontLoad miss throws notCached"
    )
    func offline() async throws {
        // Given
        let fresh = try await get("/off")
        let stale = try await get("/stale")
        clockOffset.advance(seconds: 2) // /stale is now past max-age=1
        // When the origin goes away
        origin.stop()
        // Then
        let elseLoad = try await get("/off", policy: .returnCacheDataElseLoad)
        let dontLoad = try await get("/off", policy: .returnCacheDataDontLoad)
        #expect(elseLoad.body == fresh.body && dontLoad.body == fresh.body)
        let staleElseLoad = try await get("/stale", policy: .returnCacheDataElseLoad)
        #expect(staleElseLoad.body == stale.body && staleElseLoad.response.cacheStatus == .stale)
        // The default HTTPClient does not retry a refused connect: stale-if-error and the failed
        // miss below are answered at once (AsyncHTTPClientDeadOriginTests times them).
        let staleIfError = try await get("/stale")
        #expect(staleIfError.body == stale.body && staleIfError.response.cacheStatus == .stale)
        await #expect(throws: HTTPCachingError.notCached(url: origin.url + "/never")) {
            _ = try await self.get("/never", policy: .returnCacheDataDontLoad)
        }
        await #expect(throws: (any Error).self, "an ordinary miss fails with AsyncHTTPClient's connection error") {
            _ = try await self.get("/never")
        }
    }

    @Test("Vary keeps one variant per Accept-Language")
    func vary() async throws {
        #expect(try await get("/vary", headers: [("Accept-Language", "en")]).text == "lang=en")
        #expect(try await get("/vary", headers: [("Accept-Language", "fr")]).text == "lang=fr")
        let again = try await get("/vary", headers: [("Accept-Language", "en")])
        #expect(again.text == "lang=en" && again.response.cacheStatus == .hit)
        #expect(try await get("/vary", headers: [("Accept-Language", "fr")]).response.cacheStatus == .hit)
        #expect(origin.requestCount == 2)
    }

    @Test("no-store is not stored; 5xx are not stored; POST invalidates; HEAD is answered from the stored GET")
    func notStored() async throws {
        _ = try await get("/nostore")
        let second = try await get("/nostore")
        #expect(origin.requestCount == 2 && second.response.cacheStatus == .miss)
        _ = try await get("/error")
        let error = try await get("/error")
        #expect(origin.requestCount == 4 && error.status == 500)
        _ = try await get("/h")
        let head = try await get("/h", method: .HEAD)
        #expect(
            head.body.isEmpty && head.status == 200 && head.response.cacheStatus == .hit && origin.requestCount == 5)
        let post = try await get("/h", method: .POST)
        #expect(post.status == 204 && post.response.cacheStatus == .bypass)
        #expect(try await get("/h").response.cacheStatus == .miss)
        #expect(origin.requestCount == 7, "POST invalidated the stored GET")
    }

    @Test(
        "Authorization: a shared client stores only public answers; a private client (own partition) stores them, invisibly to the shared one"
    )
    func authorization() async throws {
        let auth = [("Authorization", "Bearer alice")]
        // Shared mode (RFC 9111 §3.5): not stored unless public.
        _ = try await get("/auth", headers: auth)
        _ = try await get("/auth", headers: auth)
        #expect(origin.requestCount == 2)
        _ = try await get("/auth-public", headers: auth)
        #expect(try await get("/auth-public", headers: auth).response.cacheStatus == .hit)
        #expect(origin.requestCount == 3)
        _ = try await get("/private")
        _ = try await get("/private")
        #expect(origin.requestCount == 5, "a shared cache does not store private responses")

        // Private mode, in a partition of its own on the same directory.
        let alice = try CachingHTTPClient(
            cache: cache, httpClient: AHCTest.httpClient, configuration: .init(mode: .private, partition: "user-alice"))
        _ = try await get("/auth", headers: auth, client: alice)
        #expect(try await get("/auth", headers: auth, client: alice).response.cacheStatus == .hit)
        _ = try await get("/private", client: alice)
        #expect(try await get("/private", client: alice).response.cacheStatus == .hit)
        #expect(origin.requestCount == 7)
        // What alice stored is invisible to the shared partition.
        #expect(try await get("/private", policy: .returnCacheDataElseLoad).response.cacheStatus == .miss)
        await #expect(throws: HTTPCachingError.self) {
            _ = try await self.get("/auth", policy: .returnCacheDataDontLoad, headers: auth)
        }
        #expect(origin.requestCount == 8)
    }
}

/// A response stored through the AsyncHTTPClient integration is a hit in another process that
/// reads the directory through URLSession, and the other way round (real processes).
@Suite(.blockingWaits, .serialized, .timeLimit(.minutes(5)))
struct AsyncHTTPClientCrossProcessTests {
    @Test(
        "stored by CachingHTTPClient, a hit for a URLSession worker process; stored by the worker, a hit for the client"
    )
    func twoProcesses() async throws {
        let root = AHCTest.makeDirectory("suc-ahc2")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let origin = try LoopbackOrigin { _, n in
            .init(headers: [("Cache-Control", "max-age=600")], body: "shared-\(n)")
        }
        defer { origin.stop() }
        func worker(_ path: String) throws -> String {
            return try ChildProcess.run(["urlsession-get", root + "/cache", origin.url + path]).out.trimmingCharacters(
                in: .whitespacesAndNewlines)
        }
        let client = CachingHTTPClient(
            cache: try SharedCache(
                memoryCapacity: 1 << 20, diskCapacity: 64 << 20,
                directory: URL(fileURLWithPath: root + "/cache")))
        // This process stores, the other hits.
        let stored = try await AHCTest.get(client, origin.url + "/a")
        #expect(stored.response.cacheStatus == .miss && stored.text == "shared-1")
        #expect(try worker("/a") == "STATUS 200 HIT 8")
        // The other process stores, this one hits.
        #expect(try worker("/b") == "STATUS 200 MISS 8")
        let hit = try await AHCTest.get(client, origin.url + "/b")
        #expect(hit.response.cacheStatus == .hit && hit.text == "shared-2")
        #expect(origin.requestCount == 2)
    }
}
