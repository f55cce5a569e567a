import Foundation
import SharedURLCacheStore
import Testing
import TestProcess

/// The whole-body lookup as `Data` (what SharedCache's disk hits read): the same entry as
/// `record(for:)`, and a body handed over in the core's buffer stays valid on its own.
@Suite(.blockingWaits)
struct WholeBodyTests {
    @Test(
        "recordWithBody returns the record and body that record(for:) does, below and above the handover size",
        arguments: [
            0, 1, 1024, CacheStore.bodyHandoverMinimumBytes - 1, CacheStore.bodyHandoverMinimumBytes, 256 << 10,
        ])
    func matchesRecord(size: Int) throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        for compressible in [true, false] {
            let key = bytes("k\(size)-\(compressible)")
            let body = makeBody(size: size, compressible: compressible)
            try store.store(RecordDescriptor(key: key, head: bytes("head"), userInfo: bytes("info")), body: body)
            let expected = try #require(try store.record(for: key))
            let (record, data) = try #require(try store.recordWithBody(for: key))
            #expect(Array(data) == body)
            #expect(record.body == nil)
            var withBody = record
            withBody.body = expected.body
            #expect(withBody == expected)
        }
        #expect(try store.recordWithBody(for: bytes("absent")) == nil)
    }

    @Test("a body handed over outlives its entry's removal, its replacement and the store")
    func handedOverBodyOutlivesTheEntry() throws {
        let dir = TestDirectory()
        var store: CacheStore? = try CacheStore(directory: dir.cache)
        let body = makeBody(size: 1 << 20, compressible: true)
        try store!.store(RecordDescriptor(key: bytes("big")), body: body)
        let (_, first) = try #require(try store!.recordWithBody(for: bytes("big")))
        let (_, second) = try #require(try store!.recordWithBody(for: bytes("big")))
        try store!.store(RecordDescriptor(key: bytes("big")), body: makeBody(size: 1 << 20, compressible: false))
        try store!.remove(key: bytes("big"))
        store = nil
        #expect(Array(first) == body)
        // Each lookup's Data owns its own entry: releasing one leaves the other intact.
        var copy = first
        copy[0] ^= 0xFF // copy-on-write: a mutation copies, never writes into the shared buffer
        #expect(Array(first) == body && Array(second) == body && copy[0] != body[0])
    }
}
