import Foundation
import SharedURLCacheStore
import Testing
import TestProcess

extension Reliability.LimitsAndFormat {
    @Test(
        "T18 format 1 → 2 beside a storing process, killed in the middle and run again: every acknowledged store kept, remove-since exact in between and after, verify clean"
    )
    func upgradeUnderLoad() throws {
        let scratch = Scratch()
        let dir = scratch.cache, acks = AckFile(scratch.root + "/acks")
        _ = try CacheStore(directory: dir) // an empty directory, then marked format 1
        guard try Self.setFormat(dir, valueHex: "0100000000000000") else {
            print("T18 skipped: mdb_dump/mdb_load missing"); return
        }
        let now = Date()
        let ahead = now.addingTimeInterval(86400)
        do {
            let store = try CacheStore(directory: dir)
            #expect(try store.statistics().directoryFormat == 1)
            for i in 0..<2500 {
                try store.store(
                    RecordDescriptor(key: Array("past-\(i)".utf8), storedAt: now.addingTimeInterval(-1000 - Double(i))),
                    body: Array("p\(i)".utf8))
            }
            // Stored ahead of the clock: in format 1 their use-order key is their last use (now),
            // so the upgrade must move them to their stored time.
            for i in 0..<300 {
                try store.store(
                    RecordDescriptor(key: Array("ahead-\(i)".utf8), storedAt: ahead.addingTimeInterval(Double(i))),
                    body: Array("a\(i)".utf8))
            }
        }
        // Given: another process storing all along.
        let writer = try Child(["writer", dir, String(runSeed("upgradeUnderLoad")), "1", "200"])
        #expect(writer.waitForLines(startingWith: "ACK "), "the writer stored")
        // When: an upgrade dies at its third commit (format 2 written, one batch of the main table
        // moved, the rest not), and the store is asked for remove-since meanwhile.
        let killed = try Child.run(["rel-upgrade", dir, "3"])
        #expect(killed.status != 0 && !killed.out.contains("UPGRADED"), "the upgrade died: \(killed)")
        let store = try CacheStore(directory: dir)
        #expect(try store.statistics().directoryFormat == 2)
        #expect(try store.removeAll(storedSince: ahead.addingTimeInterval(150)) == 150, "exact while unfinished")
        // Then: run again, it finishes.
        let again = try Child.run(["rel-upgrade", dir, "0"])
        #expect(again.status == 0 && again.out.hasPrefix("UPGRADED 2 2 "), "\(again)")
        let w = writer.killed()
        #expect(acks.append(w.out) > 0, "the writer made progress")
        #expect(try store.removeAll(storedSince: ahead) == 150, "exact after: the moved entries are found")
        #expect(try store.removeAll(storedSince: now.addingTimeInterval(-500)) > 0, "the writer's entries")
        for i in stride(from: 0, to: 2500, by: 50) {
            #expect(try store.record(for: Array("past-\(i)".utf8))?.body == Array("p\(i)".utf8), "past-\(i)")
        }
        let verification = try store.verify(checkBodies: true)
        #expect(!verification.isDamaged && verification.strayIndexKeys == 0, "\(verification)")
        // Running it on a directory of format 2 changes nothing.
        let twice = try store.upgradeDirectoryFormat()
        #expect(twice.formatBefore == 2 && twice.formatAfter == 2 && twice.droppedStoredTimeKeys == 0, "\(twice)")
    }

    @Test("T18 an upgrade of a directory that holds entries stored ahead of their use moves each to its stored time")
    func upgradeMovesEntriesStoredAhead() throws {
        let scratch = Scratch()
        let ahead = Date(timeIntervalSinceNow: 3600)
        guard let store = try Self.formatOneStore(scratch.cache, entries: 40, aheadEvery: 4, ahead: ahead) else {
            return
        }
        let done = try store.upgradeDirectoryFormat()
        #expect(done.formatBefore == 1 && done.formatAfter == 2, "\(done)")
        #expect(done.rekeyedEntries == 10 && done.droppedStoredTimeKeys == 40, "\(done)")
        #expect(try store.statistics().directoryFormat == 2)
        #expect(try store.removeAll(storedSince: ahead) == 10)
        let verification = try store.verify()
        #expect(!verification.isDamaged && verification.strayIndexKeys == 0, "\(verification)")
    }

