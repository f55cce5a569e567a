import CacheMaintenance
import Foundation
import SharedURLCacheStore
import Testing
import TestProcess

/// `urlcache stats --prometheus`, a textfile for node_exporter.
@Suite(.blockingWaits, .timeLimit(.minutes(3)))
struct PrometheusOutputTests {
    /// The value of the sample whose line starts with `series` followed by a space, or nil.
    static func sample(_ text: String, _ series: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(series + " ") }.flatMap { Double($0.split(separator: " ")[1]) }
    }

    @Test("the directory's counters, disk parts and partitions in Prometheus text; --output replaces a file whole")
    func statsPrometheus() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        for i in 0..<30 {
            let partition = i < 20 ? "api" : "images"
            try store.store(
                RecordDescriptor(
                    key: try StoredKey.encode(partition: partition, method: "GET", url: "https://a.test/\(i)"),
                    partition: bytes(partition)),
                body: bytes(String(repeating: "y", count: 100 + i)))
        }
        let report = try CacheMaintainer(store: store).statistics()
        let text = report.prometheusText()
        let directory = "directory=\"\(report.directory)\""
        #expect(Self.sample(text, "urlcache_stores_total{\(directory)}") == 30, "\(text)")
        #expect(Self.sample(text, "urlcache_entries{\(directory)}") == 30)
        #expect(Self.sample(text, "urlcache_body_bytes{\(directory)}") == Double(report.bodyBytes))
        #expect(text.contains("# TYPE urlcache_stores_total counter"))
        #expect(text.contains("# TYPE urlcache_entries gauge"))
        // The disk parts add up to what du counts.
        let parts = ["index", "body_files", "leftovers", "overhead"].compactMap {
            Self.sample(text, "urlcache_disk_bytes{\(directory),part=\"\($0)\"}")
        }
        #expect(parts.count == 4 && Int(parts.reduce(0, +)) == report.diskBytes, "\(text)")
        #expect(Self.sample(text, "urlcache_partition_entries{\(directory),partition=\"api\"}") == 20)
        #expect(Self.sample(text, "urlcache_partition_entries{\(directory),partition=\"images\"}") == 10)

        let urlcache = ChildProcess.builtExecutable("urlcache")
        try #require(FileManager.default.isExecutableFile(atPath: urlcache.path), "build urlcache first")
        let printed = try ChildProcess(urlcache, ["stats", dir.cache, "--prometheus", "--counters-only"]).finish()
        #expect(printed.status == 0, "\(printed.err)")
        #expect(Self.sample(printed.out, "urlcache_entries{\(directory)}") == 30, "\(printed.out)")
        // Per partition from the index's counters: no walk, so --counters-only (and every proxy scrape) has them.
        #expect(Self.sample(printed.out, "urlcache_partition_entries{\(directory),partition=\"images\"}") == 10)
        #expect(Self.sample(printed.out, "urlcache_partition_counters_exact{\(directory)}") == 1)

        let file = dir.root + "/urlcache.prom"
        try Data("old".utf8).write(to: URL(fileURLWithPath: file))
        let written = try ChildProcess(urlcache, ["stats", dir.cache, "--prometheus", "--output", file]).finish()
        #expect(written.status == 0 && written.out.isEmpty, "\(written.err)")
        let contents = try String(contentsOfFile: file, encoding: .utf8)
        #expect(Self.sample(contents, "urlcache_partition_entries{\(directory),partition=\"api\"}") == 20)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.root).allSatisfy { !$0.contains(".tmp.") })

        // Usage errors exit 2; an unwritable file is a failure (3), not a half-written file.
        #expect(try ChildProcess(urlcache, ["stats", dir.cache, "--prometheus", "--json"]).finish().status == 2)
        #expect(try ChildProcess(urlcache, ["stats", dir.cache, "--output", file]).finish().status == 2)
        let unwritable = try ChildProcess(
            urlcache, ["stats", dir.cache, "--prometheus", "--output", dir.root + "/absent/urlcache.prom"]
        ).finish()
        #expect(unwritable.status == 3 && unwritable.err.contains("cannot write"), "\(unwritable)")
    }
}
