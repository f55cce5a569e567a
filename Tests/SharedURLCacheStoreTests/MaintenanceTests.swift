import Foundation
@_spi(Testing) import SharedURLCacheStore
import Testing
import TestProcess

@Suite(.blockingWaits, .timeLimit(.minutes(3)))
struct MaintenanceTests {
    func fileConfiguration() -> CacheStoreConfiguration {
        var configuration = CacheStoreConfiguration()
        configuration.inlineBodyLimitBytes = nil
        configuration.touchInterval = .milliseconds(1)
        return configuration
    }

    func bodyFiles(_ dir: TestDirectory) throws -> [String] {
        try FileManager.default.subpathsOfDirectory(atPath: dir.cache + "/bodies").filter { $0.count > 3 }
    }

    @Test("compaction evicts least recently used entries down to the target")
    func compactToTarget() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache, configuration: fileConfiguration())
        for i in 0..<200 {
            try store.store(
                RecordDescriptor(key: bytes("k\(i)")), body: makeBody(size: 8000, compressible: false, seed: UInt64(i)))
        }
        // The core's use times are the machine's clock, to the millisecond (no clock to move):
        // the sleep puts the uses below after the stores.
        usleep(5000)
        // Given: the last 20 entries were used recently.
        for i in 180..<200 { _ = try store.record(for: bytes("k\(i)")) }
        try store.flush()
        let before = try store.statistics()
        let target = (before.storedBytes + before.recordBytes) / 2
        // When
        var progressCalls = 0
        let report = try store.compact(CompactionPolicy(targetBytes: target)) { _, _ in progressCalls += 1 }
        // Then
        let after = try store.statistics()
        #expect(after.storedBytes + after.recordBytes <= target)
        #expect(report.evictedEntries == before.entries - after.entries)
        #expect(report.evictedEntries > 50)
        #expect(after.evictions == report.evictedEntries)
        #expect(progressCalls >= 1)
        for i in 180..<200 { #expect(try store.version(for: bytes("k\(i)")) != nil, "recently used k\(i) survives") }
        #expect(try store.version(for: bytes("k0")) == nil, "least recently used goes first")
        #expect(try bodyFiles(dir).count == after.entries, "evicted bodies were unlinked")
        #expect(try store.verify().isDamaged == false)
    }

    @Test(
        "a byte target counts entries as the capacity and the disk usage do (records and body files): inline bodies are not counted twice, and compaction stops within an entry of the target",
        arguments: [2_000, 40_000])
    func targetCountsAsTheCapacity(bodySize: Int) throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache) // bodies of 2,000 bytes inline, 40,000 in files
        for i in 0..<40 {
            try store.store(
                RecordDescriptor(key: bytes("k\(i)")),
                body: makeBody(size: bodySize, compressible: false, seed: UInt64(i)))
        }
        let before = try store.diskUsage(measure: false).entryBytes
        let perEntry = before / 40
        let target = before / 2
        let report = try store.compact(CompactionPolicy(targetBytes: target))
        let after = try store.diskUsage(measure: false).entryBytes
        #expect(after <= target)
        #expect(after > target - perEntry - perEntry / 2, "evicted \(report.evictedEntries) of 40 for half the bytes")
        #expect(report.evictedBytes == before - after)
        let dryRun = try store.compact(
            {
                var policy = CompactionPolicy(targetBytes: after / 2)
                policy.dryRun = true
                return policy
            }())
        #expect((9...11).contains(dryRun.evictedEntries), "a dry run for half again: \(dryRun.evictedEntries)")
    }

    @Test("a dry run counts the same evictions and changes nothing")
    func dryRun() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache, configuration: fileConfiguration())
        for i in 0..<100 {
            try store.store(
                RecordDescriptor(key: bytes("k\(i)")), body: makeBody(size: 4000, compressible: false, seed: UInt64(i)))
        }
        let stats = try store.statistics()
        var policy = CompactionPolicy(targetBytes: (stats.storedBytes + stats.recordBytes) / 3)
        policy.dryRun = true
        let planned = try store.compact(policy)
        #expect(try store.statistics() == stats)
        policy.dryRun = false
        let done = try store.compact(policy)
        #expect(done.evictedEntries == planned.evictedEntries)
        #expect(done.evictedBytes == planned.evictedBytes)
    }

    @Test("entries unused since a date are evicted whatever the size")
    func unusedBefore() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache, configuration: fileConfiguration())
        for i in 0..<10 { try store.store(RecordDescriptor(key: bytes("old\(i)")), body: bytes("x")) }
        // Store times are the machine's clock (no clock to move): the sleeps put the cut between.
        usleep(20_000)
        let cutoff = Date()
        usleep(20_000)
        for i in 0..<10 { try store.store(RecordDescriptor(key: bytes("new\(i)")), body: bytes("y")) }
        let report = try store.compact(CompactionPolicy(unusedBefore: cutoff))
        #expect(report.evictedEntries == 10 && report.expiredEntries == 10)
        #expect(try store.statistics().entries == 10)
        #expect(try store.version(for: bytes("new3")) != nil)
    }

    @Test("orphan body files and temp files are removed only past the grace period")
    func orphans() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache, configuration: fileConfiguration())
        try store.store(RecordDescriptor(key: bytes("live")), body: makeBody(size: 5000, compressible: true))
        let oldOrphan = dir.cache + "/bodies/ab/ab" + String(repeating: "0", count: 30)
        let youngOrphan = dir.cache + "/bodies/cd/cd" + String(repeating: "1", count: 30)
        let oldTemp = dir.cache + "/tmp/t" + String(repeating: "2", count: 32)
        for path in [oldOrphan, youngOrphan, oldTemp] {
            // Stores make fan-out directories as they need them: these two may not exist yet.
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data("orphan".utf8).write(to: URL(fileURLWithPath: path))
        }
        var old = [timeval(tv_sec: time(nil) - 3600, tv_usec: 0), timeval(tv_sec: time(nil) - 3600, tv_usec: 0)]
        #expect(utimes(oldOrphan, &old) == 0 && utimes(oldTemp, &old) == 0)
        let report = try store.compact(CompactionPolicy())
        #expect(report.orphanFiles == 2 && report.tempFiles == 1)
        #expect(!FileManager.default.fileExists(atPath: oldOrphan))
        #expect(!FileManager.default.fileExists(atPath: oldTemp))
        #expect(FileManager.default.fileExists(atPath: youngOrphan), "a young file may be an in-flight store")
        #expect(try store.record(for: bytes("live"))?.bodySize == 5000)
    }

    @Test("a second compaction while one runs fails with .busy")
    func overlappingCompactions() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache, configuration: fileConfiguration())
        for i in 0..<50 { try store.store(RecordDescriptor(key: bytes("k\(i)")), body: bytes("v\(i)")) }
        var policy = CompactionPolicy(targetBytes: 0)
        policy.batchSize = 10
        var second: CacheError.Code?
        _ = try store.compact(policy) { _, _ in
            if second == nil {
                do { _ = try store.compact(CompactionPolicy()) } catch let error as CacheError {
                    second = error.code
                } catch {}
            }
        }
        #expect(second == .busy)
        #expect(try store.statistics().entries == 0)
    }

    @Test("verify finds each kind of damage, fix repairs it, rebuild restores a lost index")
    func verifyAndRebuild() throws {
        let dir = TestDirectory()
        do {
            let store = try CacheStore(directory: dir.cache, configuration: fileConfiguration())
            for i in 0..<20 {
                try store.store(
                    RecordDescriptor(key: bytes("k\(i)"), head: bytes("head\(i)")),
                    body: makeBody(size: 3000, compressible: true, seed: UInt64(i)))
            }
            #expect(try store.verify(checkBodies: true).isDamaged == false)
            // Given: a missing body, a truncated body, a garbage record.
            try FileManager.default.removeItem(atPath: dir.cache + "/" + store.debugBodyPath(for: bytes("k1"))!)
            #expect(truncate(dir.cache + "/" + store.debugBodyPath(for: bytes("k2"))!, 20) == 0)
            try store.debugOverwriteRecord(for: bytes("k3"), with: [1, 2, 3])
            // When/Then
            let found = try store.verify()
            #expect(found.missingBodies == 1 && found.damagedBodies == 1 && found.unreadableRecords == 1)
            #expect(found.isDamaged)
            let fixed = try store.verify(fix: true)
            #expect(fixed.repaired >= 3)
            let clean = try store.verify(checkBodies: true)
            #expect(clean.isDamaged == false, "\(clean)")
            #expect(try store.statistics().entries == 17)
        }
        // Given: the index is lost.
        for name in ["index.lmdb", "index.lmdb-lock"] {
            try FileManager.default.removeItem(atPath: dir.cache + "/" + name)
        }
        let store = try CacheStore(directory: dir.cache, configuration: fileConfiguration())
        #expect(try store.statistics().entries == 0)
        // When: rebuilt from the body files' record copies.
        let report = try store.verify(rebuild: true)
        // Then: the 17 intact entries come back, and so does k3, whose record was garbage but
        // whose body file (with its record copy) was intact.
        #expect(report.rebuiltEntries == 18)
        #expect(try store.statistics().entries == 18)
        #expect(try store.record(for: bytes("k3"))?.head == bytes("head3"))
        #expect(try store.record(for: bytes("k1")) == nil, "the entry whose body was lost stays gone")
        let hit = try #require(try store.record(for: bytes("k7")))
        #expect(hit.body == makeBody(size: 3000, compressible: true, seed: 7))
        #expect(hit.head == bytes("head7"))
        #expect(try store.verify().isDamaged == false)
    }

    @Test("verify without checkBodies rejects every body header a lookup rejects: magic, format, raw flag")
    func verifyChecksHeadersAsLookupsDo() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache, configuration: fileConfiguration())
        for i in 0..<4 {
            try store.store(
                RecordDescriptor(key: bytes("k\(i)")), body: makeBody(size: 3000, compressible: true, seed: UInt64(i)))
        }
        // Given: one header byte changed in each of three body files (offsets of docs/Formats.md).
        for (key, offset, value) in [("k0", 0, UInt8(0x00)), ("k1", 5, UInt8(0x09)), ("k2", 6, UInt8(0x02))] {
            let handle = try #require(
                FileHandle(forUpdatingAtPath: dir.cache + "/" + store.debugBodyPath(for: bytes(key))!))
            try handle.seek(toOffset: UInt64(offset))
            handle.write(Data([value]))
            try handle.close()
        }
        // Then: verify's header check (no payload read) finds the three as lookups do: two damaged,
        // one of another format (another release's: a miss, never purged); and lookups miss the
        // same three (a lookup purges what it finds damaged, so it goes second).
        let found = try store.verify()
        #expect(found.damagedBodies == 2 && found.otherFormatEntries == 1, "\(found)")
        #expect(try store.verify(fix: true).repaired == 2)
        for key in ["k0", "k1", "k2"] { #expect(try store.record(for: bytes(key)) == nil, "\(key) reads as a miss") }
        #expect(try store.record(for: bytes("k3"))?.body == makeBody(size: 3000, compressible: true, seed: 3))
    }

    @Test("the online hard cap evicts in the store's own commit, and refuses what cannot fit")
    func hardCap() throws {
        let dir = TestDirectory()
        var configuration = fileConfiguration()
        configuration.hardCapacityBytes = 200_000
        let store = try CacheStore(directory: dir.cache, configuration: configuration)
        for i in 0..<100 {
            try store.store(
                RecordDescriptor(key: bytes("k\(i)")),
                body: makeBody(size: 10_000, compressible: false, seed: UInt64(i)))
        }
        let stats = try store.statistics()
        #expect(stats.storedBytes + stats.recordBytes <= 200_000)
        #expect(stats.evictions > 0)
        #expect(try store.version(for: bytes("k99")) != nil)
        do {
            try store.store(RecordDescriptor(key: bytes("huge")), body: makeBody(size: 300_000, compressible: false))
            Issue.record("a body larger than the cap was stored")
        } catch {
            #expect(error.code == .overCapacity)
        }
        #expect(try bodyFiles(dir).count == (try store.statistics().entries), "no body file left behind")
    }

    @Test(
        "a store at the capacity replaces its entry in place: when its eviction takes the entry itself, when the record there is damaged, when it moves partitions; a refused one takes its entry with it"
    )
    func hardCapReplacing() throws {
        let dir = TestDirectory()
        let cap = 200_000
        var configuration = fileConfiguration()
        configuration.hardCapacityBytes = cap
        let store = try CacheStore(directory: dir.cache, configuration: configuration)
        func put(_ key: String, size: Int = 10_000, seed: UInt64, partition: String = "") throws -> [UInt8] {
            let body = makeBody(size: size, compressible: false, seed: seed)
            try store.store(RecordDescriptor(key: bytes(key), partition: bytes(partition)), body: body)
            return body
        }
        func expectHeld(_ what: String) throws {
            #expect(try store.diskUsage(measure: false).entryBytes <= cap, "\(what)")
            let report = try store.verify(checkBodies: true)
            #expect(!report.isDamaged && report.strayIndexKeys == 0, "\(what): \(report)")
            // The damaged record's body file no record names: an orphan, which verify counts.
            #expect(
                try bodyFiles(dir).count == (try store.statistics().entries) + Int(report.orphanFiles),
                "\(what): no body file left behind but the orphan, \(report)")
        }
        for i in 0..<30 { _ = try put("k\(i)", seed: UInt64(i)) }
        // The least recently used entry, stored again twice as large: the room it counted on goes
        // with it when the eviction takes it, and is made again without it.
        let oldest = try #require(try (0..<30).first { try store.version(for: bytes("k\($0)")) != nil })
        let larger = try put("k\(oldest)", size: 20_000, seed: 100)
        #expect(try store.record(for: bytes("k\(oldest)"))?.body == larger)
        try expectHeld("the victim stored again")
        // A record another release (or damage) left there: replaced, counted out as it was counted in.
        try store.debugOverwriteRecord(for: bytes("k29"), with: [1, 2, 3])
        _ = try store.verify(fix: true)
        let fresh = try put("k29", seed: 101)
        #expect(try store.record(for: bytes("k29"))?.body == fresh)
        try expectHeld("over a damaged record")
        // The same key from another partition.
        _ = try put("k28", seed: 102, partition: "p")
        try PartitionCounterTests.expectCountersMatchWalk(store)
        try expectHeld("into another partition")
        // Refused (larger than the capacity): the response it would have replaced is gone too.
        let refused = #expect(throws: CacheError.self) { _ = try put("k27", size: 300_000, seed: 103) }
        #expect(refused?.code == .overCapacity)
        #expect(try store.version(for: bytes("k27")) == nil)
        try expectHeld("after a refused store")
    }

    @Test("forEachRecord lists every entry without bodies")
    func listing() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        for i in 0..<2500 {
            try store.store(
                RecordDescriptor(key: bytes("k\(i)"), partition: bytes(i % 2 == 0 ? "a" : "b")), body: bytes("v"))
        }
        var seen = Set<String>(), inA = 0
        try store.forEachRecord(batchSize: 1000) { record in
            seen.insert(String(decoding: record.key, as: UTF8.self))
            if record.partition == bytes("a") { inA += 1 }
            return record.body == nil
        }
        #expect(seen.count == 2500 && inA == 1250)
    }
}
