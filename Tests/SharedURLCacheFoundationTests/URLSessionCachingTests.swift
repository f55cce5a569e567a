import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackOrigin
import SharedURLCache
import SharedURLCacheFoundation
import Testing
import TestProcess

/// URLSession on Linux with the caching protocol, against a loopback origin that counts
/// requests. Serialized: the protocol's flow is process-wide.
@Suite(.blockingWaits, .serialized, .timeLimit(.minutes(3)))
final class URLSessionCachingTests {
    let directory = TemporaryDirectory(prefix: "suc-it")
    var root: String { directory.root }
    let origin: LoopbackOrigin
    let session: URLSession

    static func body(_ n: Int) -> String { LoopbackOrigin.numberedBody(n) }

    init() throws {
        origin = try LoopbackOrigin(LoopbackOrigin.clientIntegrationResponse)
        // The two lines of setup a user writes:
        let configuration = URLSessionConfiguration.default
        configuration.useSharedURLCache(
            try SharedCache(
                memoryCapacity: 4 << 20, diskCapacity: 256 << 20,
                directory: URL(fileURLWithPath: directory.root + "/cache")))
        session = URLSession(configuration: configuration)
    }

    deinit { origin.stop() }

    func get(
        _ path: String, policy: URLRequest.CachePolicy = .useProtocolCachePolicy, headers: [String: String] = [:],
        method: String = "GET"
    ) async throws -> (Data, HTTPURLResponse) {
        var request = URLRequest(url: URL(string: origin.url + path)!, cachePolicy: policy)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await session.data(for: request)
        return (data, response as! HTTPURLResponse)
    }

    @Test("five GETs of a max-age=3600 resource reach the origin once; the directory is not empty")
    func freshHits() async throws {
        var bodies = Set<Data>()
        for _ in 0..<5 { bodies.insert(try await get("/fresh").0) }
        #expect(origin.requestCount == 1)
        #expect(bodies.count == 1)
        let (_, response) = try await get("/fresh")
        #expect(response.value(forHTTPHeaderField: "X-Cache-Status") == "HIT")
        let files = try FileManager.default.contentsOfDirectory(atPath: root + "/cache")
        #expect(files.contains("index.lmdb"))
    }

    @Test("completion-handler callers are served from the cache too")
    func completionHandler() async throws {
        _ = try await get("/fresh-ch")
        let data: Data = try await withCheckedThrowingContinuation { continuation in
            session.dataTask(with: URL(string: origin.url + "/fresh-ch")!) { data, _, error in
                if let error {
                    continuation.resume(throwing: error)
                } else {
                    continuation.resume(returning: data ?? Data())
                }
            }.resume()
        }
        #expect(data == Data(Self.body(1).utf8))
        #expect(origin.requestCount == 1)
    }

    @Test("revalidation with ETag: the caller gets a 200 with the cached body after a 304")
    func etag() async throws {
        let (first, _) = try await get("/etag")
        let (second, response) = try await get("/etag")
        #expect(second == first && response.statusCode == 200)
        #expect(response.value(forHTTPHeaderField: "X-Cache-Status") == "REVALIDATED")
        #expect(origin.requests.last?.header("If-None-Match") == "\"v1\"")
    }

    @Test("revalidation with Last-Modified")
    func lastModified() async throws {
        let (first, _) = try await get("/lastmod")
        let (second, response) = try await get("/lastmod")
        #expect(second == first && response.statusCode == 200)
        #expect(origin.requests.last?.header("If-Modified-Since") == "Sun, 06 Nov 1994 08:49:37 GMT")
    }

    @Test("reloadIgnoringLocalCacheData goes to the origin; reloadRevalidatingCacheData revalidates")
    func reloadPolicies() async throws {
        _ = try await get("/p")
        _ = try await get("/p", policy: .reloadIgnoringLocalCacheData)
        #expect(origin.requestCount == 2)
        _ = try await get("/p", policy: .reloadIgnoringLocalAndRemoteCacheData)
        #expect(origin.requests.last?.header("Cache-Control") == "no-cache")
        _ = try await get("/etag-r")
        _ = try await get("/etag-r", policy: .reloadRevalidatingCacheData)
        #expect(origin.requests.last?.header("If-None-Match") == "\"v1\"")
    }

    @Test(
        "offline: returnCacheDataElseLoad / DontLoad serve any age; a miss fails with resourceUnavailable; stale-if-error"
    )
    func offline() async throws {
        let (fresh, _) = try await get("/off")
        let (stale, _) = try await get("/stale")
        // /stale is now past max-age=1. Real time: the caching protocol's flow is process-wide and
        // its two-line setup has no clock a test could move.
        try await Task.sleep(for: .seconds(2))
        origin.stop()
        #expect(try await get("/off", policy: .returnCacheDataElseLoad).0 == fresh)
        #expect(try await get("/off", policy: .returnCacheDataDontLoad).0 == fresh)
        let (served, response) = try await get("/stale")
        #expect(served == stale && response.value(forHTTPHeaderField: "X-Cache-Status") == "STALE")
        do {
            _ = try await get("/never", policy: .returnCacheDataDontLoad)
            Issue.record("an offline miss succeeded")
        } catch let error as URLError {
            #expect(error.code == .resourceUnavailable)
        }
        await #expect(throws: URLError.self) { try await self.get("/never") }
    }

