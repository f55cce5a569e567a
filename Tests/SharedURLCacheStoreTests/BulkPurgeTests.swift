import Foundation
@_spi(Testing) import SharedURLCacheStore
import Testing
import TestProcess

/// Purges and quotas over more entries than one write transaction takes (batches of 1,000):
/// the count reported is the entries removed, each body file is unlinked exactly once, and each
/// batch holds only its own entries. The operation runs in a `CacheWorker bulk` process, which
/// counts its unlink calls (fault injection is process-wide, and tests here run in parallel).
@Suite(.blockingWaits, .timeLimit(.minutes(10)))
struct BulkPurgeTests {
    static let entries = 10_000
    static let others = 100

    /// Every body in a file of its own, so that each removed entry is one unlink; relaxed, as
    /// the fill would otherwise spend its time in fdatasync.
    private static func openStore(_ dir: TestDirectory) throws -> CacheStore {
        var configuration = CacheStoreConfiguration()
        configuration.inlineBodyLimitBytes = nil
        configuration.durability = .relaxed
        return try CacheStore(directory: dir.cache, configuration: configuration)
    }

    /// A key in the URL layout the cache's layers write (docs/Formats.md, "Key-order postings").
    private static func urlKey(_ url: String, partition: String = "", method: String = "GET") -> [UInt8] {
        var key: [UInt8] = [UInt8(ascii: "K"), 1]
        for field in [partition, method, url] {
            let utf8 = Array(field.utf8)
            withUnsafeBytes(of: UInt32(utf8.count).bigEndian) { key += $0 }
            key += utf8
        }
        return key
    }

    /// The body files left in the directory.
    private static func bodyFiles(_ dir: TestDirectory) throws -> Int {
        try FileManager.default.subpathsOfDirectory(atPath: dir.cache + "/bodies").filter { $0.count > 3 }.count
    }

    /// Runs `CacheWorker bulk DIR arguments… files` and returns its `name=value` fields.
    private static func bulk(_ dir: TestDirectory, _ arguments: [String], files: Int) throws -> [String: Int] {
        let outcome = try ChildProcess(["bulk", dir.cache] + arguments + [String(files)]).finish(deadline: 300)
        try #require(outcome.status == 0, "\(outcome.err)")
        var fields: [String: Int] = [:]
        for pair in outcome.out.split(whereSeparator: \.isWhitespace) {
            let parts = pair.split(separator: "=")
            if parts.count == 2, let value = Int(parts[1]) { fields[String(parts[0])] = value }
        }
        return fields
    }

    @Test("a purge of 10,000 entries of one tag reports 10,000 and unlinks each body file once")
    func tagPurge() throws {
        let dir = TestDirectory()
        let store = try Self.openStore(dir)
        for i in 0..<Self.entries {
            try store.store(RecordDescriptor(key: bytes("big/\(i)"), tags: ["big"]), body: bytes("body \(i)"))
        }
        for i in 0..<Self.others {
            try store.store(RecordDescriptor(key: bytes("other/\(i)"), tags: ["other"]), body: bytes("other \(i)"))
        }
        // A soft purge first: each entry is marked once, and counted once.
        let soft = try store.purge(tag: "big", soft: true)
        #expect(soft.invalidatedEntries == Self.entries && soft.removedEntries == 0)
        #expect(soft.recordsRead == Self.entries)
        #expect(try Self.bodyFiles(dir) == Self.entries + Self.others)

        let hard = try Self.bulk(dir, ["purge-tag", "big"], files: Self.entries)
        #expect(hard["removed"] == Self.entries)
        #expect(hard["extra_unlinks"] == 0, "a body file was unlinked more than once")
        #expect(try Self.bodyFiles(dir) == Self.others)
        #expect(try store.statistics().entries == Self.others)
        #expect(try store.record(for: bytes("other/7"), includeBody: false) != nil)
        let check = try store.verify()
        #expect(!check.isDamaged && check.countersMatch && check.partitionCountersMatch)
    }

    @Test("a purge of 10,000 URLs under a prefix in URL order reports 10,000 and unlinks each body file once")
    func prefixPurge() throws {
        let dir = TestDirectory()
        let store = try Self.openStore(dir)
        try store.setKeyOrder(kept: true)
        for i in 0..<Self.entries {
            try store.store(RecordDescriptor(key: Self.urlKey("https://example.com/big/\(i)")), body: bytes("b\(i)"))
        }
        for i in 0..<Self.others {
            try store.store(RecordDescriptor(key: Self.urlKey("https://example.com/keep/\(i)")), body: bytes("k\(i)"))
        }
        let state = try store.keyOrderState()
        #expect(state.kept && state.complete)
        let soft = try store.purge(urlPrefix: "https://example.com/big/", partition: "", method: "GET", soft: true)
        #expect(soft.invalidatedEntries == Self.entries && soft.removedEntries == 0)

        let hard = try Self.bulk(
            dir, ["purge-prefix", "", "GET", "https://example.com/big/"], files: Self.entries)
        #expect(hard["removed"] == Self.entries)
        #expect(hard["extra_unlinks"] == 0, "a body file was unlinked more than once")
        #expect(try Self.bodyFiles(dir) == Self.others)
        #expect(try store.statistics().entries == Self.others)
        let check = try store.verify()
        #expect(!check.isDamaged && check.urlOrderMismatches == 0)
    }

    @Test("a quota set over 10,000 entries indexes and evicts each once and unlinks each body file once")
    func quotaEnforcement() throws {
        let dir = TestDirectory()
        let store = try Self.openStore(dir)
        for i in 0..<Self.entries {
            try store.store(RecordDescriptor(key: bytes("q/\(i)"), partition: bytes("q")), body: bytes("q\(i)"))
        }
        for i in 0..<Self.others {
            try store.store(RecordDescriptor(key: bytes("o/\(i)"), partition: bytes("o")), body: bytes("o\(i)"))
        }
        // Every entry of the partition takes more than one byte: a 1-byte quota evicts them all,
        // in batches of 1,000, after walking the directory's 10,100 entries in batches.
        let quota = try Self.bulk(dir, ["quota", "q", "1"], files: Self.entries)
        #expect(quota["indexed"] == Self.entries)
        #expect(quota["evicted"] == Self.entries)
        #expect(quota["extra_unlinks"] == 0, "a body file was unlinked more than once")
        #expect(try Self.bodyFiles(dir) == Self.others)
        let (partitions, exact) = try store.partitionCounters()
        #expect(exact)
        #expect(partitions.first { $0.partition == bytes("q") }?.entries == 0)
        #expect(partitions.first { $0.partition == bytes("o") }?.entries == Self.others)
    }
}
