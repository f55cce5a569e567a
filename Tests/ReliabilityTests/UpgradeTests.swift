import Foundation
import SharedURLCacheStore
import Testing
import TestProcess

/// The entry the earlier-release worker (Tests/Fixtures/earlier-release/worker.c) stores as
/// number `i`, rebuilt here by the same rules.
struct EarlierReleaseEntry {
    let i: Int
    var key: [UInt8] { Array("old-\(i)".utf8) }
    var variant: [UInt8] { i % 2 == 1 ? Array("v\(i % 2)".utf8) : [] }
    var partition: [UInt8] { Array("p\(i % 3)".utf8) }
    var head: [UInt8] { Array("head-\(i)".utf8) }
    var userInfo: [UInt8] { Array("ui-\(i)".utf8) }
    var body: [UInt8] {
        if i % 3 == 0 {
            var x = UInt32(truncatingIfNeeded: i) &* 2_654_435_761 &+ 1
            return (0..<20_000).map { _ in
                x = x &* 1_103_515_245 &+ 12_345
                return UInt8(x >> 24)
            }
        }
        return Array(String(repeating: "{\"old\":\(i)}", count: 40).utf8)
    }

    /// Whether `store` serves this entry bit-exact: body, head, userInfo, partition.
    func isServed(by store: CacheStore) throws -> Bool {
        guard let record = try store.record(for: key, variant: variant) else { return false }
        return record.body == body && record.head == head && record.userInfo == userInfo
            && record.partition == partition
    }
}

extension Reliability {
    /// Two releases on one directory during a rolling upgrade: the release before index
    /// generations (commit 6538a5b, its C core built from git history) and this one.
    @Suite struct Upgrade {
        static let earlierRelease = "6538a5b"

        /// Builds the earlier release's worker (a failed build is recorded as an issue).
        static func earlierWorker(in scratch: Scratch) throws -> URL {
            let out = scratch.root + "/earlier-worker"
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .appendingPathComponent("../Fixtures/earlier-release/build.sh").standardized
            let build = try ChildProcess.run(URL(fileURLWithPath: "/bin/bash"), [script.path, earlierRelease, out])
            #expect(build.status == 0, "building the earlier release's worker: \(build.err)")
            return URL(fileURLWithPath: out)
        }

