import AsyncHTTPClient
import Foundation
import HTTPTypes
import LoopbackOrigin
import NIOCore
import SharedURLCache
import SharedURLCacheAsyncHTTPClient
import Testing
import TestProcess

/// Resident memory of this process, from /proc/self/status (Linux).
enum MemoryProbe {
    static func field(_ name: String) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix(name + ":") {
            return (Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) * 1024
        }
        return 0
    }
    static var residentBytes: Int { field("VmRSS") }
    static var peakResidentBytes: Int { field("VmHWM") }
    /// Resets VmHWM to the current RSS (proc(5), /proc/pid/clear_refs "5").
    static func resetPeak() { try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8) }
    static func mib(_ bytes: Int) -> String { String(format: "%.1f MiB", Double(bytes) / 1_048_576) }
}

/// Large bodies through the client, streamed both ways: a 50 MiB miss and hit with resident
/// memory bounded, an origin that aborts mid-body, bodies past the cap, a damaged stored body.
/// Serialized; the memory figures are taken in a process of their own (``fiftyMiB()``).
@Suite(.blockingWaits, .serialized, .timeLimit(.minutes(5)))
final class AsyncHTTPClientLargeBodyTests {
    static let bodyBytes = 50 << 20
    /// Peak resident growth allowed while 50 MiB streams (the body is 50 MiB: holding it whole
    /// once would exceed this).
    static let growthBound = 32 << 20

    let root: String
    let origin: LoopbackOrigin

    init() throws {
        root = AHCTest.makeDirectory("suc-ahc-big")
        origin = try LoopbackOrigin { _, _ in
            .init(headers: [("Cache-Control", "max-age=600")], body: String(repeating: "x", count: 2 << 20))
        }
    }

    deinit {
        origin.stop()
        try? FileManager.default.removeItem(atPath: root)
    }

    /// Reads a body chunk by chunk, keeping none; returns its length and whether it is the pattern.
    static func stream(_ body: HTTPClientResponse.Body, expectedBytes: Int) async throws -> (bytes: Int, equal: Bool) {
        var verifier = PatternBody.Verifier(expectedBytes: expectedBytes)
        for try await chunk in body { verifier.check(chunk.readableBytesView) }
        return (verifier.offset, verifier.isComplete)
    }

    /// Reads a body until it ends or fails; returns the bytes read and the error.
    func streamUntilFailure(_ body: HTTPClientResponse.Body) async -> (bytes: Int, error: (any Error)?) {
        var bytes = 0
        do {
            for try await chunk in body { bytes += chunk.readableBytes }
        } catch {
            return (bytes, error)
        }
        return (bytes, nil)
    }

    /// Peak resident growth while `operation` runs (VmHWM reset first).
    func peakGrowth(_ operation: () async throws -> Void) async rethrows -> Int {
        MemoryProbe.resetPeak()
        let base = MemoryProbe.residentBytes
        try await operation()
        return MemoryProbe.peakResidentBytes - base
    }

    /// The smallest peak growth of up to `attempts` runs of `operation(attempt)`, stopping at the
    /// first under the bound: other suites run in this process at the same time, and one of
    /// them allocating during a window must not fail this test (a body held whole would exceed
    /// the bound every time).
    func boundedGrowth(attempts: Int = 3, _ operation: (Int) async throws -> Void) async rethrows -> Int {
        var smallest = Int.max
        for attempt in 0..<attempts {
            smallest = min(smallest, try await peakGrowth { try await operation(attempt) })
            if smallest < Self.growthBound { break }
        }
        return smallest
    }

    /// Set in the run of ``fiftyMiB()`` alone (see there).
    static let measuringAlone = "SUC_AHC_MEMORY_ALONE"

