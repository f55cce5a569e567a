import Foundation
@testable import SharedURLCache
import SharedURLCacheStore
import Testing
import TestProcess

/// The disk figures an operator compares with `du`: `currentDiskUsage` and `statistics` report
/// what the directory takes, counted independently here as `du -s --block-size=1` does
/// (`allocatedBytes(under:)`: st_blocks × 512 of every file and directory, the root included).
@Suite("Disk usage as du counts it", .blockingWaits, .timeLimit(.minutes(5)))
struct DiskUsageTests {
    /// The cheap figure estimates directories and leftovers (documented); the rest is exact.
    static func withinEstimate(_ reported: Int, _ du: Int) -> Bool {
        abs(reported - du) <= du / 20 + (64 << 10)
    }

    @Test func reportedUsageMatchesDuForInlineAndFileBodies() throws {
        // Given: small bodies kept inline in the index and large incompressible ones in files
        let directory = TestDirectory()
        let cache = try directory.makeCache(memory: 0)
        let store = try #require(cache.engine.store)
        for n in 0..<30 { cache.put("https://api.example.com/small/\(n)", "small \(n)") }
        for n in 0..<12 {
            cache.put(
                "https://api.example.com/large/\(n)", data: randomData(size: 100_000 + n * 3_000, seed: UInt64(n)))
        }
        #expect(
            try store.record(for: cache.storeKey("https://api.example.com/small/0"), includeBody: false)?.isInline
                == true)
        #expect(
            try store.record(for: cache.storeKey("https://api.example.com/large/0"), includeBody: false)?.isInline
                == false)

        // Then: the cheap figures are within the estimate of du
        let du = allocatedBytes(under: directory.cache.path)
        let current = cache.currentDiskUsage
        let statistics = cache.statistics
        #expect(Self.withinEstimate(current, du), "currentDiskUsage \(current), du \(du)")
        #expect(Self.withinEstimate(statistics.diskBytes, du), "statistics.diskBytes \(statistics.diskBytes), du \(du)")
        #expect(statistics.diskEntryBytes > 12 * 100_000 && statistics.diskEntryBytes < statistics.diskBytes)

        // And: the measured figure is du, exactly
        let measured = try store.diskUsage(measure: true)
        #expect(measured.measured)
        #expect(measured.totalBytes == allocatedBytes(under: directory.cache.path))
        #expect(measured.entryBytes == statistics.diskEntryBytes)
    }

    @Test func measuredUsageCountsLeftoversToo() throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache()
        let store = try #require(cache.engine.store)
        cache.put("https://api.example.com/a", data: randomData(size: 50_000, seed: 1))
        // A killed writer's temp file and a stray file at the root: du counts them, so must we.
        try Data(count: 40_000).write(
            to: directory.cache.appendingPathComponent("tmp/t0123456789abcdef0123456789abcdef"))
        try Data(count: 30_000).write(to: directory.cache.appendingPathComponent("stray"))

        let measured = try store.diskUsage(measure: true)

        #expect(measured.totalBytes == allocatedBytes(under: directory.cache.path))
        #expect(measured.leftoverFiles == 2)
        #expect(measured.leftoverBytes >= 70_000)
    }
}
