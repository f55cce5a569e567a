import Foundation
@_spi(Testing) import SharedURLCacheStore
import Testing
import TestProcess

@Suite(.blockingWaits, .timeLimit(.minutes(5)))
struct TagPurgeTests {
    private func tagged(_ key: String, _ tags: [String], partition: String = "") -> RecordDescriptor {
        RecordDescriptor(key: bytes(key), partition: bytes(partition), tags: tags)
    }

    @Test("a tag purge removes exactly the tagged entries and reads only their records")
    func purgeRemovesTagged() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        for i in 0..<200 {
            let tags = i % 20 == 0 ? ["product-42", "list"] : i % 2 == 0 ? ["list"] : []
            try store.store(tagged("k\(i)", tags), body: makeBody(size: 300 + i * 97, compressible: i % 3 != 0))
        }
        let report = try store.purge(tag: "product-42")
        #expect(report.removedEntries == 10)
        #expect(report.recordsRead == 10)
        #expect(report.stalePostings == 0)
        #expect(try store.record(for: bytes("k20")) == nil)
        #expect(try store.record(for: bytes("k22"))?.tags == ["list"])
        #expect(try store.statistics().entries == 190)
        // The removed entries took their other postings with them.
        let list = try store.purge(tag: "list")
        #expect(list.removedEntries == 90 && list.recordsRead == 90 && list.stalePostings == 0)
        #expect(try store.statistics().entries == 100)
        #expect(try store.purge(tag: "product-42").recordsRead == 0)
        #expect(try store.verify(checkBodies: true).isDamaged == false && store.verify().countersMatch)
    }

    @Test("replacing an entry replaces its tags; removing it drops its postings")
    func replaceAndRemove() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        try store.store(tagged("a", ["old"]), body: bytes("one"))
        try store.store(tagged("a", ["new"]), body: bytes("two"))
        let old = try store.purge(tag: "old")
        #expect(old.removedEntries == 0 && old.recordsRead == 0)
        #expect(try store.record(for: bytes("a"))?.body == bytes("two"))
        try store.store(tagged("b", ["gone"]), body: bytes("b"))
        try store.remove(key: bytes("b"))
        #expect(try store.purge(tag: "gone").recordsRead == 0)
        #expect(try store.purge(tag: "new").removedEntries == 1)
    }

    @Test("a tag purge can be held to one partition")
    func partitions() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        try store.store(tagged("a1", ["t"], partition: "alpha"), body: bytes("a"))
        try store.store(tagged("b1", ["t"], partition: "beta"), body: bytes("b"))
        try store.store(tagged("n1", ["t"]), body: bytes("n"))
        #expect(try store.purge(tag: "t", partition: bytes("beta")).removedEntries == 1)
        #expect(try store.record(for: bytes("b1")) == nil)
        #expect(try store.purge(tag: "t", partition: []).removedEntries == 1)
        #expect(try store.record(for: bytes("a1")) != nil)
        #expect(try store.purge(tag: "t").removedEntries == 1)
    }

    @Test("a soft purge marks entries stale, keeps their bodies and changes their versions")
    func softPurge() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        let body = makeBody(size: 40_000, compressible: true)
        let before = try store.store(tagged("file", ["t"]), body: body)
        try store.store(tagged("inline", ["t"]), body: bytes("small"))
        try store.store(tagged("other", ["u"]), body: bytes("other"))
        let start = Date().addingTimeInterval(-1)
        let report = try store.purge(tag: "t", soft: true)
        #expect(report.invalidatedEntries == 2 && report.removedEntries == 0)
        let file = try #require(try store.record(for: bytes("file")))
        #expect(file.body == body)
        #expect(file.version != before)
        let mark = try #require(file.invalidatedAt)
        #expect(mark >= start && mark <= Date().addingTimeInterval(1))
        #expect(try store.record(for: bytes("inline"))?.invalidatedAt == mark)
        #expect(try store.record(for: bytes("other"))?.invalidatedAt == nil)
        // Marked once: a second soft purge keeps the first mark and counts nothing.
        #expect(try store.purge(tag: "t", soft: true).invalidatedEntries == 0)
        // A store replaces the marked entry with an unmarked one; a hard purge still finds it.
        try store.store(tagged("file", ["t"]), body: bytes("fresh"))
        #expect(try store.record(for: bytes("file"))?.invalidatedAt == nil)
        #expect(try store.purge(tag: "t").removedEntries == 2)
        #expect(try store.verify(checkBodies: true).isDamaged == false && store.verify().countersMatch)
    }

    @Test("a soft purge by key marks one variant or all")
    func invalidateByKey() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        try store.store(RecordDescriptor(key: bytes("k"), variant: bytes("gzip")), body: bytes("g"))
        try store.store(RecordDescriptor(key: bytes("k"), variant: bytes("br")), body: bytes("b"))
        try store.store(RecordDescriptor(key: bytes("j")), body: bytes("j"))
        #expect(try store.invalidate(key: bytes("k"), variant: bytes("br")) == 1)
        #expect(try store.record(for: bytes("k"), variant: bytes("gzip"))?.invalidatedAt == nil)
        #expect(try store.invalidate(key: bytes("k")) == 1)
        #expect(try store.record(for: bytes("k"), variant: bytes("gzip"))?.invalidatedAt != nil)
        #expect(try store.record(for: bytes("j"))?.invalidatedAt == nil)
        #expect(try store.invalidate(key: bytes("missing")) == 0)
    }

    @Test("bad tags are refused with a typed error and nothing stored is lost")
    func badTags() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        try store.store(tagged("keep", ["fine"]), body: bytes("kept"))
        for tags in [[""], ["a\nb"], ["nul\u{0}"], [String(repeating: "x", count: 1025)]] {
            #expect(throws: CacheError.self) { try store.store(tagged("keep", tags), body: bytes("lost?")) }
        }
        let tooMany = (0..<40).map { String(repeating: Character(String($0 % 10)), count: 500) + "\($0)" }
        #expect(throws: CacheError.self) { try store.store(tagged("keep", tooMany), body: bytes("lost?")) }
        #expect(try store.record(for: bytes("keep"))?.body == bytes("kept"))
        for tag in ["", "a\nb", String(repeating: "x", count: 1025)] {
            #expect(throws: CacheError.self) { try store.purge(tag: tag) }
        }
        #expect(try store.purge(tag: "fine").removedEntries == 1)
    }

    @Test("entries without tags keep the record format of the release before (0.1)")
    func untaggedRecordsStayOnePointOne() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        try store.store(RecordDescriptor(key: bytes("plain")), body: bytes("p"))
        try store.store(tagged("tagged", ["t"]), body: bytes("t"))
        try store.store(RecordDescriptor(key: bytes("marked")), body: bytes("m"))
        try store.invalidate(key: bytes("marked"))
        func format(_ key: String) throws -> UInt16 {
            let raw = try #require(try store.debugRawRecord(for: bytes(key)))
            return UInt16(raw[4]) | UInt16(raw[5]) << 8
        }
        #expect(try format("plain") == 0x0001)
        #expect(try format("tagged") == 0x0002)
        #expect(try format("marked") == 0x0002)
    }

    /// Issue: a purge of one tag holding 10 of 100,000 entries touches only those 10, while
    /// another process reads, stores and removes in the same directory.
    @Test("a tag purge among 100,000 entries reads 10 records while a service works beside it")
    func purgeAmongManyWithService() throws {
        let dir = TestDirectory()
        var configuration = CacheStoreConfiguration()
        configuration.durability = .relaxed
        let store = try CacheStore(directory: dir.cache, configuration: configuration)
        for i in 0..<100_000 {
            let tags = i % 10_000 == 7 ? ["hot"] : ["t\(i % 997)"]
            try store.store(tagged("https://example.com/doc/\(i)", tags), body: bytes("body \(i)"))
        }
        let service = try ChildProcess(
            ChildProcess.builtExecutable("CacheWorker"), ["mixed", dir.cache, "7", "4", "300", "0", "8192"])
        // The service is at work once its marker is stored (every 50 operations).
        #expect(waitUntil { (try? store.version(for: bytes("marker-0"))) != nil }, "the service got going")
        let report = try store.purge(tag: "hot")
        let outcome = service.finish()
        #expect(outcome.status == 0, "\(outcome.err)")
        #expect(outcome.out.contains("DONE"))
        #expect(report.removedEntries == 10)
        #expect(report.recordsRead == 10)
        #expect(try store.record(for: bytes("https://example.com/doc/7")) == nil)
        #expect(try store.record(for: bytes("https://example.com/doc/8"))?.tags == ["t8"])
        let t8 = (0..<100_000).filter { $0 % 10_000 != 7 && $0 % 997 == 8 }.count
        #expect(try store.purge(tag: "t8").recordsRead == t8)
    }
}
