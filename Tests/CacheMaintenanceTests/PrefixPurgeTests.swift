import CacheMaintenance
import Foundation
import SharedURLCacheStore
import Testing
import TestProcess

/// `urlcache purge --prefix` through the index's key-order postings (docs/Formats.md,
/// "Key-order postings"): it reads the keys under the prefix, never the rest of the directory.
@Suite(.blockingWaits, .timeLimit(.minutes(5)))
struct PrefixPurgeTests {
    func key(_ url: String, partition: String = "", method: String = "GET") throws -> [UInt8] {
        try StoredKey.encode(partition: partition, method: method, url: url)
    }

    func descriptor(_ url: String, partition: String = "", method: String = "GET", variant: String = "")
        throws -> RecordDescriptor
    {
        RecordDescriptor(
            key: try key(url, partition: partition, method: method), variant: Array(variant.utf8),
            partition: Array(partition.utf8))
    }

    /// Issue: purges by URL prefix use the index, not a walk. 10 of 100,000 entries lie under the
    /// prefix; the purge reads their 10 records while another process reads, stores and removes.
    @Test("a prefix purge among 100,000 entries reads the 10 records under it while a service works beside it")
    func purgeAmongManyWithService() throws {
        let dir = TestDirectory()
        var configuration = CacheStoreConfiguration()
        configuration.durability = .relaxed
        let store = try CacheStore(directory: dir.cache, configuration: configuration)
        for i in 0..<100_000 {
            let url = i % 10_000 == 7 ? "https://example.com/hot/\(i)" : "https://example.com/doc/\(i)"
            try store.store(try descriptor(url), body: Array("body \(i)".utf8))
        }
        // Kept from now on: the postings are built by one walk of what is there.
        let maintainer = CacheMaintainer(store: store)
        let kept = try maintainer.setURLOrder(kept: true)
        #expect(kept.kept && kept.complete)
        let service = try ChildProcess(
            ChildProcess.builtExecutable("CacheWorker"), ["mixed", dir.cache, "7", "4", "300", "0", "8192"])
        // The service is at work once its marker is stored (every 50 operations).
        #expect(waitUntil { (try? store.version(for: Array("marker-0".utf8))) != nil }, "the service got going")
        let report = try maintainer.purge(PurgeSelection(urlPrefix: "https://EXAMPLE.com/hot/"))
        let outcome = service.finish()
        #expect(outcome.status == 0, "\(outcome.err)")
        #expect(outcome.out.contains("DONE"))
        #expect(report.method == "key-order-index", "\(report)")
        #expect(report.removedEntries == 10 && report.recordsRead == 10, "\(report)")
        #expect(try store.record(for: try key("https://example.com/hot/7")) == nil)
        #expect(try store.record(for: try key("https://example.com/doc/8")) != nil)
        #expect(try store.statistics().entries >= 99_990)
    }

