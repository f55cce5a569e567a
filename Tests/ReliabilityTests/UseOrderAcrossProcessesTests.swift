import Foundation
@_spi(Testing) import SharedURLCacheStore
import Testing
import TestProcess

extension Reliability {
    /// Keys the use order leaves behind (docs/Formats.md, "Keys the use order leaves behind") with
    /// real processes: two writers replacing the same few entries, each commit's sweep in its own
    /// process, a reader checking every body, and both writers killed -9.
    @Suite struct UseOrderAcrossProcesses {
        @Test(
            "two writer processes replacing 40 entries and a reader: every entry served whole, the use order within its bound, verify clean"
        )
        func writersLeaveAndSweepKeys() throws {
            let scratch = Scratch()
            let dir = scratch.cache
            _ = try CacheStore(directory: dir)
            let seed = runSeed("useOrderAcrossProcesses")
            let writers = try (0..<2).map { id in
                try Child(["writer", dir, String(seed &+ UInt64(id)), String(id), "40"])
            }
            let reader = try Child(["reader", dir, "3", "40"])
            for writer in writers {
                #expect(writer.waitForLines(startingWith: "ACK ", count: 300), "the writer stored")
            }
            var stored = 0
            for writer in writers {
                stored += writer.killed().out.split(separator: "\n").dropLast().filter { $0.hasPrefix("ACK ") }.count
            }
            let read = reader.finish()
            #expect(read.status == 0, "the reader saw a bad body: \(read.err)")
            // Every store of the 40 keys after the first moved its entry in the use order. (The two
            // writers' acknowledgements are not ordered against each other, so which one's store of
            // a key is the latest is not known here: the reader and verify check the bodies.)
            #expect(stored > 500, "stores: \(stored)")
            let store = try CacheStore(directory: dir)
            for i in 0..<40 {
                #expect(try store.record(for: Array("https://api.example.com/items/\(i)?v=1".utf8)) != nil, "item \(i)")
            }
            let (keys, records) = try store.debugUseOrderKeys()
            #expect(records == 40)
            // Half the entries and 256 more, and what one commit's sweep of 64 keys may leave.
            #expect(keys - records <= records / 2 + 256 + 64, "keys \(keys), records \(records)")
            let report = try store.verify(checkBodies: true)
            #expect(!report.isDamaged && report.strayIndexKeys == 0, "seed \(seed): \(report)")
        }
    }
}