    /// Resident memory is a figure of the whole process, and in a parallel `swift test` seven
    /// other test cases allocate in this one meanwhile (the baseline, a plain AsyncHTTPClient
    /// GET, once grew 22 MiB of the 32 allowed): so the test runs again in a process of its own,
    /// which measures, and here it takes that run's verdict.
    @Test("a 50 MiB body streams through a miss and a hit with bounded resident memory")
    func fiftyMiB() async throws {
        guard ProcessInfo.processInfo.environment[Self.measuringAlone] != nil else {
            let alone = try await runBlocking {
                try runAlone("AsyncHTTPClientLargeBodyTests/fiftyMiB", settingVariable: Self.measuringAlone)
            }
            let figures = alone.out.split(separator: "\n").filter { $0.contains("AHC-50MiB") }
            #expect(alone.status == 0 && figures.count == 1, "alone: status \(alone.status)\n\(alone.out.suffix(3000))")
            print(figures.joined(separator: "\n"))
            return
        }
        let big = try StreamingOrigin(bigBytes: Self.bodyBytes)
        defer { big.stop() }
        let cache = try AHCTest.cache(root, memory: 1 << 20, disk: 512 << 20, maximumEntry: 64 << 20)
        let client = CachingHTTPClient(cache: cache, httpClient: AHCTest.httpClient)
        let url = big.url + "/big"

        // Baseline: the same body straight from the origin through AsyncHTTPClient.
        var directResult = (bytes: 0, equal: false)
        let directGrowth = try await peakGrowth {
            let direct = try await HTTPClient.shared.execute(
                HTTPClientRequest(url: big.url + "/big-direct"), timeout: .seconds(120))
            directResult = try await Self.stream(direct.body, expectedBytes: Self.bodyBytes)
        }
        #expect(directResult.equal)

        // Miss: streamed to the caller and into the store as it arrives (a new URL per attempt).
        var misses = 0
        let missGrowth = try await boundedGrowth { attempt in
            let miss = try await client.execute(
                HTTPClientRequest(url: url + "?miss=\(attempt)"), timeout: .seconds(120))
            #expect(miss.cacheStatus == .miss)
            let result = try await Self.stream(miss.body, expectedBytes: Self.bodyBytes)
            #expect(result.bytes == Self.bodyBytes && result.equal)
            misses += 1
        }

        // Hit: streamed from the store, no origin.
        let hitGrowth = try await boundedGrowth { _ in
            let hit = try await client.execute(HTTPClientRequest(url: url + "?miss=0"), timeout: .seconds(120))
            #expect(hit.cacheStatus == .hit)
            let result = try await Self.stream(hit.body, expectedBytes: Self.bodyBytes)
            #expect(result.bytes == Self.bodyBytes && result.equal)
        }
        #expect(big.requests("/big") == 1 + misses) // the direct one and the misses

        print(
            """
            AHC-50MiB peak RSS growth: direct AsyncHTTPClient (streamed, streaming origin in-process) \(MemoryProbe.mib(directGrowth)); \
            CachingHTTPClient miss \(MemoryProbe.mib(missGrowth)); hit \(MemoryProbe.mib(hitGrowth)); \
            RSS now \(MemoryProbe.mib(MemoryProbe.residentBytes))
            """)
        #expect(missGrowth < Self.growthBound, "miss peak RSS growth \(MemoryProbe.mib(missGrowth))")
        #expect(hitGrowth < Self.growthBound, "hit peak RSS growth \(MemoryProbe.mib(hitGrowth))")
    }

    /// A caching client on the test's directory whose cache keeps entries of up to 64 MiB, so the
    /// multi-MiB bodies of these tests are stored.
    func clientKeepingLargeEntries() throws -> CachingHTTPClient {
        CachingHTTPClient(cache: try AHCTest.cache(root, maximumEntry: 64 << 20), httpClient: AHCTest.httpClient)
    }

    @Test("an origin that aborts mid-body: the caller gets an error, nothing is stored")
    func originAborts() async throws {
        let origin = try StreamingOrigin(bigBytes: 4 << 20, abortAfterBytes: 1 << 20)
        defer { origin.stop() }
        let client = try clientKeepingLargeEntries()
        let url = origin.url + "/abort"

        let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(60))
        #expect(response.cacheStatus == .miss)
        let (bytes, error) = await streamUntilFailure(response.body)
        #expect(error != nil, "a body cut short must fail")
        #expect(bytes < 4 << 20)

