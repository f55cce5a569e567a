import CacheMaintenance
import Foundation
import SharedURLCacheStore
import Testing
import TestProcess

/// What killed writers leave behind (temp files, orphan bodies, unpublished index generations)
/// is counted in the directory's usage, reported by verify, and reclaimed by compaction once
/// older than the grace period.
@Suite(.blockingWaits) struct LeftoverTests {
    @Test("leftovers are in the measured usage and in verify, and compaction past the grace removes them")
    func leftovers() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache, configuration: fileConfiguration())
        for i in 0..<20 {
            try store.store(RecordDescriptor(key: bytes("k\(i)")), body: randomBody(size: 20_000, seed: UInt64(i)))
        }
        let clean = try store.diskUsage(measure: true)
        #expect(clean.leftoverBytes == 0 && clean.totalBytes == allocatedBytes(under: dir.cache))
        // Given: what a writer killed mid-store leaves (a temp file), a body file no record names,
        // and an index generation a compactor killed before publishing it left.
        let junk = [UInt8](repeating: 7, count: 50_000)
        FileManager.default.createFile(
            atPath: dir.cache + "/tmp/t0123456789abcdef0123456789abcdef", contents: Data(junk))
        // (Stores make fan-out directories as they need them: bodies/ab may not exist yet.)
        try FileManager.default.createDirectory(atPath: dir.cache + "/bodies/ab", withIntermediateDirectories: true)
        FileManager.default.createFile(
            atPath: dir.cache + "/bodies/ab/ab0000000000000000000000000000ff", contents: Data(junk))
        FileManager.default.createFile(atPath: dir.cache + "/index.g1.lmdb", contents: Data(junk))
        // Then: measured usage counts them, as du does.
        let usage = try store.diskUsage(measure: true)
        #expect(usage.totalBytes == allocatedBytes(under: dir.cache))
        #expect(usage.leftoverBytes >= 3 * 49_152, "\(usage)")
        #expect(usage.leftoverFiles >= 2)
        #expect(usage.entryBytes == clean.entryBytes)
        let verification = try store.verify()
        #expect(verification.orphanFiles == 1 && verification.tempFiles == 1)
        #expect(verification.leftoverBytes >= 2 * 49_152)
        #expect(verification.inlineEntries == 0 && !verification.isDamaged)
        // A compaction inside the grace period leaves them (an in-flight store may own them).
        _ = try store.compact(CompactionPolicy())
        #expect(FileManager.default.fileExists(atPath: dir.cache + "/tmp/t0123456789abcdef0123456789abcdef"))
        // Past it, one compaction removes all three, and du is back to the clean figure.
        var policy = CompactionPolicy()
        policy.gracePeriod = .zero
        _ = try store.compact(policy)
        let after = try store.diskUsage(measure: true)
        #expect(after.leftoverBytes == 0 && after.leftoverFiles == 0, "\(after)")
        #expect(!FileManager.default.fileExists(atPath: dir.cache + "/index.g1.lmdb"))
        #expect(allocatedBytes(under: dir.cache) == after.totalBytes)
        for i in 0..<20 {
            #expect(try store.record(for: bytes("k\(i)"))?.body == randomBody(size: 20_000, seed: UInt64(i)))
        }
    }

    @Test("verify counts the entries a rebuild could not restore (bodies inside the index)")
    func inlineEntries() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        for i in 0..<5 { try store.store(RecordDescriptor(key: bytes("small\(i)")), body: bytes("{\"n\":\(i)}")) }
        try store.store(RecordDescriptor(key: bytes("large")), body: randomBody(size: 30_000, seed: 1))
        #expect(try store.verify().inlineEntries == 5)
    }
}
