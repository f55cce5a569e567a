import Foundation
import SharedURLCacheStore
import Synchronization
import Testing

/// Removals and soft purges of many keys in one call: exactly the keys named, checked before any
/// is touched, and a thousand to a commit.
@Suite(.timeLimit(.minutes(5)))
struct ManyKeysTests {
    private func reference(_ key: String, _ variant: String? = nil) -> CacheStore.KeyReference {
        CacheStore.KeyReference(key: bytes(key), variant: variant.map(bytes))
    }

    @Test("remove(_:) removes exactly the variants and keys named; nil names every variant")
    func removesWhatIsNamed() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        for (key, variant) in [("a", "gzip"), ("a", "br"), ("b", ""), ("c", ""), ("d", "gzip"), ("d", "br")] {
            try store.store(RecordDescriptor(key: bytes(key), variant: bytes(variant)), body: bytes(key + variant))
        }
        let named = [reference("a", "gzip"), reference("b", ""), reference("missing"), reference("d")]
        let removed = try store.remove(named)
        #expect(removed == 4)
        #expect(try store.record(for: bytes("a"), variant: bytes("gzip")) == nil)
        #expect(try store.record(for: bytes("a"), variant: bytes("br"))?.body == bytes("abr"))
        #expect(try store.record(for: bytes("b")) == nil)
        #expect(try store.record(for: bytes("c"))?.body == bytes("c"))
        #expect(try store.record(for: bytes("d"), variant: bytes("gzip")) == nil)
        #expect(try store.record(for: bytes("d"), variant: bytes("br")) == nil)
        #expect(try store.statistics().entries == 2)
        #expect(try store.remove([]) == 0)
        #expect(try store.verify().isDamaged == false)
    }

    @Test("more keys than one commit takes: every one removed, every one counted")
    func removesAcrossCommits() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        for i in 0..<2_600 { try store.store(RecordDescriptor(key: bytes("k\(i)")), body: bytes("v\(i)")) }
        let named = (0..<2_500).map { reference("k\($0)") }
        #expect(try store.remove(named) == 2_500)
        #expect(try store.statistics().entries == 100)
        #expect(try store.record(for: bytes("k2499")) == nil)
        #expect(try store.record(for: bytes("k2500"))?.body == bytes("v2500"))
        #expect(try store.verify().isDamaged == false && store.verify().countersMatch)
    }

    @Test("an empty key anywhere in the list, even past the first commit's worth: invalidInput, and nothing removed")
    func checksBeforeRemoving() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        for i in 0..<1_500 { try store.store(RecordDescriptor(key: bytes("k\(i)")), body: bytes("x")) }
        let bad = (0..<1_500).map { reference("k\($0)") } + [CacheStore.KeyReference(key: [])]
        #expect {
            try store.remove(bad)
        } throws: { error in
            (error as? CacheError)?.code == .invalidInput
        }
        #expect(try store.statistics().entries == 1_500)
        #expect(throws: CacheError.self) { try store.invalidate(bad) }
        #expect(try store.record(for: bytes("k0"))?.invalidatedAt == nil)
    }

    @Test("invalidate(_:) marks the variants and keys named stale and counts them once")
    func invalidatesWhatIsNamed() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        for (key, variant) in [("k", "gzip"), ("k", "br"), ("j", ""), ("i", "")] {
            try store.store(RecordDescriptor(key: bytes(key), variant: bytes(variant)), body: bytes(key + variant))
        }
        #expect(try store.invalidate([reference("k", "br"), reference("j"), reference("missing")]) == 2)
        #expect(try store.record(for: bytes("k"), variant: bytes("br"))?.invalidatedAt != nil)
        #expect(try store.record(for: bytes("k"), variant: bytes("gzip"))?.invalidatedAt == nil)
        #expect(try store.record(for: bytes("j"))?.invalidatedAt != nil)
        #expect(try store.record(for: bytes("i"))?.invalidatedAt == nil)
        // Marked already: not counted again.
        #expect(try store.invalidate([reference("j"), reference("k")]) == 1)
    }

    @Test("a soft purge of more keys than one commit takes marks every one")
    func invalidatesAcrossCommits() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        for i in 0..<1_200 { try store.store(RecordDescriptor(key: bytes("k\(i)")), body: bytes("v")) }
        #expect(try store.invalidate((0..<1_200).map { reference("k\($0)") }) == 1_200)
        #expect(try store.record(for: bytes("k0"))?.invalidatedAt != nil)
        #expect(try store.record(for: bytes("k1199"))?.invalidatedAt != nil)
        #expect(try store.statistics().entries == 1_200)
    }

    @Test("removals share commits: a reader sees a few states between all and none, not one per key")
    func removalsShareCommits() async throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        for i in 0..<2_000 { try store.store(RecordDescriptor(key: bytes("k\(i)")), body: bytes("v")) }
        let stop = Atomic<Bool>(false)
        let reads = Atomic<Int>(0)
        // Entry counts a reader saw, each from one snapshot of the index; a thread of its own, so
        // that its loop never holds a thread the test's own tasks need.
        let seenCounts = Mutex(Set<Int>())
        let reader = Thread {
            while !stop.load(ordering: .acquiring) {
                if let entries = try? store.statistics().entries { seenCounts.withLock { _ = $0.insert(entries) } }
                reads.add(1, ordering: .releasing)
            }
            if let entries = try? store.statistics().entries { seenCounts.withLock { _ = $0.insert(entries) } }
            reads.store(-1, ordering: .releasing)
        }
        reader.start()
        // The reader is reading before the removals begin.
        while reads.load(ordering: .acquiring) < 10 { try await Task.sleep(for: .milliseconds(1)) }
        #expect(try store.remove((0..<1_000).map { reference("k\($0)") }) == 1_000)
        stop.store(true, ordering: .releasing)
        while reads.load(ordering: .acquiring) != -1 { try await Task.sleep(for: .milliseconds(1)) }
        let seen = seenCounts.withLock { $0 }
        #expect(seen.contains(2_000) && seen.contains(1_000))
        #expect(seen.allSatisfy { (1_000...2_000).contains($0) })
        // A commit each would show up to a thousand states in between; commits of at least 16
        // removals (the least a paced commit takes) show fewer than 63.
        #expect(seen.count - 2 <= 1_000 / 16, "the reader saw \(seen.count - 2) states in between")
    }
}