        // Nothing partial is visible: an offline lookup misses, and the next request goes to the origin.
        await #expect(throws: HTTPCachingError.self) {
            _ = try await client.execute(
                HTTPClientRequest(url: url), timeout: .seconds(10), policy: .returnCacheDataDontLoad)
        }
        #expect(client.cache.statistics.stores == 0)
    }

    @Test(
        "a chunked body: under the caps it is stored and then served from the store; past maximumBodyBytes the caller gets all of it and nothing is stored",
        arguments: [nil, 1 << 20] as [Int?])
    func chunked(maximumBodyBytes: Int?) async throws {
        let origin = try StreamingOrigin(bigBytes: 0, chunkedBytes: 3 << 20)
        defer { origin.stop() }
        let cache = try AHCTest.cache(root, maximumEntry: 64 << 20)
        let client =
            try maximumBodyBytes.map {
                try CachingHTTPClient(
                    cache: cache, httpClient: AHCTest.httpClient, configuration: .init(maximumBodyBytes: $0))
            }
            ?? CachingHTTPClient(cache: cache, httpClient: AHCTest.httpClient)
        let stored = maximumBodyBytes == nil
        let url = origin.url + "/chunked"
        for round in 1...2 {
            let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(60))
            #expect(response.cacheStatus == (stored && round == 2 ? .hit : .miss))
            let result = try await Self.stream(response.body, expectedBytes: 3 << 20)
            #expect(result.bytes == 3 << 20 && result.equal)
            #expect(origin.requests("/chunked") == (stored ? 1 : round))
        }
        #expect(client.cache.statistics.stores == (stored ? 1 : 0))
    }

    @Test("a caller that stops reading a miss: nothing is stored")
    func callerStops() async throws {
        let origin = try StreamingOrigin(bigBytes: 8 << 20)
        defer { origin.stop() }
        let client = try clientKeepingLargeEntries()
        let url = origin.url + "/big-partial"
        do {
            let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(60))
            var bytes = 0
            for try await chunk in response.body {
                bytes += chunk.readableBytes
                if bytes >= 1 << 20 { break }
            }
        }
        await #expect(throws: HTTPCachingError.self) {
            _ = try await client.execute(
                HTTPClientRequest(url: url), timeout: .seconds(10), policy: .returnCacheDataDontLoad)
        }
        let again = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(60))
        #expect(again.cacheStatus == .miss)
        #expect(try await Self.stream(again.body, expectedBytes: 8 << 20).equal)
        #expect(origin.requests("/big-partial") == 2)
    }

    @Test("a damaged stored body fails the hit mid-stream and is purged; the next request is a miss")
    func tamperedStoredBody() async throws {
        let origin = try StreamingOrigin(bigBytes: 3 << 20)
        defer { origin.stop() }
        let client = try clientKeepingLargeEntries()
        let url = origin.url + "/big-tampered"
        let miss = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(60))
        #expect(try await Self.stream(miss.body, expectedBytes: 3 << 20).equal)

        // Given: one byte of the stored (compressed) body flipped, in the middle of the file.
        let file = try #require(Self.largestBodyFile(under: root + "/cache/bodies"))
        let handle = try #require(FileHandle(forUpdatingAtPath: file))
        let size = try handle.seekToEnd()
        try handle.seek(toOffset: size / 2)
        let byte = try #require(try handle.read(upToCount: 1)).first!
        try handle.seek(toOffset: size / 2)
        try handle.write(contentsOf: [byte ^ 0x20])
        try handle.close()

        // When: it is served.
        let hit = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(60))
        #expect(hit.cacheStatus == .hit)
        let (bytes, error) = await streamUntilFailure(hit.body)

        // Then: the read fails before the body ends, and the entry is gone.
        #expect(error != nil, "a damaged body must not end normally")
        #expect(bytes < 3 << 20)
        let again = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(60))
        #expect(again.cacheStatus == .miss)
        #expect(try await Self.stream(again.body, expectedBytes: 3 << 20).equal)
        #expect(origin.requests("/big-tampered") == 2)
        #expect(client.cache.statistics.corruptPurges >= 1)
    }

    @Test(
        "collapsing with streamed bodies: followers wait for the leader's entry and stream it from the store",
        arguments: [false, true])
    func collapsedStreams(pastTheCap: Bool) async throws {
        let origin = try StreamingOrigin(bigBytes: 3 << 20)
        defer { origin.stop() }
        let client = try CachingHTTPClient(
            cache: try AHCTest.cache(root, maximumEntry: 64 << 20),
            configuration: .init(maximumBodyBytes: pastTheCap ? 1 << 20 : 64 << 20))
        let url = origin.url + "/big-collapsed"
        let results = try await withThrowingTaskGroup(of: (CacheStatus, Bool).self) { group in
            for _ in 0..<5 {
                group.addTask {
                    let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(60))
                    return (response.cacheStatus, try await Self.stream(response.body, expectedBytes: 3 << 20).equal)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.allSatisfy { $0.1 }, "every caller got the whole body")
        if pastTheCap {
            // Nothing was stored, so every follower went to the origin after the leader.
            #expect(origin.requests("/big-collapsed") == 5)
            #expect(client.cache.statistics.stores == 0)
        } else {
            #expect(origin.requests("/big-collapsed") == 1)
            #expect(results.filter { $0.0 == .hit }.count == 4)
        }
    }

    static func largestBodyFile(under directory: String) -> String? {
        guard let walker = FileManager.default.enumerator(atPath: directory) else { return nil }
        var best: (path: String, size: Int)?
        for case let relative as String in walker {
            let path = directory + "/" + relative
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
                attributes[.type] as? FileAttributeType == .typeRegular,
                let size = attributes[.size] as? Int
            else { continue }
            if size > (best?.size ?? -1) { best = (path, size) }
        }
        return best?.path
    }

    @Test("past maximumBodyBytes with a Content-Length: streamed to the caller, not stored")
    func pastTheCap() async throws {
        let client = try CachingHTTPClient(
            cache: try AHCTest.cache(root), configuration: .init(maximumBodyBytes: 1 << 20))
        for _ in 0..<2 {
            let answer = try await AHCTest.get(client, origin.url + "/two")
            #expect(answer.body.count == 2 << 20 && answer.response.cacheStatus == .miss)
        }
        #expect(origin.requestCount == 2)
    }
}

