import Foundation
@_spi(Testing) import SharedURLCacheStore
import Testing
import TestProcess

/// `verify --rebuild` restores entries from the record copies in body files after the index was
/// lost. A body file the index does not know is not always a lost entry: it can be a replaced
/// version or a removed entry whose unlink was lost (a crash between the commit and the unlink).
@Suite(.blockingWaits, .timeLimit(.minutes(2)))
struct RebuildTests {
    static func configuration() -> CacheStoreConfiguration {
        var configuration = CacheStoreConfiguration()
        configuration.inlineBodyLimitBytes = nil
        return configuration
    }

    /// Copies each key's body file aside, so that it can be put back after the store unlinks it.
    static func keepBodies(_ store: CacheStore, _ cache: String, keys: [String]) throws -> [(String, Data)] {
        try keys.map { key in
            let path = cache + "/" + (try #require(try store.debugBodyPath(for: bytes(key))))
            return (path, try Data(contentsOf: URL(fileURLWithPath: path)))
        }
    }

    static func putBack(_ kept: [(String, Data)]) throws {
        for (path, data) in kept { try data.write(to: URL(fileURLWithPath: path)) }
    }

    static func loseIndex(_ cache: String) throws {
        for name in ["index.lmdb", "index.lmdb-lock"] { try FileManager.default.removeItem(atPath: cache + "/" + name) }
    }

    @Test("a removed entry whose body unlink was lost is not brought back by a rebuild")
    func removedEntryStaysRemoved() throws {
        let dir = TestDirectory()
        let keys = (0..<8).map { "removed-\($0)" }
        do {
            let store = try CacheStore(directory: dir.cache, configuration: Self.configuration())
            for (i, key) in keys.enumerated() {
                try store.store(
                    RecordDescriptor(key: bytes(key)), body: makeBody(size: 4000, compressible: true, seed: UInt64(i)))
            }
            try store.store(RecordDescriptor(key: bytes("kept")), body: makeBody(size: 4000, compressible: true))
            let kept = try Self.keepBodies(store, dir.cache, keys: keys)
            for key in keys { try store.remove(key: bytes(key)) }
            try Self.putBack(kept) // the unlinks that a crash lost
            // An intact index: those files are dead; a rebuild restores none of them.
            let report = try store.verify(fix: true, rebuild: true)
            #expect(report.rebuiltEntries == 0)
            for key in keys { #expect(try store.record(for: bytes(key)) == nil, "\(key) came back") }
            #expect(try store.record(for: bytes("kept")) != nil)
        }
    }

    @Test("after losing the index, a rebuild keeps the newest version of each key, whatever order it finds them in")
    func newestVersionWins() throws {
        let dir = TestDirectory()
        let keys = (0..<16).map { "versioned-\($0)" }
        do {
            let store = try CacheStore(directory: dir.cache, configuration: Self.configuration())
            for (i, key) in keys.enumerated() {
                try store.store(
                    RecordDescriptor(key: bytes(key), head: bytes("v1"), storedAt: Date(timeIntervalSince1970: 1_000)),
                    body: makeBody(size: 4000, compressible: true, seed: UInt64(i)))
            }
            let old = try Self.keepBodies(store, dir.cache, keys: keys)
            for (i, key) in keys.enumerated() {
                try store.store(
                    RecordDescriptor(key: bytes(key), head: bytes("v2"), storedAt: Date(timeIntervalSince1970: 2_000)),
                    body: makeBody(size: 4000, compressible: true, seed: UInt64(100 + i)))
            }
            try Self.putBack(old) // the replaced versions' unlinks, lost
        }
        try Self.loseIndex(dir.cache)
        let store = try CacheStore(directory: dir.cache, configuration: Self.configuration())
        let report = try store.verify(rebuild: true)
        #expect(report.rebuiltEntries >= keys.count)
        for (i, key) in keys.enumerated() {
            let hit = try #require(try store.record(for: bytes(key)), "\(key) was not restored")
            #expect(hit.head == bytes("v2"), "\(key): an older version was restored")
            let newest = hit.body == makeBody(size: 4000, compressible: true, seed: UInt64(100 + i))
            #expect(newest, "\(key): not the newest body")
        }
    }
}
