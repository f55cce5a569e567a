import CacheEntryFormat
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import SharedURLCache
import Testing
import TestProcess

@Suite("Keys, variants and partitions", .blockingWaits, .timeLimit(.minutes(5)))
struct KeyTests {
    /// Pairs of URLs and whether they must share one entry. Foundation's Linux URLCache
    /// drops the query and would serve `?v=1` for `?v=2`.
    @Test(arguments: [
        ("https://api.example.com/a?v=1", "https://api.example.com/a?v=2", false),
        ("https://api.example.com/a?v=1", "https://api.example.com/a", false),
        ("https://api.example.com/a?x=1&y=2", "https://api.example.com/a?y=2&x=1", false),
        ("https://api.example.com/A", "https://api.example.com/a", false),
        ("http://api.example.com/a", "https://api.example.com/a", false),
        ("https://api.example.com:8443/a", "https://api.example.com/a", false),
        ("https://API.Example.com/a", "https://api.example.com/a", true),
        ("https://api.example.com:443/a", "https://api.example.com/a", true),
        ("https://api.example.com/a#frag", "https://api.example.com/a", true),
    ])
    func urlKeys(stored: String, lookedUp: String, same: Bool) throws {
        let directory = TestDirectory()
        for memory in [1 << 20, 0] { // memory tier and disk path alike
            let cache = try directory.makeCache(memory: memory)
            cache.put(stored, "stored")
            #expect((cache.get(lookedUp) == "stored") == same, "memory \(memory)")
            cache.removeAllCachedResponses()
        }
    }

    @Test func queryVersionsAreStoredSeparately() throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache()
        cache.put("https://api.example.com/a?v=1", "one")
        cache.put("https://api.example.com/a?v=2", "two")
        #expect(cache.get("https://api.example.com/a?v=1") == "one")
        #expect(cache.get("https://api.example.com/a?v=2") == "two")
        #expect(try directory.makeCache().get("https://api.example.com/a?v=1") == "one")
    }

    // MARK: Vary

    @Test(arguments: [1 << 20, 0])
    func varyStoresOneEntryPerVariant(memory: Int) throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache(memory: memory)
        let url = "https://api.example.com/greeting"
        let vary = ["Vary": "Accept-Language", "Content-Type": "text/plain"]
        cache.put(url, "hello", responseHeaders: vary, requestHeaders: ["Accept-Language": "en"])
        cache.put(url, "bonjour", responseHeaders: vary, requestHeaders: ["Accept-Language": "fr"])

        for reader in [cache, try directory.makeCache(memory: memory)] {
            #expect(reader.get(url, headers: ["Accept-Language": "en"]) == "hello")
            #expect(reader.get(url, headers: ["Accept-Language": "fr"]) == "bonjour")
            #expect(reader.get(url, headers: ["accept-language": " FR "]) == "bonjour") // normalised
            #expect(reader.get(url, headers: ["Accept-Language": "de"]) == nil)
            #expect(reader.get(url) == nil) // absent matches only absent
        }
        // Two variants and the vary spec.
        #expect(cache.statistics.diskEntries == 3)

        cache.removeCachedResponse(for: request(url))
        #expect(cache.get(url, headers: ["Accept-Language": "en"]) == nil)
        #expect(cache.statistics.diskEntries == 0)
    }

    @Test func varyResponseKeepsTheSelectingRequestFields() throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache(memory: 0)
        let url = "https://api.example.com/v"
        cache.put(
            url, "x", responseHeaders: ["Vary": "Accept-Language"],
            requestHeaders: ["Accept-Language": "en", "X-Other": "1"])
        let store = try #require(cache.engine.store)
        let spec = try #require(try store.record(for: cache.storeKey(url), variant: []))
        #expect(spec.appFlags == RecordKind.varySpec.rawValue)
        let variants = try store.variants(for: cache.storeKey(url)).filter { !$0.variant.isEmpty }
        #expect(variants.count == 1)
        let record = try #require(try store.record(for: cache.storeKey(url), variant: variants[0].variant))
        let head = try #require(ResponseHead(decoding: record.head))
        #expect(head.varyRequestFields == [.init(name: "accept-language", value: "en")])
    }

    @Test func responseWithoutVaryReplacesEveryVariant() throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache()
        let other = try directory.makeCache()
        let url = "https://api.example.com/switch"
        cache.put(url, "en", responseHeaders: ["Vary": "Accept-Language"], requestHeaders: ["Accept-Language": "en"])
        #expect(other.get(url, headers: ["Accept-Language": "en"]) == "en") // now in other's memory

        cache.put(url, "plain")

        #expect(cache.get(url, headers: ["Accept-Language": "en"]) == "plain")
        #expect(other.get(url, headers: ["Accept-Language": "en"]) == "plain")
        #expect(cache.statistics.diskEntries == 1)
    }

    @Test func changedVaryDropsTheOldVariants() throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache()
        let other = try directory.makeCache()
        let url = "https://api.example.com/changed"
        cache.put(
            url, "lang-en", responseHeaders: ["Vary": "Accept-Language"], requestHeaders: ["Accept-Language": "en"])
        #expect(other.get(url, headers: ["Accept-Language": "en"]) == "lang-en")

        cache.put(
            url, "gzip", responseHeaders: ["Vary": "Accept-Encoding"], requestHeaders: ["Accept-Encoding": "gzip"])

        #expect(other.get(url, headers: ["Accept-Language": "en"]) == nil)
        #expect(other.get(url, headers: ["Accept-Encoding": "gzip", "Accept-Language": "en"]) == "gzip")
        #expect(cache.statistics.diskEntries == 2)
    }

    @Test func varyStarIsRefused() throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache()
        cache.put("https://api.example.com/star", "x", responseHeaders: ["Vary": "*"])
        #expect(cache.get("https://api.example.com/star") == nil)
        #expect(cache.statistics.refusals == 1)
    }

    // MARK: Partitions

    @Test func partitionsDoNotSeeEachOther() throws {
        let directory = TestDirectory()
        let billing = try directory.makeCache(partition: "billing")
        let search = try directory.makeCache(partition: "search")
        let unpartitioned = try directory.makeCache()
        let url = "https://api.example.com/shared-url"
        billing.put(url, "billing")
        search.put(url, "search")

        #expect(billing.get(url) == "billing")
        #expect(search.get(url) == "search")
        #expect(unpartitioned.get(url) == nil)
        #expect(try directory.makeCache(partition: "billing").get(url) == "billing")

        search.removeCachedResponse(for: request(url))
        #expect(billing.get(url) == "billing")
        #expect(try directory.makeCache(partition: "billing").get(url) == "billing")
    }
}
