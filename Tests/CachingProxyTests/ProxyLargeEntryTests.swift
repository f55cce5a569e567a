import CachingProxy
import Foundation
import LoopbackOrigin
import Testing
import TestProcess

/// A proxy caches what the store takes (a 64 MiB body), not the library's
/// in-process default of 8 MiB, so a large download is fetched once.
@Suite(.blockingWaits, .timeLimit(.minutes(10)))
struct ProxyLargeEntryTests {
    static let nineMiB: [UInt8] = (0..<(9 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }

    @Test("the default entry size is the store's limit")
    func defaultLimit() {
        #expect(ProxyCacheSettings(directory: "/unused").maximumEntrySizeBytes >= 64 << 20)
    }

    @Test("a 9 MiB response is cached through the proxy by default")
    func nineMiBCached() async throws {
        let fixture = try await ProxyFixture.start { _, _ in
            var response = LoopbackOrigin.Response(status: 200, headers: [("Cache-Control", "max-age=600")])
            response.body = Self.nineMiB
            return response
        }
        let miss = try await fixture.send("GET", "/big")
        #expect(miss.body == Self.nineMiB && miss.cacheStatus == "MISS")
        // Its head went out before the body was stored: Cache-Status does not guess (RFC 9211 §2.5).
        #expect(miss.header("Cache-Status")?.contains(";stored") == false, "\(miss.headers)")
        let hit = try await fixture.send("GET", "/big")
        #expect(hit.cacheStatus == "HIT" && hit.body == Self.nineMiB)
        #expect(fixture.origin.requestCount == 1)
        try await fixture.stop()
    }
}