    @Test(
        "T18 while an upgrade is unfinished: statistics give the new format to a handle opened before it, verify finds no strays, and an entry stored ahead and changed before the re-keying reaches it leaves no stray key"
    )
    func upgradeUnfinishedSeenFromAnotherHandle() throws {
        let scratch = Scratch()
        let dir = scratch.cache
        let ahead = Date(timeIntervalSinceNow: 3600)
        guard let store = try Self.formatOneStore(dir, entries: 20, aheadEvery: 2, ahead: ahead) else { return }
        #expect(try store.statistics().directoryFormat == 1)
        // Given: an upgrade by another process that dies at its second commit: format 2 and the
        // marker written, no entry re-keyed yet.
        let killed = try Child.run(["rel-upgrade", dir, "2"])
        #expect(killed.status != 0 && !killed.out.contains("UPGRADED"), "the upgrade died: \(killed)")
        // Then: this handle, which has not written since, reports the directory's format.
        #expect(try store.statistics().directoryFormat == 2)
        // When: entries stored ahead are stored again (now) and removed before the re-keying (and
        // this handle, having written, now keeps format 2's one order).
        for i in [0, 2, 4] { try store.store(RecordDescriptor(key: Array("k\(i)".utf8)), body: [9]) }
        #expect(try store.remove(key: Array("k6".utf8)) == 1)
        // Then: the stored-time order's keys the upgrade has yet to drop are not damage.
        let during = try store.verify()
        #expect(!during.isDamaged && during.strayIndexKeys == 0, "\(during)")
        let again = try Child.run(["rel-upgrade", dir, "0"])
        #expect(again.status == 0 && again.out.hasPrefix("UPGRADED 2 2 "), "\(again)")
        // Then: no key is left at their format 1 place.
        let after = try store.verify()
        #expect(!after.isDamaged && after.strayIndexKeys == 0, "\(after)")
        #expect(try store.removeAll(storedSince: ahead) == 6, "the other entries stored ahead")
    }

    @Test("format 1 → 2 under S3-FIFO: a use-order key the upgrade moves takes the entry's place along")
    func upgradeCarriesQueuePlaces() throws {
        let scratch = Scratch()
        let ahead = Date().addingTimeInterval(86400)
        _ = try CacheStore(directory: scratch.cache)
        guard try Self.setFormat(scratch.cache, valueHex: "0100000000000000") else {
            print("skipped: mdb_dump/mdb_load missing")
            return
        }
        let store = try CacheStore(directory: scratch.cache)
        try store.setEvictionPolicy(.s3fifo)
        // Every third stored ahead of its use: format 1 keys it at its use, the upgrade moves it.
        for i in 0..<30 {
            let storedAt = i % 3 == 0 ? ahead : Date(timeIntervalSinceNow: -60)
            try store.store(RecordDescriptor(key: Array("k\(i)".utf8), storedAt: storedAt), body: [UInt8(i)])
        }
        let before = try store.verify()
        #expect(!before.isDamaged && before.strayIndexKeys == 0, "\(before)")
        let upgrade = try store.upgradeDirectoryFormat()
        #expect(upgrade.formatAfter == 2, "\(upgrade)")
        // A place left behind would leave its queue key naming an entry with none.
        let after = try store.verify()
        #expect(!after.isDamaged && after.strayIndexKeys == 0, "\(after)")
        #expect(try store.removeAll(storedSince: ahead) == 10)
    }

    /// A directory of format 1 holding `entries` entries "k0"…, every `aheadEvery`-th stored at
    /// `ahead` (a stored time ahead of its use), the others a minute ago; nil when the tools that
    /// rewrite the format record are missing.
    static func formatOneStore(_ dir: String, entries: Int, aheadEvery: Int, ahead: Date) throws -> CacheStore? {
        _ = try CacheStore(directory: dir)
        guard try setFormat(dir, valueHex: "0100000000000000") else {
            print("T18 skipped: mdb_dump/mdb_load missing")
            return nil
        }
        let store = try CacheStore(directory: dir)
        for i in 0..<entries {
            let storedAt = i % aheadEvery == 0 ? ahead : Date(timeIntervalSinceNow: -60)
            try store.store(RecordDescriptor(key: Array("k\(i)".utf8), storedAt: storedAt), body: [UInt8(i)])
        }
        return store
    }
}
