import CacheMaintenance
import Foundation
import SharedURLCacheStore
import Testing
import TestProcess

/// `urlcache purge` over more entries than one write transaction takes (1,000): what it reports
/// is what it removed, and only those entries' body files go.
@Suite(.blockingWaits, .timeLimit(.minutes(5)))
struct BulkPurgeCommandTests {
    static let tagged = 2_500

    /// 2,500 entries tagged `big`, 2,500 under https://walk.test/ and 100 others, each body in
    /// a file of its own (relaxed: the fill would otherwise spend its time in fdatasync).
    private static func fill(_ dir: TestDirectory) throws -> CacheStore {
        var configuration = fileConfiguration()
        configuration.durability = .relaxed
        let store = try CacheStore(directory: dir.cache, configuration: configuration)
        for i in 0..<tagged {
            let key = try StoredKey.encode(partition: "", method: "GET", url: "https://big.test/\(i)")
            try store.store(RecordDescriptor(key: key, tags: ["big"]), body: bytes("big \(i)"))
            let walked = try StoredKey.encode(partition: "", method: "GET", url: "https://walk.test/\(i)")
            try store.store(RecordDescriptor(key: walked), body: bytes("walk \(i)"))
        }
        for i in 0..<100 {
            let key = try StoredKey.encode(partition: "", method: "GET", url: "https://keep.test/\(i)")
            try store.store(RecordDescriptor(key: key, tags: ["keep"]), body: bytes("keep \(i)"))
        }
        return store
    }

    private static func bodyFiles(_ dir: TestDirectory) throws -> Int {
        try FileManager.default.subpathsOfDirectory(atPath: dir.cache + "/bodies").filter { $0.count > 3 }.count
    }

    @Test("purge --tag --json over 2,500 entries reports removed_entries 2500 (each batch counted once)")
    func tagPurgeCountsEachEntryOnce() throws {
        let dir = TestDirectory()
        let store = try Self.fill(dir)
        let maintainer = CacheMaintainer(store: store)

        let soft = try maintainer.purge(PurgeSelection(tag: "big", soft: true))
        #expect(soft.invalidatedEntries == Self.tagged && soft.matchedEntries == Self.tagged)

        let urlcache = builtExecutable("urlcache")
        try #require(
            FileManager.default.isExecutableFile(atPath: urlcache.path),
            "build urlcache first (swift build --build-tests builds it)")
        let result = try ChildProcess(urlcache, ["purge", dir.cache, "--tag", "big", "--json"]).finish()
        #expect(result.status == 0, "\(result.err)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.out.utf8)) as? [String: Any])
        #expect(json["removed_entries"] as? Int == Self.tagged, "\(result.out)")
        #expect(json["matched_entries"] as? Int == Self.tagged, "\(result.out)")
        #expect(json["method"] as? String == "tag-index")
        #expect(try Self.bodyFiles(dir) == Self.tagged + 100)

        // A prefix while the directory keeps no URL order walks the records and removes the
        // matches a batch at a time: the same exact count.
        let walked = try maintainer.purge(PurgeSelection(urlPrefix: "https://walk.test/"))
        #expect(walked.method == "scan")
        #expect(walked.matchedEntries == Self.tagged && walked.removedEntries == Self.tagged)
        #expect(try Self.bodyFiles(dir) == 100)
        #expect(try store.statistics().entries == 100)
        #expect(try maintainer.purge(PurgeSelection(tag: "keep"), dryRun: true).matchedEntries == 100)
    }
}
