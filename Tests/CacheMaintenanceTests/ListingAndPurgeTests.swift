import CacheMaintenance
import Foundation
import SharedURLCacheStore
import Testing
@testable import urlcache
import TestProcess

@Suite(.blockingWaits, .timeLimit(.minutes(3)))
struct ListingAndPurgeTests {
    /// 3 partitions × 2 hosts × 5 paths as URL-level keys, plus 2 raw keys and a Vary variant.
    func populated(_ dir: TestDirectory) throws -> CacheMaintainer {
        let store = try CacheStore(directory: dir.cache)
        for partition in ["", "alpha", "beta"] {
            for host in ["api.example.com", "img.example.com"] {
                for path in 0..<5 {
                    let key = try StoredKey.encode(
                        partition: partition, method: "GET", url: "https://\(host)/v1/items/\(path)?q=1")
                    try store.store(
                        RecordDescriptor(key: key, partition: bytes(partition)), body: bytes("body \(path)"))
                }
            }
        }
        for raw in ["raw-1", "raw-2"] { try store.store(RecordDescriptor(key: bytes(raw)), body: bytes("x")) }
        var variant: [UInt8] =
            [UInt8(ascii: "V"), 1, 0, 0, 0, 1, 0, 0, 0, 15] + bytes("accept-encoding") + [1, 0, 0, 0, 2] + bytes("br")
        let key = try StoredKey.encode(partition: "alpha", method: "GET", url: "https://api.example.com/v1/items/0?q=1")
        try store.store(RecordDescriptor(key: key, variant: variant, partition: bytes("alpha")), body: bytes("brotli"))
        variant.removeAll()
        return CacheMaintainer(store: store)
    }

