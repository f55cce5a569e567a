import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPCacheSemantics
import HTTPTypes
import LoopbackOrigin
@testable import SharedURLCache
import Testing
import TestProcess

/// An origin body delivered in chunks, optionally failing after `failAfter` chunks.
struct ChunkedBody: AsyncSequence, Sendable {
    typealias Element = Data
    struct OriginFailure: Error {}
    let data: Data
    let chunkBytes: Int
    var failAfter: Int?

    struct AsyncIterator: AsyncIteratorProtocol {
        let body: ChunkedBody
        var offset = 0
        var chunks = 0
        mutating func next() async throws -> Data? {
            if let limit = body.failAfter, chunks >= limit { throw OriginFailure() }
            guard offset < body.data.count else { return nil }
            let end = Swift.min(offset + body.chunkBytes, body.data.count)
            defer { offset = end; chunks += 1 }
            return Data(body.data[offset..<end])
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(body: self) }
}

extension FlowHarness {
    /// The streaming flow, with the loopback origin's body handed over in 16 KiB chunks.
    func stream(
        _ path: String = "/r", headers: [String: String] = [:], policy: RequestCachePolicy = .useProtocolCachePolicy,
        maximumStoredBodyBytes: Int = .max, failAfterChunks: Int? = nil
    ) async throws -> CachedHTTPStreamingResponse {
        var fields = HTTPFields()
        for (name, value) in headers { fields[HTTPField.Name(name)!] = value }
        let request = HTTPRequest(
            method: .get, scheme: "http", authority: "127.0.0.1:\(origin.port)", path: path, headerFields: fields)
        return try await flow.streamingResponse(
            for: request, policy: policy, maximumStoredBodyBytes: maximumStoredBodyBytes
        ) { request, body in
            let (response, data) = try await runBlocking { try LoopbackClient.send(request, body: body) }
            return (response, OriginBody(ChunkedBody(data: data, chunkBytes: 16 << 10, failAfter: failAfterChunks)))
        }
    }
}

/// The streaming variant of the flow: tee on a miss, store readers on a hit, the same decisions.
@Suite(.blockingWaits, .timeLimit(.minutes(5)))
struct HTTPCachingFlowStreamingTests {
    /// Larger than `CacheEngine.streamedHitBytes`, so hits stream from the store; not so
    /// repetitive that a flipped bit in its zlib stream could leave the output unchanged.
    static let large = (0..<60_000).map { String(($0 &* 2_654_435_761) % 1_000_003) }.joined(separator: ",")

    @Test("a miss is stored only once its last chunk is read; the hit streams from the store")
    func teeThenStoredHit() async throws {
        let h = try FlowHarness { _, _ in .init(headers: [("Cache-Control", "max-age=60")], body: Self.large) }
        let miss = try await h.stream()
        #expect(miss.cacheStatus == .miss)
        #expect(miss.body.knownLength == nil)
        #expect(h.cache.statistics.stores == 0, "nothing is visible before the body was read")
        #expect(try await miss.body.collect() == Data(Self.large.utf8))
        await miss.body.storeSettlement.wait()
        #expect(h.cache.statistics.stores == 1)

        let hit = try await h.stream()
        #expect(hit.cacheStatus == .hit)
        #expect(hit.body.knownLength == Self.large.utf8.count, "a stored body of known length")
        #expect(try await hit.body.collect() == Data(Self.large.utf8))
        // The buffered API reads the same entry.
        let buffered = try await h.send()
        #expect(buffered.cacheStatus == .hit && buffered.body == Data(Self.large.utf8))
        #expect(h.origin.requestCount == 1)
    }

    @Test("a caller that stops reading stores nothing")
    func stopReading() async throws {
        let h = try FlowHarness { _, _ in .init(headers: [("Cache-Control", "max-age=60")], body: Self.large) }
        do {
            let miss = try await h.stream()
            var iterator = miss.body.makeAsyncIterator()
            _ = try await iterator.next()
        }
        #expect(h.cache.statistics.stores == 0)
        let again = try await h.stream()
        #expect(again.cacheStatus == .miss)
        _ = try await again.body.collect()
        #expect(h.origin.requestCount == 2)
    }

    @Test("an origin failing mid-body fails the caller's read and stores nothing")
    func originFails() async throws {
        let h = try FlowHarness { _, _ in .init(headers: [("Cache-Control", "max-age=60")], body: Self.large) }
        let miss = try await h.stream(failAfterChunks: 3)
        await #expect(throws: ChunkedBody.OriginFailure.self) { _ = try await miss.body.collect() }
        await miss.body.storeSettlement.wait()
        #expect(h.cache.statistics.stores == 0)
        await #expect(throws: HTTPCachingError.self) { _ = try await h.stream(policy: .returnCacheDataDontLoad) }
    }

    @Test("a body past maximumStoredBodyBytes reaches the caller whole and is not stored")
    func pastTheCap() async throws {
        let h = try FlowHarness { _, _ in .init(headers: [("Cache-Control", "max-age=60")], body: Self.large) }
        let miss = try await h.stream(maximumStoredBodyBytes: 100_000)
        #expect(try await miss.body.collect() == Data(Self.large.utf8))
        #expect(h.cache.statistics.stores == 0)
        #expect(h.cache.statistics.refusals >= 1)
        let again = try await h.stream()
        #expect(again.cacheStatus == .miss)
    }