        @Test(
            "an earlier release storing while this one stores and compacts: nothing lost, the index rewrite waits for it, and afterwards it refuses the directory without harm"
        )
        func rollingUpgrade() throws {
            let scratch = Scratch()
            let dir = scratch.cache
            let earlier = try Self.earlierWorker(in: scratch)
            // Given: the earlier release creates the directory and keeps storing.
            let writer = try ChildProcess(earlier, [dir, "store", "120"])
            #expect(writer.waitForLines(startingWith: "ACK old-"), "the earlier release stores")
            // When: this release joins, bloats the index with entries it then removes, and
            // compacts while the earlier writer still runs.
            let store = try CacheStore(directory: dir)
            // A quota the earlier release would not obey is refused while it has the directory open.
            let refused = #expect(throws: CacheError.self) {
                try store.setPartitionQuota(Array("p1".utf8), maxBytes: 1 << 20, allowNewPartition: true)
            }
            #expect(refused?.code == .unsupportedVersion && refused?.message.contains("earlier release") == true)
            // So is the upgrade to format 2, which the earlier release could not follow.
            let notYet = #expect(throws: CacheError.self) { try store.upgradeDirectoryFormat() }
            #expect(
                notYet?.code == .busy && notYet?.message.contains("earlier release") == true,
                "\(String(describing: notYet))")
            #expect(try store.statistics().directoryFormat == 1)
            // The URL order can be kept meanwhile: what the earlier release stores has no posting.
            try store.setKeyOrder(kept: true)
            // Incompressible 1.8 KB bodies: inline, each record on its own overflow page.
            var x: UInt32 = 7
            let filler = (0..<1800).map { _ -> UInt8 in
                x = x &* 1_103_515_245 &+ 12_345; return UInt8(x >> 24)
            }
            for i in 0..<3000 { try store.store(RecordDescriptor(key: Array("new-\(i)".utf8)), body: filler) }
            for i in 0..<3000 where i % 10 != 0 { try store.remove(key: Array("new-\(i)".utf8)) }
            let during = try store.compact(CompactionPolicy())
            // Then: the rewrite would retire index.lmdb under the earlier writer: it waits.
            #expect(during.indexRewriteDeferred && during.indexRewrites == 0, "\(during)")
            // The report names the reason and the process, for the operator.
            #expect(during.indexRewriteDeferral?.reason == .earlierRelease, "\(during)")
            #expect(during.indexRewriteDeferral?.earlierReleasePid == Int(writer.pid), "\(during)")
            #expect(FileManager.default.fileExists(atPath: dir + "/index.lmdb"))
            // The earlier release is stopped the hard way (a crash loses no acknowledged store).
            let result = writer.killed()
            #expect(writer.wasSignalled, "earlier writer: \(result.err)")
            let acked = result.out.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
                .filter { $0.hasPrefix("ACK old-") }.compactMap { Int($0.dropFirst(8)) }
            #expect(acked.count > 10, "the earlier writer made progress")
            // Every acknowledged store of the earlier release is served bit-exact by this one.
            for i in acked { #expect(try EarlierReleaseEntry(i: i).isServed(by: store), "old-\(i)") }
            for i in stride(from: 0, to: 3000, by: 10) {
                #expect(try store.record(for: Array("new-\(i)".utf8))?.body == filler)
            }
            // It keeps no partition counters: stats and verify say so, and verify --fix counts them.
            #expect(try !store.partitionCounters().exact)
            #expect(try !store.verify().partitionCountersMatch)
            // Nor key-order postings: a purge by URL prefix cannot trust them until verify --fix.
            #expect(try store.keyOrderState() == (kept: true, complete: false))
            _ = try store.verify(fix: true)
            #expect(try store.partitionCounters().exact && store.verify().partitionCountersMatch)
            #expect(try store.keyOrderState() == (kept: true, complete: true))
            // Once the earlier release is gone, the same compaction rewrites the index.
            let after = try store.compact(CompactionPolicy())
            #expect(!after.indexRewriteDeferred && after.indexRewrites >= 1, "\(after)")
            #expect(after.indexRewriteDeferral == nil, "\(after)")
            #expect(after.indexBytesAfter < after.indexBytesBefore)
            #expect(!FileManager.default.fileExists(atPath: dir + "/index.lmdb"))
            for i in acked { #expect(try EarlierReleaseEntry(i: i).isServed(by: store), "old-\(i) after the rewrite") }
            // An earlier release started now refuses the directory and changes nothing.
            let entries = try store.statistics().entries
            let late = try ChildProcess.run(earlier, [dir, "open"])
            #expect(late.status == 2 && late.err.contains("not a cache"), "\(late.status): \(late.err)")
            #expect(try store.statistics().entries == entries)
            #expect(try !store.verify(checkBodies: true).isDamaged)
            // With the earlier release gone, the upgrade to format 2 goes through; nothing is lost.
            let upgraded = try store.upgradeDirectoryFormat()
            #expect(upgraded.formatBefore == 1 && upgraded.formatAfter == 2, "\(upgraded)")
            #expect(try store.statistics().entries == entries)
            for i in acked { #expect(try EarlierReleaseEntry(i: i).isServed(by: store), "old-\(i) after the upgrade") }
            let verification = try store.verify(checkBodies: true)
            #expect(!verification.isDamaged && verification.strayIndexKeys == 0, "\(verification)")
        }

        @Test("a directory this release creates (format 2) is refused by the earlier release, which changes nothing")
        func newDirectoryRefusedByEarlierRelease() throws {
            let scratch = Scratch()
            let earlier = try Self.earlierWorker(in: scratch)
            let dir = scratch.root + "/new"
            let store = try CacheStore(directory: dir)
            let entry = EarlierReleaseEntry(i: 3)
            try store.store(
                RecordDescriptor(
                    key: entry.key, variant: entry.variant, partition: entry.partition, head: entry.head,
                    userInfo: entry.userInfo), body: entry.body)
            #expect(try store.statistics().directoryFormat == 2)
            let refused = try ChildProcess.run(earlier, [dir, "open"])
            #expect(refused.status == 2 && refused.err.contains("format 2"), "\(refused.status): \(refused.err)")
            #expect(try entry.isServed(by: store))
            #expect(try !store.verify(checkBodies: true).isDamaged)
        }

        @Test(
            "the golden directory of the earlier release opens, serves every entry bit-exact, compacts, verifies and rebuilds"
        )
        func goldenDirectory() throws {
            let scratch = Scratch()
            // The directory 6538a5b wrote (Tests/Fixtures/earlier-release/make-golden.sh).
            let golden = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .appendingPathComponent("../Fixtures/earlier-release/golden-\(Self.earlierRelease).tar.gz").standardized
            let unpack = try ChildProcess.run(
                URL(fileURLWithPath: "/bin/tar"), ["-xzf", golden.path, "-C", scratch.root])
            #expect(unpack.status == 0, "\(unpack.err)")
            let dir = scratch.root + "/golden"
            do { // (the handle closes at the end of this scope, before the index is lost)
                let store = try CacheStore(directory: dir)
                #expect(try store.statistics().directoryFormat == 1, "the earlier release's directory keeps its format")
                for i in 0..<60 { #expect(try EarlierReleaseEntry(i: i).isServed(by: store), "old-\(i)") }
                // Its usage counters are complete on first open (file_bytes counted from the records).
                let usage = try store.diskUsage(measure: true)
                #expect(usage.totalBytes == allocatedBytes(under: dir) && usage.leftoverBytes == 0, "\(usage)")
                // Its partition counters too, counted once from the records at that open.
                let partitions = try store.partitionCounters()
                #expect(partitions.exact && partitions.partitions.map(\.entries) == [20, 20, 20], "\(partitions)")
                #expect(try store.verify().partitionCountersMatch)
                try store.rewriteIndex()
                for i in 0..<60 {
                    #expect(try EarlierReleaseEntry(i: i).isServed(by: store), "old-\(i) after a rewrite")
                }
                #expect(try !store.verify(checkBodies: true).isDamaged)
                #expect(try store.verify().inlineEntries == 40)
            }
            // Losing the index: a rebuild restores the 20 entries with body files.
            let generation = try FileManager.default.contentsOfDirectory(atPath: dir).first {
                $0.hasPrefix("index.g") && $0.hasSuffix(".lmdb")
            }
            try FileManager.default.removeItem(atPath: dir + "/" + #require(generation))
            let reopened = try CacheStore(directory: dir)
            let rebuilt = try reopened.verify(fix: true, rebuild: true)
            #expect(rebuilt.rebuiltEntries == 20)
            for i in stride(from: 0, to: 60, by: 3) {
                #expect(try EarlierReleaseEntry(i: i).isServed(by: reopened), "old-\(i) rebuilt")
            }
        }
    }
}