    @Test(
        "a prefix purge takes every variant and both methods under it, in the given partition or all, softly or not; long URLs too"
    )
    func selection() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        try store.setKeyOrder(kept: true)
        let maintainer = CacheMaintainer(store: store)
        let long = "https://example.com/api/" + String(repeating: "x", count: 700)
        for partition in ["", "alpha"] {
            for url in ["https://example.com/api/1", "https://example.com/api/2", "https://example.com/apiary", long] {
                try store.store(try descriptor(url, partition: partition), body: Array("b".utf8))
            }
            try store.store(
                try descriptor("https://example.com/api/1", partition: partition, variant: "gzip"), body: [1])
            try store.store(try descriptor("https://example.com/api/1", partition: partition, method: "HEAD"), body: [])
            try store.store(try descriptor("https://example.com/other", partition: partition), body: [2])
        }
        try store.store(RecordDescriptor(key: Array("https://example.com/api/raw".utf8)), body: [3])
        // In one partition: /api/1 (2 variants, GET and HEAD), /api/2 and the long URL; not /apiary.
        let alpha = try maintainer.purge(PurgeSelection(urlPrefix: "https://example.com/api/", partition: "alpha"))
        #expect(alpha.method == "key-order-index" && alpha.removedEntries == 5 && alpha.recordsRead == 5, "\(alpha)")
        #expect(try store.record(for: try key(long, partition: "alpha")) == nil)
        #expect(try store.record(for: try key("https://example.com/apiary", partition: "alpha")) != nil)
        #expect(try store.record(for: try key("https://example.com/api/1")) != nil)
        // A prefix longer than a cut posting keeps: only the long URL is under it.
        let longPrefix = String(long.dropLast(10))
        let soft = try maintainer.purge(PurgeSelection(urlPrefix: longPrefix, soft: true))
        #expect(soft.invalidatedEntries == 1 && soft.removedEntries == 0, "\(soft)")
        #expect(try store.record(for: try key(long))?.invalidatedAt != nil)
        // Every partition: the default one's five (the soft-purged long one among them).
        let all = try maintainer.purge(PurgeSelection(urlPrefix: "https://example.com/api/"))
        #expect(all.method == "key-order-index" && all.removedEntries == 5, "\(all)")
        // What is not under the prefix, and raw keys, stay.
        #expect(try store.statistics().entries == 5)
        #expect(try store.record(for: Array("https://example.com/api/raw".utf8)) != nil)
        // Nothing left under it: success, nothing read.
        let again = try maintainer.purge(PurgeSelection(urlPrefix: "https://example.com/api/"))
        #expect(again.removedEntries == 0 && again.recordsRead == 0)
        #expect(try !maintainer.verify().damageFound)
    }

    @Test("a key's posting lives while any variant of it does; removals, replacements and verify --fix keep it right")
    func postingLifecycle() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        try store.setKeyOrder(kept: true)
        let maintainer = CacheMaintainer(store: store)
        let url = "https://example.com/p/1"
        try store.store(try descriptor(url), body: [1])
        try store.store(try descriptor(url, variant: "br"), body: [2])
        try store.store(try descriptor(url, variant: "br"), body: [3]) // a replacement
        try store.remove(key: try key(url), variant: [])
        let one = try maintainer.purge(PurgeSelection(urlPrefix: "https://example.com/p/"))
        #expect(one.removedEntries == 1 && one.recordsRead == 1, "the other variant kept the posting: \(one)")
        // The last variant's removal dropped the posting: a new store adds it again.
        try store.store(try descriptor(url), body: [4])
        try store.remove(key: try key(url))
        #expect(try maintainer.purge(PurgeSelection(urlPrefix: "https://example.com/p/")).recordsRead == 0)
        for i in 0..<20 { try store.store(try descriptor("https://example.com/q/\(i)"), body: [5]) }
        // verify --fix drops every posting and builds them again from the records.
        _ = try store.verify(fix: true)
        #expect(try store.keyOrderState() == (kept: true, complete: true))
        let rebuilt = try maintainer.purge(PurgeSelection(urlPrefix: "https://example.com/q/1"))
        #expect(rebuilt.method == "key-order-index" && rebuilt.removedEntries == 11, "q/1 and q/10…19: \(rebuilt)")
        // Another process's stores are indexed in its own commits.
        let other = try ChildProcess(
            ChildProcess.builtExecutable("CacheWorker"), ["mixed", dir.cache, "3", "1", "50", "0", "512"])
        #expect(other.finish().status == 0)
        #expect(try store.keyOrderState() == (kept: true, complete: true))
    }

    /// `verify` checks the postings against the records both ways: a posting lost would let a
    /// prefix purge leave its entry in place, a stale one names nothing. The damage is made with
    /// LMDB's own tools on a closed directory, as a bug or a bad copy would leave it.
    @Test("verify finds a posting missing and a stale one; --fix writes them again and the purge finds every entry")
    func verifyChecksPostings() throws {
        try #require(try ChildProcess.shell("command -v mdb_dump && command -v mdb_load").status == 0)
        let dir = TestDirectory()
        let index = dir.cache + "/index.lmdb"
        let lost = "https://example.com/v/3"
        do {
            let store = try CacheStore(directory: dir.cache)
            try store.setKeyOrder(kept: true)
            for i in 0..<10 { try store.store(try descriptor("https://example.com/v/\(i)"), body: [UInt8(i)]) }
            #expect(try store.verify().urlOrderMismatches == 0)
        }
        // Given: the posting of one stored key dropped (the whole index dumped and loaded again
        // without it), and a posting added for a key never stored.
        let dump = try ChildProcess.shell("mdb_dump -n -a '\(index)'")
        try #require(dump.status == 0, "\(dump.err)")
        var lines = dump.out.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let lostPosting = " " + hex(try posting(lost))
        let at = try #require(lines.firstIndex(of: lostPosting), "the posting of \(lost) is in the dump")
        lines.removeSubrange(at...(at + 1))
        try lines.joined(separator: "\n").write(toFile: dir.root + "/index.dump", atomically: true, encoding: .utf8)
        let reload = try ChildProcess.shell(
            "mdb_load -n -f '\(dir.root)/index.dump' '\(dir.root)/new.lmdb' && mv '\(dir.root)/new.lmdb' '\(index)'")
        try #require(reload.status == 0, "\(reload.err)")
        let ghost = [
            "VERSION=3", "format=bytevalue", "type=btree", "HEADER=END",
            " " + hex(try posting("https://example.com/v/ghost")), " ", "DATA=END", "",
        ]
        try ghost.joined(separator: "\n").write(toFile: dir.root + "/ghost.dump", atomically: true, encoding: .utf8)
        let add = try ChildProcess.shell("mdb_load -n -s meta -f '\(dir.root)/ghost.dump' '\(index)'")
        try #require(add.status == 0, "\(add.err)")
        // Then: verify reports both, --fix repairs them, and a prefix purge finds the entry
        // whose posting was lost.
        let store = try CacheStore(directory: dir.cache)
        let found = try store.verify()
        #expect(found.urlOrderMismatches == 2 && found.isDamaged, "\(found)")
        let fixed = try store.verify(fix: true)
        #expect(fixed.repaired >= 2, "\(fixed)")
        let after = try store.verify()
        #expect(after.urlOrderMismatches == 0 && !after.isDamaged, "\(after)")
        let purge = try CacheMaintainer(store: store).purge(PurgeSelection(urlPrefix: lost))
        #expect(purge.method == "key-order-index" && purge.removedEntries == 1 && purge.recordsRead == 1, "\(purge)")
        #expect(try store.record(for: try key(lost), variant: [], includeBody: false, countAsUse: false) == nil)
    }

    /// A key's posting as docs/Formats.md lays it out: 0x00 'O', then the key without its URL's
    /// length field (keys here are far below the cut).
    func posting(_ url: String) throws -> [UInt8] {
        let key = try key(url)
        let urlLengthAt = key.count - url.utf8.count - 4
        return [0, UInt8(ascii: "O")] + key[..<urlLengthAt] + key[(urlLengthAt + 4)...]
    }

    func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }

    @Test("without the URL order kept (the default, or after --off) a prefix purge walks, and removes the same entries")
    func notKept() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        let maintainer = CacheMaintainer(store: store)
        for i in 0..<6 { try store.store(try descriptor("https://example.com/n/\(i)"), body: [1]) }
        #expect(try store.keyOrderState() == (kept: false, complete: false))
        let walked = try maintainer.purge(PurgeSelection(urlPrefix: "https://example.com/n/1"))
        #expect(walked.method == "scan" && walked.removedEntries == 1)
        #expect(try maintainer.setURLOrder(kept: true).kept)
        // Another process stores with postings from its next commit on.
        let other = try ChildProcess(
            ChildProcess.builtExecutable("CacheWorker"), ["mixed", dir.cache, "5", "1", "50", "0", "512"])
        #expect(other.finish().status == 0)
        try store.store(try descriptor("https://example.com/n/10"), body: [1])
        let indexed = try maintainer.purge(PurgeSelection(urlPrefix: "https://example.com/n/"))
        #expect(indexed.method == "key-order-index" && indexed.removedEntries == 6 && indexed.recordsRead == 6)
        let dropped = try maintainer.setURLOrder(kept: false)
        #expect(!dropped.kept && !dropped.complete)
        try store.store(try descriptor("https://example.com/n/2"), body: [1])
        let again = try maintainer.purge(PurgeSelection(urlPrefix: "https://example.com/n/"))
        #expect(again.method == "scan" && again.removedEntries == 1)
    }

    @Test("a dry run of a prefix, and a prefix with --since, walk the records")
    func dryRunWalks() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        try store.setKeyOrder(kept: true)
        for i in 0..<4 { try store.store(try descriptor("https://example.com/d/\(i)"), body: [1]) }
        let maintainer = CacheMaintainer(store: store)
        let dry = try maintainer.purge(PurgeSelection(urlPrefix: "https://example.com/d/"), dryRun: true)
        #expect(dry.method == "scan" && dry.matchedEntries == 4 && dry.removedEntries == 0)
        let since = try maintainer.purge(
            PurgeSelection(urlPrefix: "https://example.com/d/", storedSince: Date(timeIntervalSinceNow: -60)))
        #expect(since.method == "scan" && since.removedEntries == 4)
    }
}
