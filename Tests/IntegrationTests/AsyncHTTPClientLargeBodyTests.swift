import AsyncHTTPClient
import Foundation
import HTTPTypes
import LoopbackOrigin
import NIOCore
import SharedURLCache
import SharedURLCacheAsyncHTTPClient
import Testing

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

/// A 50 MiB body through the client, and a body past the cap. Serialized (memory figures);
/// run alone for clean figures: `swift test --filter AsyncHTTPClientLargeBodyTests`.
@Suite(.serialized, .timeLimit(.minutes(5)))
final class AsyncHTTPClientLargeBodyTests {
    static let bodyBytes = 50 << 20
    /// 50 MiB of a repeating pattern with a position marker every 64 bytes, so a shifted or
    /// truncated chunk is caught.
    static let bigBody: String = {
        var text = ""
        text.reserveCapacity(bodyBytes)
        var i = 0
        while text.utf8.count < bodyBytes {
            let marker = String(i, radix: 16)
            text += marker + String(repeating: ".", count: 63 - marker.utf8.count) + "\n"
            i += 1
        }
        return text
    }()
    static let bigBodyData = Data(bigBody.utf8)

    let root: String
    let origin: LoopbackOrigin

    init() throws {
        _ = Self.bigBodyData // built before any baseline is taken
        root = AHCTest.makeDirectory("suc-ahc-big")
        origin = try LoopbackOrigin { request, _ in
            if request.target.hasPrefix("/two") { return .init(headers: [("Cache-Control", "max-age=600")], body: String(repeating: "x", count: 2 << 20)) }
            return .init(headers: [("Cache-Control", "max-age=600")], body: AsyncHTTPClientLargeBodyTests.bigBody)
        }
    }

    deinit {
        origin.stop()
        try? FileManager.default.removeItem(atPath: root)
    }

    /// Reads a body chunk by chunk, keeping none; returns its length and whether it equals `expected`.
    func stream(_ response: HTTPClientResponse.Body, expected: Data) async throws -> (bytes: Int, equal: Bool) {
        var offset = 0
        var equal = true
        for try await chunk in response {
            let view = chunk.readableBytesView
            if equal {
                equal = offset + view.count <= expected.count && expected[offset..<(offset + view.count)] == Data(view)
            }
            offset += view.count
        }
        return (offset, equal && offset == expected.count)
    }

    @Test("a 50 MiB body round-trips (miss, then hit); resident memory growth is measured and printed")
    func fiftyMiB() async throws {
        let cache = try AHCTest.cache(root, memory: 1 << 20, disk: 512 << 20, maximumEntry: 64 << 20)
        let client = CachingHTTPClient(cache: cache)
        let url = origin.url + "/big"

        // Baseline: the same body straight from the origin through AsyncHTTPClient, streamed.
        MemoryProbe.resetPeak()
        var base = MemoryProbe.residentBytes
        let direct = try await HTTPClient.shared.execute(HTTPClientRequest(url: origin.url + "/direct"), timeout: .seconds(60))
        let directResult = try await stream(direct.body, expected: Self.bigBodyData)
        let directGrowth = MemoryProbe.peakResidentBytes - base
        #expect(directResult.equal)

        // Miss: the client collects, stores and hands out the body.
        MemoryProbe.resetPeak()
        base = MemoryProbe.residentBytes
        let miss = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(60))
        #expect(miss.cacheStatus == .miss)
        let missResult = try await stream(miss.body, expected: Self.bigBodyData)
        let missGrowth = MemoryProbe.peakResidentBytes - base
        #expect(missResult.bytes == Self.bodyBytes && missResult.equal)

        // Hit: from the store, no origin.
        MemoryProbe.resetPeak()
        base = MemoryProbe.residentBytes
        let hit = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(60))
        #expect(hit.cacheStatus == .hit)
        let hitResult = try await stream(hit.body, expected: Self.bigBodyData)
        let hitGrowth = MemoryProbe.peakResidentBytes - base
        #expect(hitResult.bytes == Self.bodyBytes && hitResult.equal)
        #expect(origin.requestCount == 2)

        print("""
            AHC-50MiB peak RSS growth: direct AsyncHTTPClient (streamed, origin in-process) \(MemoryProbe.mib(directGrowth)); \
            CachingHTTPClient miss \(MemoryProbe.mib(missGrowth)); hit \(MemoryProbe.mib(hitGrowth)); \
            RSS now \(MemoryProbe.mib(MemoryProbe.residentBytes))
            """)
    }

    @Test("past maximumBodyBytes with a Content-Length: streamed to the caller unbuffered, not stored")
    func pastTheCap() async throws {
        let client = try CachingHTTPClient(cache: try AHCTest.cache(root), configuration: .init(maximumBodyBytes: 1 << 20))
        for _ in 0..<2 {
            let answer = try await AHCTest.get(client, origin.url + "/two")
            #expect(answer.body.count == 2 << 20 && answer.response.cacheStatus == .miss)
        }
        #expect(origin.requestCount == 2)
    }
}

/// Hit latency through the client against a direct origin request (medians of 200 each).
/// Opt-in (`SUC_AHC_BENCH=1`): a measurement, not a check.
@Suite(.serialized, .enabled(if: ProcessInfo.processInfo.environment["SUC_AHC_BENCH"] != nil))
struct AsyncHTTPClientLatencyBenchmark {
    @Test("hit latency: CachingHTTPClient hit vs AsyncHTTPClient to the loopback origin")
    func hitLatency() async throws {
        let root = AHCTest.makeDirectory("suc-ahc-bench")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let body = String(repeating: "x", count: 1024)
        let origin = try LoopbackOrigin { _, _ in .init(headers: [("Cache-Control", "max-age=600")], body: body) }
        defer { origin.stop() }
        let client = CachingHTTPClient(cache: try AHCTest.cache(root))
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
        func µs(_ d: Duration) -> String { String(format: "%.1f µs", Double(d.components.attoseconds) / 1e12 + Double(d.components.seconds) * 1e6) }
        print("AHC-latency 1 KiB: CachingHTTPClient hit p50 \(µs(hit.p50)) p90 \(µs(hit.p90)); HTTPCachingFlow hit p50 \(µs(flowHit.p50)); direct origin p50 \(µs(direct.p50)) p90 \(µs(direct.p90))")
    }
}
