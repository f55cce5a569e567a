import CacheEntryFormat
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import SharedURLCache
import SharedURLCacheStore
import Testing
import TestProcess

@Suite("URLCache members", .blockingWaits, .timeLimit(.minutes(5)))
struct SharedCacheTests {
    @Test func storeThenLookupRoundTripsTheResponse() throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache()
        let url = "https://api.example.com/items/1?v=1"

        cache.storeCachedResponse(
            response(
                url, body: "{\"id\":1}", status: 203, headers: ["Content-Type": "application/json", "ETag": "\"abc\""]),
            for: request(url))
        let hit = try #require(cache.cachedResponse(for: request(url)))

        let http = try #require(hit.response as? HTTPURLResponse)
        #expect(http.statusCode == 203)
        #expect(http.url?.absoluteString == url)
        #expect(http.value(forHTTPHeaderField: "ETag") == "\"abc\"")
        #expect(http.value(forHTTPHeaderField: "Content-Type") == "application/json")
        #expect(String(decoding: hit.data, as: UTF8.self) == "{\"id\":1}")
        #expect(hit.storagePolicy == .allowed)
    }

    @Test func lookupFromDiskWhenMemoryIsCold() throws {
        let directory = TestDirectory()
        let url = "https://api.example.com/cold"
        try directory.makeCache().put(url, "from disk")

        let fresh = try directory.makeCache()
        #expect(fresh.get(url) == "from disk")
        #expect(fresh.get(url) == "from disk")
        let stats = fresh.statistics
        #expect(stats.hits == 2)
        #expect(stats.memoryHits == 1)
    }

    @Test func missForUnknownURL() throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache()
        #expect(cache.cachedResponse(for: request("https://api.example.com/none")) == nil)
        #expect(cache.statistics.misses == 1)
        #expect(cache.statistics.hits == 0)
    }

    @Test func plainURLResponseRoundTrips() throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache(memory: 0)
        let url = "https://api.example.com/plain"
        let plain = URLResponse(
            url: URL(string: url)!, mimeType: "text/plain", expectedContentLength: 5, textEncodingName: "utf-8")
        cache.storeCachedResponse(CachedURLResponse(response: plain, data: Data("hello".utf8)), for: request(url))

        let hit = try #require(cache.cachedResponse(for: request(url)))
        #expect(!(hit.response is HTTPURLResponse))
        #expect(hit.response.mimeType == "text/plain")
        #expect(hit.response.textEncodingName == "utf-8")
        #expect(hit.response.expectedContentLength == 5)
        #expect(String(decoding: hit.data, as: UTF8.self) == "hello")
    }

    @Test func storeReplacesTheEarlierResponse() throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache()
        let url = "https://api.example.com/replace"
        cache.put(url, "one")
        cache.put(url, "two")
        #expect(cache.get(url) == "two")
        #expect(try directory.makeCache().get(url) == "two")
        #expect(cache.statistics.diskEntries == 1)
    }

    @Test func removeCachedResponseRemovesFromMemoryAndDisk() throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache()
        let url = "https://api.example.com/remove"
        cache.put(url, "doomed")
        #expect(cache.get(url) == "doomed")

        cache.removeCachedResponse(for: request(url))

        #expect(cache.get(url) == nil)
        #expect(try directory.makeCache().get(url) == nil)
        #expect(cache.currentMemoryUsage == 0)
        #expect(cache.statistics.diskEntries == 0)
    }

    @Test func removeCachedResponsesSinceKeepsOlderOnes() throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache()
        cache.put("https://api.example.com/old", "old")
        cache.put("https://api.example.com/old-memory", "old", policy: .allowedInMemoryOnly)
        // Store times are the machine's clock, to the millisecond: the sleeps put the cut between.
        Thread.sleep(forTimeInterval: 0.01)
        let cut = Date()
        Thread.sleep(forTimeInterval: 0.01)
        cache.put("https://api.example.com/new", "new")
        cache.put("https://api.example.com/new-memory", "new", policy: .allowedInMemoryOnly)

        cache.removeCachedResponses(since: cut)

        #expect(cache.get("https://api.example.com/old") == "old")
        #expect(cache.get("https://api.example.com/old-memory") == "old")
        #expect(cache.get("https://api.example.com/new") == nil)
        #expect(cache.get("https://api.example.com/new-memory") == nil)
        #expect(try directory.makeCache().get("https://api.example.com/new") == nil)
    }

    @Test func removeAllCachedResponsesEmptiesBothTiers() throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache()
        for n in 0..<5 { cache.put("https://api.example.com/\(n)", "body \(n)") }
        cache.put("https://api.example.com/m", "memory", policy: .allowedInMemoryOnly)
        #expect(cache.statistics.diskEntries == 5)

        cache.removeAllCachedResponses()

        #expect(cache.currentMemoryUsage == 0)
        #expect(cache.statistics.memoryEntries == 0)
        #expect(cache.statistics.diskEntries == 0)
        for n in 0..<5 { #expect(cache.get("https://api.example.com/\(n)") == nil) }
        #expect(cache.get("https://api.example.com/m") == nil)
    }

    @Test func currentDiskUsageIsTheStoresDiskUsage() throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache()
        let store = try #require(cache.engine.store)
        #expect(cache.currentDiskUsage == (try store.diskUsage().totalBytes))
        #expect(cache.currentDiskUsage > 0, "an empty directory still takes its index and directories")
        #expect(cache.statistics.diskEntryBytes == 0)
        cache.put("https://api.example.com/a", String(repeating: "x", count: 10_000))
        let entries = cache.statistics.diskEntryBytes
        #expect(entries > 0)
        #expect(cache.currentDiskUsage == (try store.diskUsage().totalBytes))

        // Shared: another instance (as another process would) reads the same entries' figure.
        #expect(try directory.makeCache().statistics.diskEntryBytes == entries)

        cache.removeCachedResponse(for: request("https://api.example.com/a"))
        #expect(cache.statistics.diskEntryBytes == 0)
    }

    @Test func currentMemoryUsageIsTheSumOfEntryCosts() throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache()
        cache.put("https://api.example.com/a", String(repeating: "a", count: 1000))
        cache.put("https://api.example.com/b", String(repeating: "b", count: 2000))
        #expect(cache.currentMemoryUsage > 3000)
        #expect(cache.currentMemoryUsage < 3000 + 2 * 1024)
        #expect(cache.statistics.memoryEntries == 2)
        cache.removeCachedResponse(for: request("https://api.example.com/a"))
        #expect(cache.currentMemoryUsage < 2000 + 1024)
    }

    @Test func sharedIsReplaceable() throws {
        let directory = TestDirectory()
        let mine = try directory.makeCache()
        SharedCache.shared = mine
        #expect(SharedCache.shared === mine)
    }

    @Test func asyncVariantsMatchTheSynchronousOnes() async throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache()
        let url = "https://api.example.com/async"

        await cache.storeCachedResponse(response(url, body: "async body"), for: request(url))
        let hit: CachedURLResponse? = await cache.cachedResponse(for: request(url))
        #expect(body(hit) == "async body")

        await cache.removeCachedResponse(for: request(url))
        let gone: CachedURLResponse? = await cache.cachedResponse(for: request(url))
        #expect(gone == nil)

        await cache.storeCachedResponse(response(url, body: "again"), for: request(url))
        await cache.removeCachedResponses(since: Date(timeIntervalSince1970: 0))
        let sinceGone: CachedURLResponse? = await cache.cachedResponse(for: request(url))
        #expect(sinceGone == nil)

        await cache.storeCachedResponse(response(url, body: "again"), for: request(url))
        await cache.removeAllCachedResponses()
        let allGone: CachedURLResponse? = await cache.cachedResponse(for: request(url))
        #expect(allGone == nil)
    }

    // MARK: userInfo

    @Test func userInfoRoundTripsPropertyListTypes() throws {
        let directory = TestDirectory()
        let url = "https://api.example.com/info"
        let date = Date(timeIntervalSince1970: 1_700_000_000)
        let info: [AnyHashable: Any] = [
            "string": "text", "int": 42, "double": 2.5, "bool": true, "date": date,
            "data": Data([1, 2, 3]), "array": ["a", "b"], "nested": ["k": 7],
        ]
        let writer = try directory.makeCache()
        writer.storeCachedResponse(response(url, body: "b", userInfo: info), for: request(url))

        for cache in [writer, try directory.makeCache()] { // memory path, then disk path
            let hit = try #require(cache.cachedResponse(for: request(url)))
            let back = try #require(hit.userInfo)
            #expect(back["string"] as? String == "text")
            #expect(back["int"] as? Int == 42)
            #expect(back["double"] as? Double == 2.5)
            #expect(back["bool"] as? Bool == true)
            #expect(back["date"] as? Date == date)
            #expect(back["data"] as? Data == Data([1, 2, 3]))
            #expect(back["array"] as? [String] == ["a", "b"])
            #expect((back["nested"] as? [String: Any])?["k"] as? Int == 7)
        }
    }

    @Test func nonPropertyListUserInfoIsRefused() throws {
        final class NotAPlist {}
        let directory = TestDirectory()
        let cache = try directory.makeCache()
        let url = "https://api.example.com/bad-info"
        cache.storeCachedResponse(response(url, body: "b", userInfo: ["object": NotAPlist()]), for: request(url))
        cache.storeCachedResponse(response(url, body: "b", userInfo: [1: "integer key"]), for: request(url))

        #expect(cache.get(url) == nil)
        #expect(cache.statistics.refusals == 2)
        #expect(cache.statistics.stores == 0)
    }

    // MARK: Storage policies

    @Test(arguments: [
        (URLCache.StoragePolicy.allowed, true, true),
        (.allowedInMemoryOnly, true, false),
        (.notAllowed, false, false),
    ])
    func storagePolicies(policy: URLCache.StoragePolicy, inThisInstance: Bool, inOtherInstance: Bool) throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache()
        let url = "https://api.example.com/policy"
        cache.put(url, "body", policy: policy)

        let hit = cache.cachedResponse(for: request(url))
        #expect((hit != nil) == inThisInstance)
        if let hit { #expect(hit.storagePolicy == policy) }
        #expect((try directory.makeCache().get(url) != nil) == inOtherInstance)
        #expect(cache.statistics.diskEntries == (inOtherInstance ? 1 : 0))
    }

    @Test func inMemoryOnlyShadowsDiskForThisProcessOnly() throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache()
        let url = "https://api.example.com/shadow"
        cache.put(url, "disk")
        cache.put(url, "memory", policy: .allowedInMemoryOnly)
        #expect(cache.get(url) == "memory")
        #expect(try directory.makeCache().get(url) == "disk")
    }

    // MARK: Refusals

    @Test func entriesOverTheMaximumSizeAreRefusedAndCounted() throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache(maximumEntry: 4096)
        cache.put("https://api.example.com/small", String(repeating: "s", count: 1000))
        cache.put("https://api.example.com/big", String(repeating: "b", count: 5000))

        #expect(cache.get("https://api.example.com/small") != nil)
        #expect(cache.get("https://api.example.com/big") == nil)
        #expect(cache.statistics.refusals == 1)
        #expect(cache.statistics.stores == 1)
    }

    @Test(arguments: [
        ("POST", "https://api.example.com/post"),
        ("GET", "ftp://files.example.com/x"),
        ("GET", "https://user:secret@api.example.com/x"),
    ])
    func uncacheableRequestsAreRefused(method: String, url: String) throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache()
        cache.storeCachedResponse(response(url, body: "b"), for: request(url, method: method))
        #expect(cache.cachedResponse(for: request(url, method: method)) == nil)
        #expect(cache.statistics.refusals == 1)
        #expect(cache.statistics.diskEntries == 0)
    }

    @Test func headIsKeyedApartFromGet() throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache()
        let url = "https://api.example.com/head"
        cache.storeCachedResponse(response(url, body: ""), for: request(url, method: "HEAD"))
        #expect(cache.cachedResponse(for: request(url, method: "HEAD")) != nil)
        #expect(cache.cachedResponse(for: request(url)) == nil)
    }

    @Test func corruptHeadIsAMissAndIsPurged() throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache(memory: 0)
        let url = "https://api.example.com/corrupt"
        let store = try CacheStore(directory: directory.cache.path)
        try store.store(
            RecordDescriptor(
                key: cache.storeKey(url), head: [0x52, 0x48, 1, 1, 0xFF], appFlags: RecordKind.response.rawValue),
            body: Array("x".utf8))

        #expect(cache.get(url) == nil)
        #expect(cache.statistics.corruptPurges == 1)
        #expect(try store.record(for: cache.storeKey(url)) == nil)
    }

    /// docs/Formats.md: a head of a later version is another release's entry during a rolling
    /// upgrade, not damage.
    @Test func headOfALaterVersionIsAMissAndIsKept() throws {
        let directory = TestDirectory()
        let cache = try directory.makeCache(memory: 0)
        let url = "https://api.example.com/later"
        let store = try CacheStore(directory: directory.cache.path)
        let later: [UInt8] = [0x52, 0x48, 3, 1, 0, 200, 0xAA, 0xBB]
        try store.store(
            RecordDescriptor(key: cache.storeKey(url), head: later, appFlags: RecordKind.response.rawValue),
            body: Array("x".utf8))

        #expect(cache.get(url) == nil)
        #expect(cache.statistics.corruptPurges == 0)
        #expect(try store.record(for: cache.storeKey(url))?.head == later)
    }
}
