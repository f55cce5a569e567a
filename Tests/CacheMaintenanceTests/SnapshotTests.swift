import CacheMaintenance
import Foundation
import SharedURLCacheStore
import Testing
import TestProcess

/// `urlcache export` and `urlcache import` as real processes: a snapshot taken while another
/// process stores, imported whole into a second directory; damaged, truncated and foreign files
/// refused; a small capacity held.
@Suite(.blockingWaits, .timeLimit(.minutes(10)))
struct SnapshotTests {
    /// Entries with everything a snapshot carries: partitions, tags, heads, userInfo, old store
    /// times, compressible and incompressible bodies, an empty body, one stored uncompressed.
    static func fill(_ store: CacheStore, count: Int) throws -> [RecordDescriptor] {
        var descriptors: [RecordDescriptor] = []
        for index in 0..<count {
            let descriptor = RecordDescriptor(
                key: bytes("fixed-\(index)"), variant: index % 5 == 0 ? bytes("variant-\(index)") : [],
                partition: bytes(index % 3 == 0 ? "tenant-a" : ""), head: bytes("head \(index)"),
                userInfo: index % 2 == 0 ? bytes("info \(index)") : [],
                storedAt: Date(timeIntervalSince1970: 1_700_000_000.123 + Double(index)), appFlags: UInt32(index % 4),
                storeUncompressed: index == 7, tags: index % 4 == 0 ? ["group-\(index % 8)"] : [])
            try store.store(descriptor, body: body(index))
            descriptors.append(descriptor)
        }
        return descriptors
    }

    static func body(_ index: Int) -> [UInt8] {
        switch index % 3 {
        case 0: randomBody(size: 1000 + index * 997, seed: UInt64(index))
        case 1: Array(String(repeating: "entry \(index) ", count: 50 + index * 20).utf8)
        default: index == 2 ? [] : randomBody(size: 150_000 + index, seed: UInt64(index))
        }
    }

    private func urlcache(_ arguments: [String]) async throws -> ChildProcess.Outcome {
        try await runBlocking { try ChildProcess.run(builtExecutable("urlcache"), arguments) }
    }

    @Test("a snapshot exported while another process stores imports into a second directory with the same entries")
    func exportWhileStoringThenImport() async throws {
        let source = TestDirectory()
        let target = TestDirectory()
        let store = try CacheStore(directory: source.cache, configuration: fileConfiguration())
        let descriptors = try Self.fill(store, count: 40)
        // Another process stores, replaces and removes its own keys throughout the export.
        let writer = try ChildProcess(
            builtExecutable("CacheWorker"), ["mixed", source.cache, "7", "4", "200", "1", "200000"])
        try await Task.sleep(for: .milliseconds(300))
        let snapshot = source.root + "/snapshot.sucsnap"
        let export = try await urlcache(["export", source.cache, snapshot, "--json"])
        #expect(export.status == 0, "\(export.err)")
        let writerOutcome = try await runBlocking { writer.finish(deadline: 60) }
        #expect(writerOutcome.status == 0, "\(writerOutcome.err)")
        #expect(!FileManager.default.fileExists(atPath: snapshot + ".partial"))

        _ = try CacheStore(directory: target.cache) // an existing directory, as import wants
        let imported = try await urlcache(["import", target.cache, snapshot, "--json"])
        #expect(imported.status == 0, "\(imported.err)")
        let report = try #require(JSONSerialization.jsonObject(with: Data(imported.out.utf8)) as? [String: Any])
        let exported = try #require(JSONSerialization.jsonObject(with: Data(export.out.utf8)) as? [String: Any])
        #expect(report["imported"] as? Int == exported["entries"] as? Int)
        #expect((report["entries"] as? Int ?? 0) >= 40)

        // Every fixed entry: the same head, body, partition, tags, flags and store time.
        let copy = try CacheStore(directory: target.cache)
        for (index, descriptor) in descriptors.enumerated() {
            let record = try #require(try copy.record(for: descriptor.key, variant: descriptor.variant))
            #expect(record.body == Self.body(index))
            #expect(record.head == descriptor.head && record.userInfo == descriptor.userInfo)
            #expect(record.partition == descriptor.partition && record.tags == descriptor.tags)
            #expect(record.appFlags == descriptor.appFlags)
            if descriptor.storeUncompressed { #expect(!record.isCompressed) }
            #expect(
                abs(record.storedAt.timeIntervalSince(descriptor.storedAt)) < 0.002,
                "\(record.storedAt) vs \(descriptor.storedAt)")
        }
        // The other process's entries came over whole: each is one version of its key, untorn.
        var workerEntries = 0
        try copy.forEachRecord { record in
            if String(decoding: record.key, as: UTF8.self).hasPrefix("https://") { workerEntries += 1 }
            return true
        }
        #expect(workerEntries > 0)
        let verify = try await urlcache(["verify", target.cache, "--check-bodies"])
        #expect(verify.status == 0, "\(verify.out)")
        // Tags work in the copy: the postings were written by the normal store path.
        let purge = try await urlcache(["purge", target.cache, "--tag", "group-0", "--json"])
        #expect(purge.status == 0 && purge.out.contains("\"removed_entries\":5"), "\(purge.out)")

        // Importing again keeps everything (the directory's copies are not older).
        let again = try await urlcache(["import", target.cache, snapshot, "--json"])
        let second = try #require(JSONSerialization.jsonObject(with: Data(again.out.utf8)) as? [String: Any])
        #expect(second["imported"] as? Int == 5, "only the purged entries come back: \(again.out)")
    }

