import Foundation
import HTTPTypes
import LoopbackOrigin
@testable import SharedURLCache
@_spi(Testing) import SharedURLCacheStore
import Testing
import TestProcess

/// RFC 9111 §4.3.4 without rewriting the body: a 304 stores the merged head as one index record
/// naming the body file already there.
@Suite(.blockingWaits, .timeLimit(.minutes(2)))
struct HTTPCachingFlowRefreshTests {
    /// The body file of the flow's entry for `/r`, with its inode and modification time.
    private func bodyFile(_ h: FlowHarness) throws -> (path: String, inode: UInt64, modified: Date) {
        let key = try h.cache.engine.httpKey(url: "http://127.0.0.1:\(h.origin.port)/r").get()
        let store = try CacheStore(directory: h.directory.cache.path)
        let relative = try #require(store.debugBodyPath(for: key))
        let attributes = try FileManager.default.attributesOfItem(atPath: h.directory.cache.path + "/" + relative)
        return (
            relative, (attributes[.systemFileNumber] as? NSNumber)?.uint64Value ?? 0,
            try #require(attributes[.modificationDate] as? Date)
        )
    }

    @Test("a 304 for a stored large body refreshes the head and leaves the body file as it was")
    func streamedBodyIsNotRewritten() async throws {
        let h = try FlowHarness(HTTPCachingFlowStreamingTests.revalidatedLargeBody)
        _ = try await h.stream().body.collect()
        let before = try bodyFile(h)
        h.advance(1)
        let revalidated = try await h.stream()
        #expect(revalidated.cacheStatus == .revalidated)
        #expect(try await revalidated.body.collect() == Data(HTTPCachingFlowStreamingTests.large.utf8))
        await revalidated.body.storeSettlement.wait()
        let after = try bodyFile(h)
        #expect(after.path == before.path && after.inode == before.inode && after.modified == before.modified)
        h.advance(1)
        let hit = try await h.stream()
        #expect(hit.cacheStatus == .hit, "the refreshed head (max-age=60) was stored")
        #expect(hit.response.headerFields[HTTPField.Name("X-Refreshed")!] == "yes")
        #expect(try await hit.body.collect() == Data(HTTPCachingFlowStreamingTests.large.utf8))
        #expect(h.origin.requestCount == 2)
    }

    @Test("a HEAD revalidated by a 304 refreshes the stored head without reading the body")
    func headRequestRefreshes() async throws {
        let h = try FlowHarness(HTTPCachingFlowStreamingTests.revalidatedLargeBody)
        _ = try await h.stream().body.collect()
        let before = try bodyFile(h)
        h.advance(1)
        let request = HTTPRequest(method: .head, scheme: "http", authority: "127.0.0.1:\(h.origin.port)", path: "/r")
        let revalidated = try await h.flow.streamingResponse(for: request, policy: .useProtocolCachePolicy) {
            request, body in
            let (response, data) = try await runBlocking { try LoopbackClient.send(request, body: body) }
            return (response, OriginBody(ChunkedBody(data: data, chunkBytes: 16 << 10, failAfter: nil)))
        }
        #expect(revalidated.cacheStatus == .revalidated)
        h.advance(1)
        let hit = try await h.stream()
        #expect(hit.cacheStatus == .hit)
        #expect(try await hit.body.collect() == Data(HTTPCachingFlowStreamingTests.large.utf8))
        let after = try bodyFile(h)
        #expect(after.path == before.path && after.inode == before.inode && after.modified == before.modified)
    }
}