    @Test("a small streamed miss is kept in the memory tier")
    func smallBodyInMemory() async throws {
        let h = try FlowHarness { _, _ in .init(headers: [("Cache-Control", "max-age=60")], body: "small body") }
        _ = try await h.stream().body.collect()
        let hit = try await h.stream()
        #expect(hit.cacheStatus == .hit)
        #expect(try await hit.body.collect() == Data("small body".utf8))
        #expect(h.cache.statistics.memoryHits == 1)
    }

    /// An origin whose large body is stale at once and refreshed by a 304 to `If-None-Match: "v1"`.
    static func revalidatedLargeBody(_ request: LoopbackOrigin.Request, _ index: Int) -> LoopbackOrigin.Response {
        if request.header("If-None-Match") == "\"v1\"" {
            return .init(
                status: 304, headers: [("ETag", "\"v1\""), ("Cache-Control", "max-age=60"), ("X-Refreshed", "yes")])
        }
        return .init(headers: [("ETag", "\"v1\""), ("Cache-Control", "max-age=0")], body: large)
    }

    @Test("validation-etag with a streamed body: a 304 refreshes the head; the body is copied as it is read (§4.3.4)")
    func revalidateStoredBody() async throws {
        let h = try FlowHarness(Self.revalidatedLargeBody)
        _ = try await h.stream().body.collect()
        h.advance(1)
        let revalidated = try await h.stream()
        #expect(revalidated.cacheStatus == .revalidated)
        #expect(revalidated.response.headerFields[HTTPField.Name("X-Refreshed")!] == "yes")
        #expect(try await revalidated.body.collect() == Data(Self.large.utf8))
        await revalidated.body.storeSettlement.wait()
        h.advance(1)
        let hit = try await h.stream()
        #expect(hit.cacheStatus == .hit, "the refreshed head (max-age=60) was stored")
        #expect(hit.response.headerFields[HTTPField.Name("X-Refreshed")!] == "yes")
        #expect(try await hit.body.collect() == Data(Self.large.utf8))
        #expect(h.origin.requestCount == 2)
    }

    @Test(
        "a client's matching If-None-Match on a revalidated large entry gets 304, and the refreshed head is still stored"
    )
    func clientConditionalAfterRevalidation() async throws {
        let h = try FlowHarness(Self.revalidatedLargeBody)
        _ = try await h.stream().body.collect()
        h.advance(1)
        let notModified = try await h.stream(headers: ["If-None-Match": "\"v1\""])
        #expect(notModified.response.status == .notModified && notModified.cacheStatus == .revalidated)
        #expect(try await notModified.body.collect().isEmpty)
        // The head is refreshed by copying the stored body in the background: wait for it.
        let url = "http://127.0.0.1:\(h.origin.port)/r"
        let refreshed = await eventually {
            let stored = h.cache.engine.httpLookup(
                url: url, requestFields: HTTPFields(), policy: CachePolicyConfiguration(), delivery: .streamingLarge,
                counting: .deferred)?.stored
            return stored?.headerFields[HTTPField.Name("X-Refreshed")!] == "yes"
        }
        #expect(refreshed, "the refreshed head (max-age=60) was stored")
        let hit = try await h.stream()
        #expect(hit.cacheStatus == .hit && hit.response.status == .ok)
        #expect(try await hit.body.collect() == Data(Self.large.utf8))
        #expect(h.origin.requestCount == 2)
    }

    @Test("willCacheResponse sees the whole streamed body and what it returns is stored")
    func hookSeesWholeBody() async throws {
        let h = try FlowHarness(configure: { configuration in
            configuration.willCacheResponse = { proposal in
                var modified = proposal
                modified.body = Data("hooked \(proposal.body.count)".utf8)
                return modified
            }
        }) { _, _ in .init(headers: [("Cache-Control", "max-age=60")], body: Self.large) }
        let miss = try await h.stream()
        #expect(try await miss.body.collect() == Data(Self.large.utf8))
        await miss.body.storeSettlement.wait()
        let hit = try await h.stream()
        #expect(try await hit.body.collect() == Data("hooked \(Self.large.utf8.count)".utf8))
    }

    @Test("a damaged stored body fails the streamed hit and is purged; the next lookup misses")
    func damagedStoredBody() async throws {
        let h = try FlowHarness { _, _ in .init(headers: [("Cache-Control", "max-age=60")], body: Self.large) }
        _ = try await h.stream().body.collect()
        // Flip a byte in the middle of the only body file.
        let bodies = h.directory.root + "/cache/bodies"
        let walker = try #require(FileManager.default.enumerator(atPath: bodies))
        var file: String?
        for case let relative as String in walker where relative.count > 3 { file = bodies + "/" + relative }
        let path = try #require(file)
        var bytes = try #require(FileManager.default.contents(atPath: path))
        bytes[bytes.count / 2] ^= 0x08
        try bytes.write(to: URL(fileURLWithPath: path))

        let hit = try await h.stream()
        #expect(hit.cacheStatus == .hit)
        await #expect(throws: (any Error).self) { _ = try await hit.body.collect() }
        #expect(h.cache.statistics.corruptPurges >= 1)
        let again = try await h.stream()
        #expect(again.cacheStatus == .miss)
        #expect(try await again.body.collect() == Data(Self.large.utf8))
    }
}
