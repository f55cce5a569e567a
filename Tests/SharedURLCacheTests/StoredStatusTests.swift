import CacheEntryFormat
import Foundation
import HTTPTypes
@testable import SharedURLCache
import SharedURLCacheStore
import Testing
import TestProcess

/// Every byte of a stored head comes from the directory, which any member of the cache's group can
/// write: a head whose status is not a three-digit code is a miss and a purge, never a trap in
/// `HTTPResponse.Status(code:)`.
@Suite(.blockingWaits, .timeLimit(.minutes(2)))
struct StoredStatusTests {
    @Test("a stored HTTP status outside 100...999 is a miss and is purged", arguments: [0, 42, 99, 1000, 65535])
    func statusOutsideTheHTTPRangeIsAMiss(code: Int) async throws {
        let h = try FlowHarness { _, n in .init(headers: [("Cache-Control", "max-age=600")], body: "n=\(n)") }
        _ = try await h.send()
        let key = try h.cache.engine.httpKey(url: "http://127.0.0.1:\(h.origin.port)/r").get()
        let store = try CacheStore(directory: h.directory.cache.path)
        let stored = try #require(try store.record(for: key))
        var head = try #require(ResponseHead(decoding: stored.head))
        head.statusCode = code
        // Another handle rewrites the record: the memory tier's copy is invalidated by its version.
        try store.store(
            RecordDescriptor(key: key, head: head.encoded(), appFlags: RecordKind.response.rawValue),
            body: stored.body ?? [])

        let again = try await h.send()
        #expect(again.cacheStatus == .miss)
        #expect(h.origin.requestCount == 2)
        #expect(h.cache.statistics.corruptPurges == 1)
        let refreshed = try #require(try store.record(for: key))
        #expect(ResponseHead(decoding: refreshed.head)?.statusCode == 200)
    }

    @Test func aPlainHeadKeepsAnyStatus() throws {
        let head = ResponseHead(
            kind: .plain, statusCode: 0, expectedContentLength: 0, url: "x", mimeType: nil, textEncodingName: nil,
            headerFields: [], varyRequestFields: [], exchange: nil)
        #expect(ResponseHead(decoding: head.encoded()) == head)
    }
}
