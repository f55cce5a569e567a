import Foundation
@_spi(Testing) import SharedURLCacheStore
import Testing
import TestProcess

/// Every byte in the directory may be damaged or hostile: a damaged entry is a miss and is
/// purged, and every other entry stays intact (OkHttp CacheCorruptionTest, docs/Reliability.md T10).
@Suite(.blockingWaits, .timeLimit(.minutes(5)))
struct CorruptionTests {
    enum Damage: String, CaseIterable, Sendable {
        case flippedByte, truncated, missing, swapped, longer, replacedByFIFO, replacedByDirectory, replacedBySymlink
    }

    /// Stores `victim`, `other` and `bystander` bodies in files, damages victim's file.
    @Test("a damaged body file is a miss, the entry is purged, others stay intact", arguments: Damage.allCases)
    func damagedBody(_ damage: Damage) throws {
        let dir = TestDirectory()
        var configuration = CacheStoreConfiguration()
        configuration.inlineBodyLimitBytes = nil // every body in a file
        let store = try CacheStore(directory: dir.cache, configuration: configuration)
        let victimBody = makeBody(size: 50_000, compressible: true, seed: 1)
        let otherBody = makeBody(size: 50_000, compressible: true, seed: 2)
        try store.store(RecordDescriptor(key: bytes("victim")), body: victimBody)
        try store.store(RecordDescriptor(key: bytes("other")), body: otherBody)
        try store.store(RecordDescriptor(key: bytes("bystander")), body: bytes("fine"))
        let path = dir.cache + "/" + (try #require(store.debugBodyPath(for: bytes("victim"))))
        let otherPath = dir.cache + "/" + (try #require(store.debugBodyPath(for: bytes("other"))))
        let fm = FileManager.default

        switch damage {
        case .flippedByte:
            var data = try #require(fm.contents(atPath: path))
            data[data.count / 2] ^= 0x40
            try data.write(to: URL(fileURLWithPath: path))
        case .truncated:
            let data = try #require(fm.contents(atPath: path))
            try data.prefix(data.count / 2).write(to: URL(fileURLWithPath: path))
        case .missing:
            try fm.removeItem(atPath: path)
        case .swapped:
            let a = try #require(fm.contents(atPath: path)), b = try #require(fm.contents(atPath: otherPath))
            try b.write(to: URL(fileURLWithPath: path))
            try a.write(to: URL(fileURLWithPath: otherPath))
        case .longer:
            var data = try #require(fm.contents(atPath: path))
            data.append(contentsOf: [1, 2, 3])
            try data.write(to: URL(fileURLWithPath: path))
        case .replacedByFIFO:
            try fm.removeItem(atPath: path)
            #expect(mkfifo(path, 0o660) == 0)
        case .replacedByDirectory:
            try fm.removeItem(atPath: path)
            try fm.createDirectory(atPath: path, withIntermediateDirectories: false)
        case .replacedBySymlink:
            let outside = dir.root + "/outside"
            try Data(victimBody).write(to: URL(fileURLWithPath: outside))
            try fm.removeItem(atPath: path)
            try fm.createSymbolicLink(atPath: path, withDestinationPath: outside)
        }

        // When: the damaged entry is looked up (a FIFO must not block: the suite's time limit).
        #expect(try store.record(for: bytes("victim")) == nil, "damaged entry is a miss")
        // Then: it is purged from the index, and the others are intact.
        #expect(try store.version(for: bytes("victim")) == nil, "damaged entry was purged")
        if damage == .swapped {
            #expect(try store.record(for: bytes("other")) == nil, "the other swapped file is damaged too")
        } else {
            #expect(try store.record(for: bytes("other"))?.body == otherBody)
        }
        #expect(try store.record(for: bytes("bystander"))?.body == bytes("fine"))
        // A new store of the same key works again.
        try store.store(RecordDescriptor(key: bytes("victim")), body: victimBody)
        #expect(try store.record(for: bytes("victim"))?.body == victimBody)
    }

    /// Whole bodies are decoded with libdeflate (CSupport/core/body.c): damage anywhere in the
    /// zlib stream (its header, its middle, its Adler-32 trailer) is a miss and a purge.
    @Test("a damaged zlib stream is a miss and is purged", arguments: ["header", "middle", "trailer"])
    func damagedStream(_ place: String) throws {
        let dir = TestDirectory()
        var configuration = CacheStoreConfiguration()
        configuration.inlineBodyLimitBytes = nil // every body in a file, where the stream can be reached
        let store = try CacheStore(directory: dir.cache, configuration: configuration)
        let body = makeBody(size: 20_000, compressible: true, seed: 3)
        try store.store(RecordDescriptor(key: bytes("victim")), body: body)
        try store.store(RecordDescriptor(key: bytes("bystander")), body: bytes("fine"))
        let path = dir.cache + "/" + (try #require(store.debugBodyPath(for: bytes("victim"))))
        var data = try #require(FileManager.default.contents(atPath: path))
        // Body file layout (CSupport/core/body.c): a 48-byte header, stored_size (u64 LE at 16) bytes of stream.
        let storedSize = (0..<8).reduce(0) { $0 | Int(data[16 + $1]) << (8 * $1) }
        let offset =
            switch place {
            case "header": 48
            case "middle": 48 + storedSize / 2
            default: 48 + storedSize - 1
            }
        data[offset] ^= 0x10
        try data.write(to: URL(fileURLWithPath: path))

        #expect(try store.record(for: bytes("victim")) == nil)
        #expect(try store.version(for: bytes("victim")) == nil)
        #expect(try store.record(for: bytes("bystander"))?.body == bytes("fine"))
    }

    @Test(
        "a garbage index record is a miss and is purged",
        arguments: [[], [0x53, 0x55, 0x43, 0x52], Array(repeating: UInt8(0xff), count: 500)])
    func garbageRecord(_ garbage: [UInt8]) throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        try store.store(RecordDescriptor(key: bytes("victim")), body: bytes("v"))
        try store.store(RecordDescriptor(key: bytes("bystander")), body: bytes("b"))
        try store.debugOverwriteRecord(for: bytes("victim"), with: garbage)
        #expect(try store.record(for: bytes("victim")) == nil)
        #expect(try store.version(for: bytes("victim")) == nil)
        #expect(try store.variants(for: bytes("victim")).isEmpty)
        #expect(try store.record(for: bytes("bystander"))?.body == bytes("b"))
        // The purge went through the index (a later store and removal work normally).
        try store.store(RecordDescriptor(key: bytes("victim")), body: bytes("again"))
        #expect(try store.record(for: bytes("victim"))?.body == bytes("again"))
    }

    @Test("a record with a valid header but lengths past its end is rejected, not read out of bounds")
    func truncatedRecord() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        try store.store(RecordDescriptor(key: bytes("victim"), head: Array(repeating: 7, count: 300)), body: bytes("v"))
        var raw = try #require(try store.debugRawRecord(for: bytes("victim")))
        raw.removeLast(100)
        try store.debugOverwriteRecord(for: bytes("victim"), with: raw)
        #expect(try store.record(for: bytes("victim")) == nil)
    }
}
