import CacheMaintenance
import Foundation
@_spi(Testing) import SharedURLCacheStore
import Testing
import TestProcess

@Suite(.blockingWaits, .timeLimit(.minutes(3)))
struct VerificationTests {
    func age(_ path: String) {
        var old = [timeval(tv_sec: time(nil) - 3600, tv_usec: 0), timeval(tv_sec: time(nil) - 3600, tv_usec: 0)]
        precondition(utimes(path, &old) == 0, "utimes \(path)")
    }

    /// 30 entries, then a missing body, a truncated body, a garbage record, an orphan body file
    /// and a temp file, the last two older than the 10-minute grace.
    ///
    /// Each test plants into its own directory and sweeps it once: the store lists tmp/ through a
    /// dup() of a directory descriptor it keeps open per directory and process, so a second sweep
    /// in the same process reads tmp/ from the end and misses temp files (reported to the store's
    /// owner; a cron run is a fresh process, and `verify --fix` sweeps once, so the tool is not
    /// affected).
    func plantDamage(_ dir: TestDirectory) throws -> (store: CacheStore, orphan: String, temp: String) {
        let store = try CacheStore(directory: dir.cache, configuration: fileConfiguration())
        for i in 0..<30 {
            try store.store(RecordDescriptor(key: bytes("k\(i)")), body: randomBody(size: 3000, seed: UInt64(i)))
        }
        try FileManager.default.removeItem(atPath: dir.cache + "/" + #require(store.debugBodyPath(for: bytes("k1"))))
        #expect(truncate(dir.cache + "/" + (try #require(store.debugBodyPath(for: bytes("k2")))), 20) == 0)
        try store.debugOverwriteRecord(for: bytes("k3"), with: [0xde, 0xad, 0xbe, 0xef])
        let orphan = dir.cache + "/bodies/ab/ab" + String(repeating: "0", count: 30)
        let temp = dir.cache + "/tmp/t" + String(repeating: "7", count: 32)
        try FileManager.default.createDirectory(atPath: dir.cache + "/bodies/ab", withIntermediateDirectories: true)
        for path in [orphan, temp] {
            try Data("left over".utf8).write(to: URL(fileURLWithPath: path))
            age(path) // older than the 10-minute grace: not a store in flight
        }
        return (store, orphan, temp)
    }

    @Test("verify finds each kind of planted damage, changes nothing, and exits 1")
    func plantedDamage() throws {
        let dir = TestDirectory()
        let (store, orphan, temp) = try plantDamage(dir)
        // When
        let found = try CacheMaintainer(store: store).verify()
        // Then
        #expect(found.found.missingBodies == 1)
        #expect(found.found.damagedBodies == 1)
        #expect(found.found.unreadableRecords == 1)
        // The planted orphan, plus the truncated body and the garbage record's body, which no
        // readable record points at any more.
        #expect(found.found.orphanFiles == 3)
        #expect(found.found.tempFiles == 1)
        #expect(found.damageFound && found.damageRemaining && found.afterFix == nil)
        #expect(
            FileManager.default.fileExists(atPath: orphan) && FileManager.default.fileExists(atPath: temp),
            "no --fix, no change")
        #expect(try store.statistics().entries == 30)
    }

    @Test("verify --fix repairs each kind of planted damage, checks again, and exits 0")
    func fixDamage() throws {
        let dir = TestDirectory()
        let (store, orphan, temp) = try plantDamage(dir)
        // When
        let fixed = try CacheMaintainer(store: store).verify(fix: true)
        // Then: everything found was repaired; the second pass is clean.
        #expect(fixed.found.missingBodies == 1 && fixed.found.damagedBodies == 1 && fixed.found.unreadableRecords == 1)
        // Orphans: the planted one and the garbage record's body (the truncated body went with
        // its purged entry before the file sweep).
        #expect(fixed.found.orphanFiles == 2 && fixed.found.tempFiles == 1, "\(fixed.found)")
        // Repaired: the three entries purged and the garbage record's key in the use order (a
        // directory of format 2 keeps no stored-time order, so no second stray key).
        #expect(fixed.found.repaired >= 4, "\(fixed.found)")
        #expect(fixed.damageFound && !fixed.damageRemaining)
        let after = try #require(fixed.afterFix)
        // The garbage record's body is young (< 10 min) and stays for a later run: as far as the
        // sweep can tell it could be a store in flight.
        #expect(after.orphanFiles <= 1 && after.entries == 27, "\(after)")
        #expect(!FileManager.default.fileExists(atPath: orphan) && !FileManager.default.fileExists(atPath: temp))
        #expect(try !CacheMaintainer(store: store).verify(checkBodies: true).damageFound)
        #expect(try store.statistics().entries == 27)
        #expect(try store.record(for: bytes("k4"))?.body == randomBody(size: 3000, seed: 4))
    }

    @Test("a young orphan is reported but not removed: it may be a store in flight")
    func youngOrphan() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache, configuration: fileConfiguration())
        try store.store(RecordDescriptor(key: bytes("k")), body: randomBody(size: 100, seed: 1))
        let orphan = dir.cache + "/bodies/cd/cd" + String(repeating: "1", count: 30)
        try FileManager.default.createDirectory(atPath: dir.cache + "/bodies/cd", withIntermediateDirectories: true)
        try Data("in flight".utf8).write(to: URL(fileURLWithPath: orphan))
        let summary = try CacheMaintainer(store: store).verify(fix: true)
        #expect(summary.found.orphanFiles == 1 && !summary.damageFound)
        #expect(FileManager.default.fileExists(atPath: orphan))
    }

    @Test("after losing the index, --fix --rebuild restores the entries and their lookups")
    func rebuild() throws {
        let dir = TestDirectory()
        let keys = try (0..<25).map {
            try StoredKey.encode(partition: "api", method: "GET", url: "https://api.example.com/r/\($0)")
        }
        do {
            let store = try CacheStore(directory: dir.cache, configuration: fileConfiguration())
            for (i, key) in keys.enumerated() {
                try store.store(
                    RecordDescriptor(key: key, partition: bytes("api"), head: bytes("head\(i)")),
                    body: randomBody(size: 4000, seed: UInt64(i)))
            }
        }
        // Given: the index is gone.
        for name in ["index.lmdb", "index.lmdb-lock"] {
            try FileManager.default.removeItem(atPath: dir.cache + "/" + name)
        }
        let store = try CacheStore(directory: dir.cache, configuration: fileConfiguration())
        let maintainer = CacheMaintainer(store: store)
        #expect(try store.statistics().entries == 0)
        let before = try maintainer.verify()
        #expect(before.found.orphanFiles == 25)
        // When
        let rebuilt = try maintainer.verify(fix: true, rebuild: true)
        // Then
        #expect(rebuilt.found.rebuiltEntries == 25)
        #expect(rebuilt.damageRemaining == false)
        #expect(try store.statistics().entries == 25)
        for (i, key) in keys.enumerated() {
            let hit = try #require(try store.record(for: key))
            #expect(hit.body == randomBody(size: 4000, seed: UInt64(i)) && hit.head == bytes("head\(i)"))
        }
        #expect(try maintainer.show(url: "https://api.example.com/r/7").entries.first?.partition == "api")
    }
}
