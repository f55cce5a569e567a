import Foundation
@_spi(Testing) import SharedURLCacheStore
import Testing
import TestProcess

/// A refresh (what a 304 stores): a new head for the body a version holds, written as one index
/// record that names the same body file.
@Suite(.blockingWaits, .timeLimit(.minutes(5)))
struct RefreshTests {
    private func descriptor(_ key: String, head: String, tags: [String] = [], at date: Date = Date())
        -> RecordDescriptor
    {
        RecordDescriptor(
            key: bytes(key), head: bytes(head), userInfo: bytes("info:" + head), storedAt: date, tags: tags)
    }

    private func fileStat(_ dir: TestDirectory, _ relative: String) throws -> (inode: UInt64, modified: Date) {
        let attributes = try FileManager.default.attributesOfItem(atPath: dir.cache + "/" + relative)
        return ((attributes[.systemFileNumber] as? NSNumber)?.uint64Value ?? 0, attributes[.modificationDate] as! Date)
    }

    @Test("a refresh replaces the head and keeps the very body file, which verify accepts")
    func keepsTheBodyFile() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        let body = makeBody(size: 3 << 20, compressible: true)
        let first = try store.store(descriptor("big", head: "v1", tags: ["old"]), body: body)
        let path = try #require(store.debugBodyPath(for: bytes("big")))
        let before = try fileStat(dir, path)
        let storedAt = Date(timeIntervalSince1970: 2_000_000_000)
        let refreshed = try #require(
            try store.refresh(descriptor("big", head: "v2-longer-head", tags: ["new"], at: storedAt), expecting: first))
        #expect(refreshed > first)
        let record = try #require(try store.record(for: bytes("big")))
        #expect(record.head == bytes("v2-longer-head") && record.userInfo == bytes("info:v2-longer-head"))
        #expect(record.version == refreshed && record.storedAt == storedAt && record.tags == ["new"])
        #expect(record.body == body)
        // The same file, not written again.
        #expect(store.debugBodyPath(for: bytes("big")) == path)
        let after = try fileStat(dir, path)
        #expect(after.inode == before.inode && after.modified == before.modified)
        // Every check a lookup makes, and the counters, agree with the shared file.
        let report = try store.verify(checkBodies: true)
        #expect(!report.isDamaged && report.orphanFiles == 0 && report.partitionCountersMatch)
        // The tags moved with the head.
        #expect(try store.purge(tag: "old").removedEntries == 0)
        #expect(try store.purge(tag: "new").removedEntries == 1)
        #expect(!FileManager.default.fileExists(atPath: dir.cache + "/" + path))
    }

    @Test("the file goes when the last record naming it goes: a replacement or a removal")
    func fileGoesWithTheLastRecord() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        var version = try store.store(descriptor("a", head: "h0"), body: makeBody(size: 600_000, compressible: false))
        let path = try #require(store.debugBodyPath(for: bytes("a")))
        for round in 1...5 {
            version = try #require(try store.refresh(descriptor("a", head: "h\(round)"), expecting: version))
            #expect(FileManager.default.fileExists(atPath: dir.cache + "/" + path))
        }
        try store.store(descriptor("a", head: "new body"), body: makeBody(size: 600_000, compressible: false, seed: 2))
        #expect(!FileManager.default.fileExists(atPath: dir.cache + "/" + path))
        let second = try #require(store.debugBodyPath(for: bytes("a")))
        let current = try #require(try store.version(for: bytes("a")))
        _ = try #require(try store.refresh(descriptor("a", head: "again"), expecting: current))
        #expect(try store.remove(key: bytes("a")) == 1)
        #expect(!FileManager.default.fileExists(atPath: dir.cache + "/" + second))
        let report = try store.verify(checkBodies: true)
        #expect(!report.isDamaged && report.orphanFiles == 0 && report.entries == 0)
    }

    @Test("a refresh of a version that changed or is gone refreshes nothing")
    func onlyTheValidatedVersion() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        let old = try store.store(descriptor("k", head: "one"), body: makeBody(size: 200_000, compressible: true))
        let new = try store.store(
            descriptor("k", head: "two"), body: makeBody(size: 200_000, compressible: true, seed: 3))
        #expect(try store.refresh(descriptor("k", head: "stale 304"), expecting: old) == nil)
        #expect(try store.record(for: bytes("k"))?.head == bytes("two"))
        #expect(try store.record(for: bytes("k"))?.version == new)
        var other = descriptor("k", head: "elsewhere")
        other.partition = bytes("another partition")
        #expect(try store.refresh(other, expecting: new) == nil)
        try store.remove(key: bytes("k"))
        #expect(try store.refresh(descriptor("k", head: "gone"), expecting: new) == nil)
        #expect(try store.record(for: bytes("k")) == nil)
    }

    @Test("an inline body is carried into the refreshed record; a soft purge is lifted")
    func inlineAndSoftPurge() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        let version = try store.store(descriptor("small", head: "a"), body: bytes("tiny body"))
        #expect(try store.invalidate(key: bytes("small")) == 1)
        let marked = try #require(try store.version(for: bytes("small")))
        #expect(marked != version)
        let refreshed = try #require(try store.refresh(descriptor("small", head: "b"), expecting: marked))
        let record = try #require(try store.record(for: bytes("small")))
        #expect(record.isInline && record.body == bytes("tiny body") && record.head == bytes("b"))
        #expect(record.invalidatedAt == nil && record.version == refreshed)
        #expect(try !store.verify(checkBodies: true).isDamaged)
    }

    @Test("a refreshed entry survives a rebuild of a lost index with the head its body was written with")
    func rebuildRestoresTheWrittenHead() throws {
        let dir = TestDirectory()
        do {
            let store = try CacheStore(directory: dir.cache, configuration: RebuildTests.configuration())
            let version = try store.store(
                descriptor("r", head: "written", at: Date(timeIntervalSinceNow: -60)),
                body: makeBody(size: 300_000, compressible: true))
            _ = try #require(try store.refresh(descriptor("r", head: "refreshed"), expecting: version))
            try store.sync()
        }
        try RebuildTests.loseIndex(dir.cache)
        let store = try CacheStore(directory: dir.cache, configuration: RebuildTests.configuration())
        let report = try store.verify(fix: true, rebuild: true)
        #expect(report.rebuiltEntries == 1)
        let record = try #require(try store.record(for: bytes("r")))
        #expect(record.head == bytes("written") && record.body == makeBody(size: 300_000, compressible: true))
    }
}
