import Foundation
import SharedURLCacheStore
import Testing
import TestProcess

/// An index file shorter than its meta page says. LMDB counts the pages a commit allocated and
/// freed again ("loose" pages) in its meta page without writing them, so a healthy index can end
/// before its last page; only pages in use missing is damage.
@Suite(.blockingWaits, .timeLimit(.minutes(2)))
struct ShortIndexTests {
    static let pageSize = 4096

    /// The free pages of an index file, read by `mdb_stat -fff` (lmdb-utils, which
    /// tools/install-dependencies installs).
    static func freePages(_ index: String) throws -> Set<Int> {
        let result = try ChildProcess.shell("mdb_stat -fff -n '\(index)'")
        try #require(result.status == 0, "mdb_stat: \(result.err)")
        var pages = Set<Int>()
        for line in result.out.split(separator: "\n") {
            let text = line.trimmingCharacters(in: .whitespaces)
            // "123" is one page, "147[2]" a run of two starting at 147.
            let parts = text.split(separator: "[")
            guard let first = Int(parts.first ?? ""), parts.count <= 2 else { continue }
            let run = parts.count == 2 ? Int(parts[1].dropLast()) ?? 1 : 1
            for page in first..<(first + run) { pages.insert(page) }
        }
        return pages
    }

    /// A directory whose last commits freed pages at the end of the index file: 200 entries
    /// stored, 190 of them removed.
    static func directoryWithFreeTail() throws -> (dir: TestDirectory, index: String, pages: Int, freeTail: Int) {
        let dir = TestDirectory()
        do {
            let store = try CacheStore(directory: dir.cache)
            for i in 0..<200 {
                try store.store(
                    RecordDescriptor(key: bytes("k\(i)")),
                    body: makeBody(size: 2000, compressible: false, seed: UInt64(i)))
            }
            for i in 0..<190 { try store.remove(key: bytes("k\(i)")) }
        }
        let index = dir.cache + "/index.lmdb"
        let size = try #require(try FileManager.default.attributesOfItem(atPath: index)[.size] as? NSNumber).intValue
        let pages = size / pageSize
        let free = try freePages(index)
        var tail = 0
        while free.contains(pages - 1 - tail) { tail += 1 }
        try #require(tail > 0, "the removals left free pages at the end of the file")
        return (dir, index, pages, tail)
    }

    @Test("an index file whose missing tail pages are all free opens with every entry")
    func freeTailIsHealthy() throws {
        let (dir, index, pages, tail) = try Self.directoryWithFreeTail()
        #expect(truncate(index, off_t((pages - tail) * Self.pageSize)) == 0)
        let store = try CacheStore(directory: dir.cache)
        for i in 190..<200 {
            #expect(
                try store.record(for: bytes("k\(i)"))?.body
                    == makeBody(size: 2000, compressible: false, seed: UInt64(i)))
        }
        #expect(try !store.verify(checkBodies: true).isDamaged)
        try store.store(RecordDescriptor(key: bytes("after")), body: bytes("a store after the open"))
        #expect(try store.statistics().entries == 11)
    }

    @Test("an index file missing a page in use is still damage: moved aside, never mapped short")
    func usedPageMissingIsDamage() throws {
        let (dir, index, pages, tail) = try Self.directoryWithFreeTail()
        #expect(truncate(index, off_t((pages - tail - 1) * Self.pageSize)) == 0)
        let store = try CacheStore(directory: dir.cache)
        #expect(try store.record(for: bytes("k195")) == nil)
        #expect(try store.statistics().entries == 0)
        #expect(try !store.verify().isDamaged)
    }
}
