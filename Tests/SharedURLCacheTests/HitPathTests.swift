import CacheEntryFormat
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPCacheSemantics
@testable import SharedURLCache
import SharedURLCacheStore
import Testing
import TestProcess

/// The hit path's shortcuts: the memory tier keeps the built response, and GET keys
/// are remembered per URL string. Neither may change what is served (docs/Design.md invariant 3).
@Suite("Hit path", .blockingWaits, .timeLimit(.minutes(5)))
struct HitPathTests {
    @Test func memoryHitsReturnTheSameResponseObject() throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache()
        let url = "https://api.example.com/same"
        cache.put(url, "one")
        let first = try #require(cache.cachedResponse(for: request(url)))
        let second = try #require(cache.cachedResponse(for: request(url)))
        #expect(first === second)
        #expect(body(second) == "one")
        #expect((second.response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Content-Type") == "application/json")
    }

    @Test func aDiskHitKeepsItsResponseForTheNextMemoryHit() throws {
        let directory = TestDirectory()
        let writer = try directory.makeCache(memory: 0)
        let reader = try directory.makeCache()
        let url = "https://api.example.com/disk"
        writer.put(url, "from disk")
        let first = try #require(reader.cachedResponse(for: request(url)))
        let second = try #require(reader.cachedResponse(for: request(url)))
        #expect(first === second)
        #expect(reader.statistics.memoryHits == 1)
    }

    @Test func aKeptResponseIsNotServedAfterAnotherInstanceRemovesOrReplacesIt() throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache()
        let other = try directory.makeCache()
        let url = "https://api.example.com/coherent"
        cache.put(url, "old")
        let kept = try #require(cache.cachedResponse(for: request(url)))
        #expect(cache.cachedResponse(for: request(url)) === kept)

        other.put(url, "new")
        let replaced = try #require(cache.cachedResponse(for: request(url)))
        #expect(replaced !== kept)
        #expect(body(replaced) == "new")

        other.removeCachedResponse(for: request(url))
        #expect(cache.cachedResponse(for: request(url)) == nil)
    }

    @Test func aStoreInThisInstanceReplacesTheKeptResponse() throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache()
        let url = "https://api.example.com/restore"
        cache.put(url, "one")
        let kept = try #require(cache.cachedResponse(for: request(url)))
        cache.put(url, "two")
        let next = try #require(cache.cachedResponse(for: request(url)))
        #expect(next !== kept)
        #expect(body(next) == "two")
        #expect(cache.cachedResponse(for: request(url)) === next)
    }

    @Test func memoryOnlyEntriesKeepTheirResponseToo() throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache()
        let url = "https://api.example.com/memory-only"
        cache.put(url, "here only", policy: .allowedInMemoryOnly)
        let first = try #require(cache.cachedResponse(for: request(url)))
        #expect(cache.cachedResponse(for: request(url)) === first)
        #expect(first.storagePolicy == .allowedInMemoryOnly)
    }

    /// Foundation's header dictionary holds one value per name: a name the response repeats
    /// (the HTTP flow stores fields as sent) is combined into one comma-separated value, in order.
    @Test func repeatedFieldNamesAreCombinedInTheResponse() throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache()
        let url = "https://api.example.com/links"
        let head = ResponseHead(
            kind: .http, statusCode: 200, expectedContentLength: 2, url: url, mimeType: nil, textEncodingName: nil,
            headerFields: [
                .init(name: "Link", value: "<a>"), .init(name: "Content-Type", value: "text/plain"),
                .init(name: "Link", value: "<b>"), .init(name: "Link", value: "<c>"),
            ], varyRequestFields: [])
        let entry = CacheEntry(head: head, body: Data("ok".utf8), userInfo: [], storedAt: Date(), inMemoryOnly: false)
        let built = try #require(cache.engine.makeCachedResponse(entry)?.response as? HTTPURLResponse)
        #expect(built.value(forHTTPHeaderField: "Link") == "<a>, <b>, <c>")
        #expect(built.value(forHTTPHeaderField: "Content-Type") == "text/plain")
        #expect(built.allHeaderFields.count == 2)
    }

    @Test func keyMemoIsBounded() {
        var memo = KeyMemo(limit: 2)
        memo.remember([1], for: "a")
        memo.remember([2], for: "b")
        memo.remember([3], for: "c")
        #expect(memo.keys.count <= 2)
        #expect(memo.key(for: "c") == [3])
        #expect(memo.key(for: "a") == nil || memo.key(for: "a") == [1])
        var off = KeyMemo(limit: 0)
        off.remember([1], for: "a")
        #expect(off.keys.isEmpty)
    }

    @Test func keyMemoHoldsAtMostItsLimitThroughTheCache() throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache(memory: 0)
        var most = 0
        for i in 0..<(KeyMemo.defaultLimit + 10) {
            let url = "https://api.example.com/many/\(i)"
            cache.put(url, "\(i)")
            #expect(cache.get(url) == "\(i)")
            most = max(most, cache.engine.keyMemo.withLock { $0.keys.count })
        }
        #expect(most == KeyMemo.defaultLimit)
    }

    /// A lookup remembers its key only when it finds an entry: a miss of a URL never stored (the
    /// usual miss) neither pays for the memo nor pushes out the keys hits use.
    @Test func onlyLookupsThatFindAnEntryRememberTheirKey() throws {
        let directory = TestDirectory()
        let writer = try directory.makeCache(memory: 0)
        let url = "https://api.example.com/stored-elsewhere"
        writer.put(url, "stored")
        let reader = try directory.makeCache(memory: 0)
        #expect(reader.get("https://api.example.com/never-stored") == nil)
        #expect(reader.engine.keyMemo.withLock { $0.keys.isEmpty })
        #expect(reader.get(url) == "stored")
        #expect(reader.engine.keyMemo.withLock { $0.key(for: url) } != nil)
        #expect(reader.get(url) == "stored")
    }

    @Test func rememberedKeysKeepPartitionsApart() throws {
        let directory = TestDirectory()
        let a = try directory.makeCache(partition: "a")
        let b = try directory.makeCache(partition: "b")
        let url = "https://api.example.com/partitioned"
        a.put(url, "for a")
        #expect(a.get(url) == "for a")
        #expect(b.get(url) == nil)
        b.put(url, "for b")
        #expect(a.get(url) == "for a")
        #expect(b.get(url) == "for b")
        #expect(
            try a.engine.cacheKey(method: "GET", url: URL(string: url)).get().key
                != b.engine.cacheKey(method: "GET", url: URL(string: url)).get().key)
    }

    @Test func rememberedKeysAreTheKeysBuiltAfresh() throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache()
        let url = "https://API.example.com:443/items/1?v=1"
        let first = try cache.engine.cacheKey(method: nil, url: URL(string: url)).get().key
        let again = try cache.engine.cacheKey(method: "GET", url: URL(string: url)).get().key
        #expect(first == again)
        let fresh = try CacheKey(partition: "", method: .get, url: url).encoded
        #expect(first == fresh)
        #expect(try cache.engine.cacheKey(method: "HEAD", url: URL(string: url)).get().key != first)
        #expect(
            try cache.engine.cacheKey(method: "GET", url: URL(string: "https://api.example.com/items/1?v=2")).get().key
                != first)
    }

    @Test func varyStillSelectsTheVariantWithRememberedKeys() throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache()
        let url = "https://api.example.com/vary"
        let headers = ["Content-Type": "application/json", "Vary": "Accept-Language"]
        cache.put(url, "en", responseHeaders: headers, requestHeaders: ["Accept-Language": "en"])
        cache.put(url, "fr", responseHeaders: headers, requestHeaders: ["Accept-Language": "fr"])
        for _ in 0..<2 {
            #expect(cache.get(url, headers: ["Accept-Language": "en"]) == "en")
            #expect(cache.get(url, headers: ["Accept-Language": "fr"]) == "fr")
            #expect(cache.get(url, headers: ["Accept-Language": "de"]) == nil)
        }
        let cold = try directory.makeCache(memory: 0)
        #expect(cold.get(url, headers: ["Accept-Language": "fr"]) == "fr")
    }

    @Test func theResponseURLIsTheStoredURLWhateverTheRequestSpelled() throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache(memory: 0)
        let url = "https://api.example.com/items/7?v=1"
        cache.put(url, "seven")
        let plain = try #require(cache.cachedResponse(for: request(url)))
        #expect(plain.response.url?.absoluteString == url)
        let relative = URL(string: "items/7?v=1", relativeTo: URL(string: "https://api.example.com/")!)!
        let viaRelative = try #require(cache.cachedResponse(for: URLRequest(url: relative)))
        #expect(viaRelative.response.url?.absoluteString == url)
        #expect(viaRelative.response.url?.baseURL == nil)
    }
}
