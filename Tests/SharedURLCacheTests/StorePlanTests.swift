import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPTypes
@testable import SharedURLCache
import Testing

/// Every store path takes its store time from the configured clock, not the wall clock: the
/// URLCache store, the flow's whole-body store and its streamed store.
@Suite(.blockingWaits, .timeLimit(.minutes(5)))
struct StorePlanTests {
    /// Far from any wall clock a test runs under, so a store time read from the wall clock shows.
    static let farFuture = Date(timeIntervalSince1970: 4_000_000_000.25)

    /// The store time of the entry for the GET of `url`: as the memory tier of `cache` holds it,
    /// and as the directory's record holds it (read by a cache without a memory tier).
    static func storedAt(_ url: String, in cache: SharedCache, directory: TestDirectory) throws -> [Date?] {
        let reader = try directory.makeCache(memory: 0)
        return [cache, reader].map { cache in
            guard case .success(let key) = cache.engine.httpKey(url: url) else { return nil }
            return cache.engine.find(LookupKey(key: key, requestFields: HTTPFields()))?.entry.storedAt
        }
    }

    @Test("the URLCache store takes storedAt from SharedCacheConfiguration.now")
    func urlCacheStore() throws {
        let directory = TestDirectory()
        var configuration = SharedCacheConfiguration(directory: directory.cache)
        configuration.now = { Self.farFuture }
        let cache = try SharedCache(configuration: configuration)
        let url = "https://example.com/plan"
        cache.put(url, "{}")
        #expect(try Self.storedAt(url, in: cache, directory: directory) == [Self.farFuture, Self.farFuture])
    }

    @Test("the flow's whole-body store takes storedAt from its clock")
    func wholeStore() async throws {
        let h = try FlowHarness(configure: { $0.now = { Self.farFuture } }) { _, _ in
            .init(headers: [("Cache-Control", "max-age=60")], body: "whole")
        }
        _ = try await h.send()
        let url = "http://127.0.0.1:\(h.origin.port)/r"
        #expect(try Self.storedAt(url, in: h.cache, directory: h.directory) == [Self.farFuture, Self.farFuture])
    }

    @Test("the flow's streamed store takes storedAt from its clock")
    func streamedStore() async throws {
        let h = try FlowHarness(configure: { $0.now = { Self.farFuture } }) { _, _ in
            .init(headers: [("Cache-Control", "max-age=60")], body: "streamed")
        }
        let miss = try await h.stream()
        _ = try await miss.body.collect()
        await miss.body.storeSettlement.wait()
        let url = "http://127.0.0.1:\(h.origin.port)/r"
        #expect(try Self.storedAt(url, in: h.cache, directory: h.directory) == [Self.farFuture, Self.farFuture])
    }
}
