import Foundation
import SharedURLCacheStore
import Testing

extension Reliability {
    /// `.relaxed` durability (docs/Formats.md, "The unsynced marker"): stores are not synced, a
    /// process crash still loses nothing, and a restart of the machine with unsynced stores is
    /// detected at open and answered by discarding the index, never by reading it.
    @Suite struct RelaxedDurability {
        /// What a restart looks like to the marker: another boot id where this boot's was.
        static func pretendRestart(_ cache: String) throws {
            let handle = try #require(FileHandle(forUpdatingAtPath: cache + "/unsynced"))
            defer { try? handle.close() }
            try handle.seek(toOffset: 8)
            handle.write(Data("00000000-0000-4000-8000-000000000000".utf8))
        }

        static func markerIsSet(_ cache: String) throws -> Bool {
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: cache + "/unsynced")))
            return bytes.count == 64 && bytes[48..<56].contains { $0 != 0 }
        }

        @Test("kill -9 of a relaxed writer loses no acknowledged store; a restart after it discards the index")
        func crashThenRestart() throws {
            let scratch = Scratch()
            let dir = scratch.cache, ackFile = scratch.root + "/acks"
            // Given: a process storing with .relaxed durability (beside a reader), killed mid-stream.
            let writers = [try Child(["rel-relaxed-writer", dir, "7", "0", "300"])]
            let reader = try Child(["reader", dir, "1", "300"])
            Thread.sleep(forTimeInterval: 1.5 * timeScale)
            for writer in writers { writer.kill9() }
            var acknowledged = 0
            for writer in writers { acknowledged += appendAcks(writer.finish().out, to: ackFile) }
            #expect(reader.finish().status == 0, "no torn read while the writer stored")
            #expect(acknowledged > 10, "the writers made progress (\(acknowledged))")
            // Then: every acknowledged store reads back, bit-exact (a process crash loses nothing),
            // and the directory says unsynced stores may exist.
            let verify = try Child.run(["verify", dir, ackFile])
            #expect(verify.status == 0, "\(verify.err)")
            #expect(try Self.markerIsSet(dir))

            // When: the machine restarted in that state.
            try Self.pretendRestart(dir)
            // Then: the next open discards the index instead of trusting it, and the cache works.
            let store = try CacheStore(directory: dir)
            #expect(store.discardedIndexAfterRestart)
            #expect(try store.statistics().entries == 0)
            try store.store(RecordDescriptor(key: Array("after".utf8)), body: [1, 2, 3])
            #expect(try store.record(for: Array("after".utf8))?.body == [1, 2, 3])
            #expect(try Child.run(["get", dir, "k0"]).status == 4)
            // The old body files are orphans, which a compaction sweeps.
            let report = try store.verify()
            #expect(!report.isDamaged && report.entries == 1, "\(report)")
            #expect(report.orphanFiles > 0, "the body files of the discarded index are found as orphans")
        }

        @Test("a clean close syncs and clears the marker: a restart afterwards keeps every entry")
        func cleanCloseSurvivesRestart() throws {
            let scratch = Scratch()
            let dir = scratch.cache
            for i in 0..<5 {
                let put = try Child.run(["rel-relaxed-put", dir, "key-\(i)", "1", String(i * 9000)])
                #expect(put.status == 0, "\(put.err)")
            }
            #expect(try !Self.markerIsSet(dir))
            try Self.pretendRestart(dir)
            let store = try CacheStore(directory: dir)
            #expect(!store.discardedIndexAfterRestart)
            #expect(try store.statistics().entries == 5)
            for i in 0..<5 { #expect(try Child.run(["get", dir, "key-\(i)"]).status == 0) }
        }

        @Test("a relaxed open of a directory that is not a cache refuses it and writes nothing into it")
        func notACacheStaysUntouched() throws {
            let scratch = Scratch()
            let dir = scratch.root + "/home-like"
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            FileManager.default.createFile(atPath: dir + "/notes.txt", contents: Data("mine".utf8))
            var configuration = CacheStoreConfiguration()
            configuration.durability = .relaxed
            #expect(throws: CacheError.self) { _ = try CacheStore(directory: dir, configuration: configuration) }
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["notes.txt"])
        }

        @Test("sync() makes relaxed stores durable while the handle stays open")
        func explicitSync() throws {
            let scratch = Scratch()
            var configuration = CacheStoreConfiguration()
            configuration.durability = .relaxed
            configuration.relaxedSyncInterval = .seconds(3600)
            let store = try CacheStore(directory: scratch.cache, configuration: configuration)
            try store.store(RecordDescriptor(key: Array("a".utf8)), body: Array(repeating: 7, count: 5000))
            #expect(try Self.markerIsSet(scratch.cache))
            try store.sync()
            #expect(try !Self.markerIsSet(scratch.cache))
            try store.store(RecordDescriptor(key: Array("b".utf8)), body: [1])
            #expect(try Self.markerIsSet(scratch.cache), "the next unsynced store sets it again")
        }
    }
}