    @Test("list: every entry, URL prefixes normalised, partitions, limits, raw keys as hex")
    func list() throws {
        let dir = TestDirectory()
        let maintainer = try populated(dir)
        let all = try maintainer.list()
        #expect(all.entries.count == 33)
        #expect(all.entries.filter { $0.keyHex != nil }.count == 2)
        #expect(all.entries.contains { $0.keyHex == "7261772d31" })
        let api = try maintainer.list(ListingFilter(urlPrefix: "HTTPS://API.example.com:443/v1/"))
        #expect(api.urlPrefix == "https://api.example.com/v1/")
        #expect(
            api.entries.count == 16 && api.entries.allSatisfy { $0.url?.hasPrefix("https://api.example.com/") == true })
        let alphaImages = try maintainer.list(ListingFilter(urlPrefix: "https://img.example", partition: "alpha"))
        #expect(alphaImages.entries.count == 5)
        let limited = try maintainer.list(ListingFilter(limit: 4))
        #expect(limited.entries.count == 4 && limited.truncated)
        #expect(all.text.contains("accept-encoding=br") && all.text.contains("key:7261772d31"))
    }

    @Test("show: every partition and variant of a URL, by walk or by direct lookup; nothing stored is exit 1")
    func show() throws {
        let dir = TestDirectory()
        let maintainer = try populated(dir)
        let everywhere = try maintainer.show(url: "https://API.example.com/v1/items/0?q=1")
        #expect(everywhere.url == "https://api.example.com/v1/items/0?q=1")
        #expect(everywhere.entries.count == 4, "3 partitions + the alpha variant")
        let alpha = try maintainer.show(url: "https://api.example.com/v1/items/0?q=1", partition: "alpha")
        #expect(alpha.entries.count == 2)
        #expect(alpha.entries.contains { $0.variant == [.init(name: "accept-encoding", value: "br")] })
        #expect(alpha.entries.allSatisfy { $0.method == "GET" && $0.bodyBytes > 0 })
        do {
            _ = try maintainer.show(url: "https://api.example.com/absent")
            Issue.record("show of an absent URL succeeded")
        } catch {
            #expect(ExitStatus(for: error) == .findings)
        }
        #expect(throws: MaintenanceError.self) { try maintainer.show(url: "ftp://x/") }
    }

    @Test("purge: --url, --prefix, --partition, --since, --all; dry runs change nothing")
    func purge() throws {
        let dir = TestDirectory()
        let maintainer = try populated(dir)
        let total = try maintainer.store.statistics().entries
        // --url: every partition and variant of one URL.
        let urlDry = try maintainer.purge(PurgeSelection(url: "https://api.example.com/v1/items/0?q=1"), dryRun: true)
        #expect(urlDry.matchedEntries == 4 && urlDry.removedEntries == 0)
        #expect(try maintainer.store.statistics().entries == total)
        #expect(try maintainer.purge(PurgeSelection(url: "https://api.example.com/v1/items/0?q=1")).removedEntries == 4)
        // --prefix combined with --partition.
        let beta = try maintainer.purge(PurgeSelection(urlPrefix: "https://img.example.com/", partition: "beta"))
        #expect(beta.removedEntries == 5)
        // --partition alone: alpha's 10 + 1 variant, less the 2 the --url purge took.
        #expect(try maintainer.purge(PurgeSelection(partition: "alpha")).removedEntries == 9)
        // --since alone goes through the store-time index.
        let cut = Date()
        usleep(5000) // store times are the machine's clock, to the millisecond: "late" is after the cut
        try maintainer.store.store(RecordDescriptor(key: bytes("late")), body: bytes("x"))
        let since = try maintainer.purge(PurgeSelection(storedSince: cut))
        #expect(since.method == "store-time-index" && since.matchedEntries == 1 && since.removedEntries == 1)
        // Matching nothing is success with zero removed.
        let none = try maintainer.purge(PurgeSelection(url: "https://nowhere.example/"))
        #expect(none.matchedEntries == 0 && none.removedEntries == 0)
        // --all.
        let remaining = try maintainer.store.statistics().entries
        #expect(try maintainer.purge(PurgeSelection(all: true), dryRun: true).matchedEntries == remaining)
        #expect(try maintainer.purge(PurgeSelection(all: true)).removedEntries == remaining)
        #expect(try maintainer.store.statistics().entries == 0)
        #expect(try !maintainer.verify().damageFound)
    }

    @Test(
        "purge --tag goes through the tag index (per partition too), --url with --partition through the key; --soft marks instead of removing"
    )
    func purgeByTag() throws {
        let dir = TestDirectory()
        let maintainer = try populated(dir)
        for (i, partition) in ["", "alpha", "alpha", "beta"].enumerated() {
            let key = try StoredKey.encode(partition: partition, method: "GET", url: "https://t.example/\(i)")
            try maintainer.store.store(
                RecordDescriptor(key: key, partition: bytes(partition), tags: ["sale", "t\(i)"]), body: bytes("t"))
        }
        let dry = try maintainer.purge(PurgeSelection(partition: "alpha", tag: "sale"), dryRun: true)
        #expect(dry.method == "scan" && dry.matchedEntries == 2 && dry.removedEntries == 0)
        let alpha = try maintainer.purge(PurgeSelection(partition: "alpha", tag: "sale"))
        // The tag's 4 records are read (the partition is in the record); alpha's 2 go.
        #expect(alpha.method == "tag-index" && alpha.removedEntries == 2 && alpha.recordsRead == 4)
        let soft = try maintainer.purge(PurgeSelection(tag: "sale", soft: true))
        #expect(soft.invalidatedEntries == 2 && soft.removedEntries == 0 && soft.recordsRead == 2)
        let url = try maintainer.purge(PurgeSelection(url: "https://api.example.com/v1/items/1?q=1", soft: true))
        #expect(url.invalidatedEntries == 3 && url.removedEntries == 0)
        let key = try StoredKey.encode(partition: "beta", method: "GET", url: "https://api.example.com/v1/items/1?q=1")
        #expect(try maintainer.store.record(for: key)?.invalidatedAt != nil)
        #expect(try maintainer.purge(PurgeSelection(tag: "sale")).removedEntries == 2)
        // --url with --partition looks its keys up instead of walking; alpha's has a variant too.
        let direct = PurgeSelection(url: "HTTPS://api.example.com/v1/items/0?q=1", partition: "alpha")
        let directDry = try maintainer.purge(direct, dryRun: true)
        #expect(directDry.method == "key-index" && directDry.matchedEntries == 2 && directDry.removedEntries == 0)
        #expect(try maintainer.purge(direct).removedEntries == 2)
        // --url alone looks its keys up in every partition the index's counters know.
        let everywhere = try maintainer.purge(PurgeSelection(url: "https://api.example.com/v1/items/0?q=1"))
        #expect(everywhere.method == "key-index" && everywhere.removedEntries == 2)
        #expect(try !maintainer.verify().damageFound)
    }

    @Test(
        "purge selections that are empty or contradictory are usage errors",
        arguments: [
            PurgeSelection(), PurgeSelection(url: "https://a.test/", all: true),
            PurgeSelection(url: "https://a.test/", urlPrefix: "https://a.test/"), PurgeSelection(url: "not a url"),
            PurgeSelection(url: "https://a.test/", tag: "t"), PurgeSelection(tag: ""), PurgeSelection(tag: "a\nb"),
        ])
    func badSelections(selection: PurgeSelection) throws {
        let dir = TestDirectory()
        let maintainer = CacheMaintainer(store: try CacheStore(directory: dir.cache))
        do {
            _ = try maintainer.purge(selection)
            Issue.record("accepted \(selection)")
        } catch {
            #expect(ExitStatus(for: error) == .usage)
        }
    }
}