    @Test("Vary, no-store, Authorization in shared mode, error responses, HEAD, POST invalidation")
    func semantics() async throws {
        #expect(try await get("/vary", headers: ["Accept-Language": "en"]).0 == Data("lang=en".utf8))
        #expect(try await get("/vary", headers: ["Accept-Language": "fr"]).0 == Data("lang=fr".utf8))
        #expect(try await get("/vary", headers: ["Accept-Language": "en"]).0 == Data("lang=en".utf8))
        #expect(origin.requestCount == 2)
        _ = try await get("/nostore")
        _ = try await get("/nostore")
        #expect(origin.requestCount == 4)
        _ = try await get("/auth", headers: ["Authorization": "Bearer t"])
        _ = try await get("/auth", headers: ["Authorization": "Bearer t"])
        #expect(origin.requestCount == 6, "a response to Authorization without public is not shared")
        _ = try await get("/error")
        _ = try await get("/error")
        #expect(origin.requestCount == 8, "a 5xx without freshness is not stored")
        _ = try await get("/h")
        let (headBody, head) = try await get("/h", method: "HEAD")
        #expect(headBody.isEmpty && head.statusCode == 200 && origin.requestCount == 9)
        _ = try await get("/h", method: "POST")
        _ = try await get("/h")
        #expect(origin.requestCount == 11, "POST invalidated the stored GET")
    }
}

/// Two processes with their own URLSessions on one directory share responses.
@Suite(.blockingWaits, .serialized, .timeLimit(.minutes(5)))
struct URLSessionCrossProcessTests {
    @Test("a response fetched by one process is a hit in another")
    func twoProcesses() throws {
        let directory = TemporaryDirectory(prefix: "suc-it2")
        let origin = try LoopbackOrigin { _, n in
            .init(headers: [("Cache-Control", "max-age=600")], body: "shared-\(n)")
        }
        defer { origin.stop() }
        func run() throws -> String {
            return try ChildProcess.run(["urlsession-get", directory.root + "/cache", origin.url + "/shared"]).out
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(try run() == "STATUS 200 MISS 8")
        #expect(try run() == "STATUS 200 HIT 8")
        #expect(origin.requestCount == 1)
    }
}

/// Hit latency through URLSession with the caching protocol against a plain URLSession request to
/// the origin (medians of 200 each). Opt-in (`SUC_AHC_BENCH=1`, like the AsyncHTTPClient one):
/// a measurement, not a check. Serialized with the suite above: the protocol's flow is
/// process-wide.
@Suite(.blockingWaits, .serialized, .enabled(if: ProcessInfo.processInfo.environment["SUC_AHC_BENCH"] != nil))
struct URLSessionLatencyBenchmark {
    @Test("hit latency: URLSession with the shared cache vs a plain URLSession to the loopback origin")
    func hitLatency() async throws {
        let directory = TemporaryDirectory(prefix: "suc-us-bench")
        let body = String(repeating: "x", count: 1024)
        let origin = try LoopbackOrigin { _, _ in .init(headers: [("Cache-Control", "max-age=600")], body: body) }
        defer { origin.stop() }
        let cached = URLSessionConfiguration.default
        cached.useSharedURLCache(
            try SharedCache(
                memoryCapacity: 0, diskCapacity: 64 << 20,
                directory: URL(fileURLWithPath: directory.root + "/cache")))
        let cachingSession = URLSession(configuration: cached)
        let plain = URLSessionConfiguration.ephemeral
        plain.urlCache = nil
        plain.requestCachePolicy = .reloadIgnoringLocalCacheData
        let plainSession = URLSession(configuration: plain)
        let url = URL(string: origin.url + "/bench")!
        _ = try await cachingSession.data(from: url)
        let before = origin.requestCount

        func measure(_ session: URLSession) async throws -> (p50: Duration, p90: Duration) {
            for _ in 0..<20 { _ = try await session.data(from: url) }
            var samples: [Duration] = []
            let clock = ContinuousClock()
            for _ in 0..<200 {
                samples.append(
                    try await clock.measure {
                        let (data, _) = try await session.data(from: url)
                        precondition(data.count == 1024)
                    })
            }
            samples.sort()
            return (samples[100], samples[180])
        }
        let hit = try await measure(cachingSession)
        #expect(origin.requestCount == before, "every measured request was a hit")
        let direct = try await measure(plainSession)
        func µs(_ d: Duration) -> String {
            String(format: "%.1f µs", Double(d.components.attoseconds) / 1e12 + Double(d.components.seconds) * 1e6)
        }
        print(
            "URLSession-latency 1 KiB: shared-cache hit p50 \(µs(hit.p50)) p90 \(µs(hit.p90)); direct origin p50 \(µs(direct.p50)) p90 \(µs(direct.p90))"
        )
    }
}