/// Hit latency through the client against a direct origin request (medians of 200 each).
/// Opt-in (`SUC_AHC_BENCH=1`): a measurement, not a check.
@Suite(.blockingWaits, .serialized, .enabled(if: ProcessInfo.processInfo.environment["SUC_AHC_BENCH"] != nil))
struct AsyncHTTPClientLatencyBenchmark {
    @Test("hit latency: CachingHTTPClient hit vs AsyncHTTPClient to the loopback origin")
    func hitLatency() async throws {
        let root = AHCTest.makeDirectory("suc-ahc-bench")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let body = String(repeating: "x", count: 1024)
        let origin = try LoopbackOrigin { _, _ in .init(headers: [("Cache-Control", "max-age=600")], body: body) }
        defer { origin.stop() }
        let client = CachingHTTPClient(cache: try AHCTest.cache(root), httpClient: AHCTest.httpClient)
        let url = origin.url + "/bench"
        _ = try await AHCTest.get(client, url)

        func measure(_ n: Int, _ operation: () async throws -> Void) async throws -> (p50: Duration, p90: Duration) {
            for _ in 0..<20 { try await operation() }
            var samples: [Duration] = []
            let clock = ContinuousClock()
            for _ in 0..<n { samples.append(try await clock.measure { try await operation() }) }
            samples.sort()
            return (samples[n / 2], samples[n * 9 / 10])
        }
        let hit = try await measure(200) {
            let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(10))
            precondition(response.cacheStatus == .hit)
            _ = try await response.body.collect(upTo: 1 << 20)
        }
        // The flow alone (no AsyncHTTPClient types, no chunking): what the client adds on top.
        let head = HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:\(origin.port)", path: "/bench")
        let flowHit = try await measure(200) {
            let answer = try await client.flow.response(for: head, body: nil) { _, _ in throw CancellationError() }
            precondition(answer.cacheStatus == .hit && answer.body.count == 1024)
        }
        let direct = try await measure(200) {
            let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: url), timeout: .seconds(10))
            _ = try await response.body.collect(upTo: 1 << 20)
        }
        func µs(_ d: Duration) -> String {
            String(format: "%.1f µs", Double(d.components.attoseconds) / 1e12 + Double(d.components.seconds) * 1e6)
        }
        print(
            "AHC-latency 1 KiB: CachingHTTPClient hit p50 \(µs(hit.p50)) p90 \(µs(hit.p90)); HTTPCachingFlow hit p50 \(µs(flowHit.p50)); direct origin p50 \(µs(direct.p50)) p90 \(µs(direct.p90))"
        )
    }
}
