import Foundation
import HTTPCacheSemantics
import HTTPTypes
import Testing

@Suite struct CacheTagsTests {
    @Test("tags from Surrogate-Key, Cache-Tag and xkey: spaces or commas, each once, in order")
    func parse() {
        let fields: [(name: String, value: String)] = [
            ("Surrogate-Key", "product-42  list"), ("content-type", "a b"), ("Cache-Tag", "list,shelf, blue"),
            ("XKEY", "x1"),
        ]
        #expect(
            CacheTags.tags(in: fields, names: CacheTags.defaultFieldNames) == [
                "product-42", "list", "shelf", "blue", "x1",
            ])
        #expect(CacheTags.tags(in: fields, names: ["cache-tag"]) == ["list", "shelf", "blue"])
        #expect(CacheTags.tags(in: fields, names: []).isEmpty)
        // same length, one letter apart; a prefix; a name that differs only in case matches
        #expect(CacheTags.tags(in: fields, names: ["Surrogate-Kez", "Cache-Ta", "xkeys"]).isEmpty)
        #expect(CacheTags.tags(in: fields, names: ["SURROGATE-key"]) == ["product-42", "list"])
    }

    @Test("over-long tags are dropped and the list stops at the store's limit")
    func limits() {
        let long = String(repeating: "x", count: CacheTags.maximumTagBytes + 1)
        #expect(CacheTags.tags(in: [("Surrogate-Key", "\(long) ok")], names: ["Surrogate-Key"]) == ["ok"])
        let all = (0..<100).map { String(repeating: "t", count: 500) + "\($0)" }
        let kept = CacheTags.tags(in: [("Surrogate-Key", all.joined(separator: " "))], names: ["Surrogate-Key"])
        let bytes = kept.reduce(0) { $0 + $1.utf8.count + 1 }
        #expect(kept == Array(all.prefix(kept.count)))
        #expect(
            bytes <= CacheTags.maximumTotalBytes && bytes + all[kept.count].utf8.count + 1 > CacheTags.maximumTotalBytes
        )
    }

    @Test("a soft purge ends the freshness lifetime at the age the response had then")
    func softPurgeFreshness() {
        var entry = stored(200, [("Cache-Control", "max-age=600"), ("Date", httpDate(0))])
        #expect(Freshness(stored: entry, now: t0.addingTimeInterval(100), configuration: sharedConfiguration).isFresh)
        entry.invalidatedAt = t0.addingTimeInterval(50)
        let later = Freshness(stored: entry, now: t0.addingTimeInterval(100), configuration: sharedConfiguration)
        #expect(later.lifetimeSeconds == 50 && !later.isFresh && later.stalenessSeconds == 50)
        // Marked when already stale: the lifetime stays the response's own.
        entry.invalidatedAt = t0.addingTimeInterval(900)
        #expect(
            Freshness(stored: entry, now: t0.addingTimeInterval(1000), configuration: sharedConfiguration)
                .lifetimeSeconds == 600)
    }
}
