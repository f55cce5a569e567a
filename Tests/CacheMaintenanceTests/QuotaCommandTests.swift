import CacheMaintenance
import Foundation
import SharedURLCacheStore
import Testing
import TestProcess
@testable import urlcache

/// `urlcache quota` and what `urlcache stats` says about quotas (docs/Capacity.md, partition quotas).
@Suite(.blockingWaits, .timeLimit(.minutes(3)))
struct QuotaCommandTests {
    static func run(_ arguments: [String]) throws -> ChildProcess.Outcome {
        let urlcache = builtExecutable("urlcache")
        try #require(FileManager.default.isExecutableFile(atPath: urlcache.path), "build urlcache first")
        return try ChildProcess(urlcache, arguments).finish()
    }

    @Test("quota sets, evicts down to it and is listed by stats (text, JSON, Prometheus); --remove ends it")
    func setListRemove() throws {
        let dir = TestDirectory()
        do {
            let store = try CacheStore(directory: dir.cache)
            for i in 0..<30 {
                for partition in ["images", "api"] {
                    try store.store(
                        RecordDescriptor(key: bytes("\(partition)/\(i)"), partition: bytes(partition)),
                        body: randomBody(size: 3_000, seed: UInt64(i)))
                }
            }
        }
        let set = try Self.run(["quota", dir.cache, "--partition", "images", "--max-size", "40KiB", "--json"])
        #expect(set.status == 0, "\(set.err)")
        let summary = try ReportEncoding.decode(QuotaSummary.self, from: set.out)
        #expect(
            summary.maxBytes == 40 << 10 && summary.report.indexedEntries == 30 && summary.report.evictedEntries > 0)

        let report = try CacheMaintainer(directory: dir.cache).statistics(measure: false)
        let images = try #require(report.partitions.first { $0.name == "images" })
        #expect(images.quotaBytes == 40 << 10 && images.diskBytes <= 40 << 10, "\(images)")
        #expect(report.partitions.first { $0.name == "api" }?.entries == 30, "the other partition is untouched")
        let text = try Self.run(["stats", dir.cache, "--counters-only"])
        #expect(text.status == 0 && text.out.contains("QUOTA") && text.out.contains("40.00 KiB"), "\(text.out)")
        let json = try Self.run(["stats", dir.cache, "--counters-only", "--json"])
        #expect(
            json.out.contains("\"quota_bytes\" : 40960") || json.out.contains("\"quota_bytes\":40960"), "\(json.out)")
        let prometheus = try Self.run(["stats", dir.cache, "--counters-only", "--prometheus"])
        #expect(prometheus.out.contains("urlcache_partition_quota_bytes{"), "\(prometheus.out)")
        #expect(prometheus.out.contains("partition=\"images\"} 40960"), "\(prometheus.out)")

        let removed = try Self.run(["quota", dir.cache, "--partition", "images", "--remove"])
        #expect(removed.status == 0 && removed.out.contains("removed"), "\(removed)")
        let after = try CacheMaintainer(directory: dir.cache).statistics(measure: false)
        #expect(after.partitions.first { $0.name == "images" }?.quotaBytes == nil)
    }

    @Test("bad input: a negative or relative size, no size, an unknown partition")
    func badInput() throws {
        let dir = TestDirectory()
        do {
            let store = try CacheStore(directory: dir.cache)
            try store.store(RecordDescriptor(key: bytes("k"), partition: bytes("a")), body: bytes("x"))
        }
        for size in ["-5", "50%", "0", "lots"] {
            let result = try Self.run(["quota", dir.cache, "--partition", "a", "--max-size", size])
            #expect(result.status == 2, "\(size): \(result)")
        }
        #expect(try Self.run(["quota", dir.cache, "--partition", "a"]).status == 2, "--max-size or --remove")
        #expect(try Self.run(["quota", dir.cache, "--partition", "a", "--max-size", "1M", "--remove"]).status == 2)
        let unknown = try Self.run(["quota", dir.cache, "--partition", "nobody", "--max-size", "1MiB"])
        #expect(unknown.status == 3 && unknown.err.contains("no entries in partition 'nobody'"), "\(unknown)")
        let created = try Self.run([
            "quota", dir.cache, "--partition", "nobody", "--max-size", "1MiB", "--new-partition",
        ])
        #expect(created.status == 0, "\(created)")
        #expect(
            try Self.run(["quota", dir.cache, "--partition", "hex:zz", "--max-size", "1MiB"]).status == 2,
            "a malformed hex: name")
    }
}
