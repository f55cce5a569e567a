import Foundation
@_spi(Testing) import SharedURLCacheStore
import Testing

/// Under least recently used, an entry that moves in the use order (stored again, or hit) leaves
/// its old key behind instead of deleting it in that commit (docs/Formats.md, "Keys the use order
/// leaves behind"). Every walk of the order must tell such a key from the entry's own, and a
/// sweep must keep them to half the entries: each test fails when one of those is missing.
@Suite(.blockingWaits, .timeLimit(.minutes(5)))
struct UseOrderKeysTests {
    static func put(_ store: CacheStore, _ key: String, seed: UInt64 = 1) throws {
        try EvictionPolicyTests.put(store, key, seed: seed)
    }

    @Test(
        "stores and hits that move entries leave keys behind, swept to at most half the entries (and a slack) more; verify reports no damage; S3-FIFO chosen over them and back keeps verify clean"
    )
    func keysLeftBehindStayBounded() throws {
        let dir = TestDirectory()
        let store = try EvictionPolicyTests.openWithoutCapacity(dir)
        let entries = 200
        for i in 0..<entries { try Self.put(store, "k-\(i)", seed: UInt64(i)) }
        var mostLeftBehind = 0
        for round in 0..<3_000 {
            let key = "k-\(round * 7_919 % entries)"
            if round % 10 == 0 {
                try EvictionPolicyTests.hit(store, key) // the next store's commit moves it
            } else {
                try Self.put(store, key, seed: UInt64(round))
            }
            let (keys, records) = try store.debugUseOrderKeys()
            #expect(records == entries)
            mostLeftBehind = max(mostLeftBehind, keys - records)
        }
        // The sweep starts past half the entries plus 256 and looks at 64 keys a commit.
        #expect(mostLeftBehind > entries / 2, "moves left keys behind: at most \(mostLeftBehind)")
        #expect(mostLeftBehind <= entries / 2 + 256 + 64, "left behind at most \(mostLeftBehind)")
        try EvictionPolicyTests.expectClean(store, "with keys left behind")
        for i in 0..<entries { #expect(try store.version(for: bytes("k-\(i)")) != nil, "k-\(i)") }
        // Commits that each move every entry (all of them hit, then one store writes the hits):
        // each leaves 200 keys behind, which its own sweep must take back.
        for round in 0..<12 {
            Thread.sleep(forTimeInterval: 0.002) // past the touch interval
            for i in 0..<entries { _ = try store.record(for: bytes("k-\(i)")) }
            try Self.put(store, "k-\(round)", seed: UInt64(10_000 + round))
            let (keys, records) = try store.debugUseOrderKeys()
            mostLeftBehind = max(mostLeftBehind, keys - records)
        }
        #expect(mostLeftBehind <= entries / 2 + 256 + 64, "after batches of hits: at most \(mostLeftBehind)")
        // S3-FIFO places every entry once, whatever keys were left behind; and back.
        try store.setEvictionPolicy(.s3fifo)
        try EvictionPolicyTests.expectClean(store, "S3-FIFO chosen")
        try store.setEvictionPolicy(.lru)
        try EvictionPolicyTests.expectClean(store, "least recently used again")
        // Removing everything takes the keys left behind as well.
        for round in 0..<300 { try Self.put(store, "k-\(round % entries)", seed: UInt64(round)) }
        #expect(try store.debugUseOrderKeys().keys > entries, "keys left behind before the removal")
        _ = try store.removeAll()
        #expect(try store.debugUseOrderKeys() == (keys: 0, records: 0))
    }

    @Test("an entry stored again or hit outlives every entry used before it, at the capacity and in compaction")
    func movedEntriesAreNotEvictedAtTheirOldKeys() throws {
        for compacted in [false, true] {
            let dir = TestDirectory()
            let store =
                compacted
                ? try EvictionPolicyTests.openWithoutCapacity(dir) : try EvictionPolicyTests.open(dir, .lru)
            for i in 0..<12 { try Self.put(store, "old-\(i)", seed: UInt64(i)) }
            // Entries of one millisecond sort by their hash: the moves come a clear 2 ms later.
            Thread.sleep(forTimeInterval: 0.002)
            try Self.put(store, "old-0", seed: 99) // stored again: newest
            try EvictionPolicyTests.hit(store, "old-1") // used: newest but one, at the next store
            try Self.put(store, "new-0")
            if compacted {
                // To three of the 13 entries' bytes: only the three used last stay.
                let usage = try store.diskUsage(measure: false)
                _ = try store.compact(CompactionPolicy(targetBytes: usage.entryBytes * 3 / 13))
            } else {
                // Until the entries used before the moves are gone (they may go in any order).
                var n = 1
                while try (2..<12).contains(where: { try store.version(for: bytes("old-\($0)")) != nil }), n < 100 {
                    try Self.put(store, "new-\(n)", seed: UInt64(n))
                    n += 1
                }
            }
            let old = try (2..<12).filter { try store.version(for: bytes("old-\($0)")) != nil }
            #expect(old.isEmpty, "compacted \(compacted): entries used before the moved ones stay: \(old)")
            #expect(try store.version(for: bytes("old-0")) != nil, "compacted \(compacted): stored again")
            #expect(try store.version(for: bytes("old-1")) != nil, "compacted \(compacted): hit")
            try EvictionPolicyTests.expectClean(store, "compacted \(compacted)")
        }
    }
}