    @Test(
        "a truncated, a byte-flipped and a foreign snapshot are refused with exit 5, and nothing past the damage is stored"
    )
    func damagedSnapshotsAreRefused() async throws {
        let source = TestDirectory()
        let store = try CacheStore(directory: source.cache, configuration: fileConfiguration())
        let descriptors = try Self.fill(store, count: 30)
        let snapshot = source.root + "/snapshot.sucsnap"
        let export = try await urlcache(["export", source.cache, snapshot])
        #expect(export.status == 0, "\(export.err)")
        let original = try Data(contentsOf: URL(fileURLWithPath: snapshot))

        func importing(_ data: Data, _ name: String, dryRun: Bool = false) async throws -> (
            ChildProcess.Outcome, CacheStore
        ) {
            let target = TestDirectory()
            let copy = try CacheStore(directory: target.cache)
            let file = target.root + "/" + name
            try data.write(to: URL(fileURLWithPath: file))
            let outcome = try await urlcache(["import", target.cache, file] + (dryRun ? ["--dry-run"] : []))
            return (outcome, copy)
        }

        // Cut short in the middle of a body: the entries before it stay, nothing after.
        let (truncated, truncatedCopy) = try await importing(original.prefix(original.count / 2), "cut.sucsnap")
        #expect(truncated.status == 5, "\(truncated.err)")
        #expect(truncated.err.contains("snapshot truncated: it ends at byte \(original.count / 2)"), "\(truncated.err)")
        let kept = try truncatedCopy.statistics().entries
        #expect(kept > 0 && kept < 30)
        #expect(truncated.err.contains("\(kept) entries before it were imported"), "\(truncated.err)")
        // Only whole entries, and the snapshot's order is the source's walk order: a prefix.
        for (index, descriptor) in descriptors.enumerated() {
            if let record = try truncatedCopy.record(for: descriptor.key, variant: descriptor.variant) {
                #expect(record.body == Self.body(index))
            }
        }

        // One byte flipped in the middle: refused at the entry it hits.
        var flipped = original
        flipped[original.count / 2] ^= 0x40
        let (damaged, damagedCopy) = try await importing(flipped, "flipped.sucsnap")
        #expect(damaged.status == 5, "\(damaged.err)")
        #expect(damaged.err.contains("snapshot damaged at byte"), "\(damaged.err)")
        #expect(try damagedCopy.statistics().entries < 30)
        // --dry-run finds the same damage and stores nothing.
        let (checked, checkedCopy) = try await importing(flipped, "flipped.sucsnap", dryRun: true)
        #expect(checked.status == 5 && checked.err.contains("snapshot damaged at byte"))
        #expect(try checkedCopy.statistics().entries == 0)

        // A flipped byte in the trailer (its count) is found too.
        var trailer = original
        trailer[original.count - 30] ^= 0x01
        let (badTrailer, _) = try await importing(trailer, "trailer.sucsnap")
        #expect(badTrailer.status == 5 && badTrailer.err.contains("damaged"), "\(badTrailer.err)")

        // Not a snapshot at all.
        let (foreign, foreignCopy) = try await importing(Data("{\"not\": \"a snapshot\"}\n".utf8), "x.json")
        #expect(foreign.status == 5 && foreign.err.contains("not a urlcache snapshot"), "\(foreign.err)")
        #expect(try foreignCopy.statistics().entries == 0)

        // The original still imports whole.
        let (whole, wholeCopy) = try await importing(original, "whole.sucsnap")
        #expect(whole.status == 0, "\(whole.err)")
        #expect(try wholeCopy.statistics().entries == 30)
    }

    @Test("importing into a small capacity holds it: older entries are evicted as the import stores")
    func importHoldsTheCapacity() async throws {
        let source = TestDirectory()
        let store = try CacheStore(directory: source.cache, configuration: fileConfiguration())
        for index in 0..<60 {
            try store.store(
                RecordDescriptor(key: bytes("big-\(index)"), storedAt: Date(timeIntervalSinceNow: -60)),
                body: randomBody(size: 40_000, seed: UInt64(index)))
        }
        let snapshot = source.root + "/snapshot.sucsnap"
        #expect(try await urlcache(["export", source.cache, snapshot]).status == 0)

        let target = TestDirectory()
        let copy = try CacheStore(directory: target.cache)
        let capacity = 512 << 10
        let imported = try await urlcache(["import", target.cache, snapshot, "--disk-capacity", "512KiB", "--json"])
        #expect(imported.status == 0, "\(imported.err)")
        let usage = try copy.diskUsage(measure: true)
        #expect(usage.entryBytes <= capacity, "\(usage)")
        let statistics = try copy.statistics()
        #expect(statistics.entries > 0 && statistics.entries < 60)
        #expect(statistics.evictions > 0)
    }

    @Test("the snapshot's CRC-32 is zlib's")
    func crc() {
        #expect(SnapshotCRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(SnapshotCRC32.checksum([]) == 0)
    }
}
