import ArgumentParser
import BenchmarkDriver
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPCacheSemantics
import SharedURLCache
import SharedURLCacheStore

/// One implementation's per-operation rates through the API people call, for
/// Benchmarks/diskcache/compare.py (which runs python-diskcache on the same workload beside it).
struct BenchOps: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-ops",
        abstract: "Hit, miss and store rates of one implementation on a fresh directory; prints one JSON object.",
        discussion: """
            Fills DIR (which must not exist or be empty) with --entries entries of --size bytes \
            (JSON-like bodies, entry i gets body i mod 32, URLs https://api.example.com/items/<i>?v=1), \
            then times --operations hits (random order), misses and stores (replacing random entries). \
            Implementations: shared-cache (SharedCache, memoryCapacity 0), shared-cache-relaxed (the \
            same with .relaxed durability: no fdatasync per store), shared-cache-memory \
            (SharedCache with a 256 MiB memory tier; hits cycle over 256 entries already in memory, \
            each still checked against the index), cache-store (the store core through CacheStore, \
            on the keys SharedCache computes; its stores write the same bodies with no HTTP head). Used by Benchmarks/diskcache/compare.py. \
            The purge phase (not in the default) tags every entry (Surrogate-Key: t<i mod 997>, and \
            "hot" on --hot-entries entries spread over the directory) and times one purge of the tag \
            "hot" through CacheStore: its cost against the directory's size, or with --hot-entries \
            equal to --entries against the tag's size. The tag phase tags the entries the same way \
            and times nothing: a directory for a purge timed outside (Benchmarks/purge).
            """,
        shouldDisplay: false)

    @Argument(help: "A new directory for this run.") var directory: String
    @Option(help: "shared-cache, shared-cache-relaxed, shared-cache-memory or cache-store.") var implementation: String
    @Option(help: "Body size in bytes.") var size = 1024
    @Option(help: "Entries stored before timing.") var entries = 2000
    @Option(help: "Operations timed per phase.") var operations = 2000
    @Option(help: "Hits and misses timed (default: --operations); lookups are fast, so a longer phase.")
    var lookups: Int?
    @Option(help: "Phases to time, comma-separated: hit, miss, store, purge, tag.") var phases = "hit,miss,store"
    @Option(help: "Entries the purge and tag phases tag \"hot\", spread evenly (at most --entries).")
    var hotEntries = 10
    @Option(help: "Random seed of the access order.") var seed: UInt64 = 1
    @Flag(help: "Keep the directory's URL order (urlcache url-order --on) from the start.") var urlOrder = false
    @Option(help: "A free-space floor for the stores, in bytes (CacheStoreConfiguration.minimumFreeBytes).")
    var minFree: Int?
    @Flag(
        help: """
            Skip the fill when DIR already holds --entries entries (a directory an earlier run with the \
            same --entries and --size filled): millions of entries take an hour to store.
            """)
    var reuse = false

    static func url(_ i: Int) -> URL { URL(string: "https://api.example.com/items/\(i)?v=1")! }
    static func missURL(_ i: Int) -> URL { URL(string: "https://api.example.com/missing/\(i)?v=1")! }

    func run() throws {
        guard ["shared-cache", "shared-cache-relaxed", "shared-cache-memory", "cache-store"].contains(implementation)
        else {
            throw ValidationError("unknown implementation \(implementation)")
        }
        guard entries > 0, operations >= 0, size >= 0, (lookups ?? 0) >= 0, hotEntries > 0 else {
            throw ValidationError("--entries > 0, --operations ≥ 0, --lookups ≥ 0, --hot-entries > 0")
        }
        let lookupCount = lookups ?? operations
        let wanted = Set(phases.split(separator: ",").map(String.init))
        let memory = implementation == "shared-cache-memory"
        var configuration = SharedCacheConfiguration(
            memoryCapacity: memory ? 256 << 20 : 0, diskCapacity: 1 << 40, directory: URL(fileURLWithPath: directory))
        if implementation == "shared-cache-relaxed" { configuration.store.durability = .relaxed }
        configuration.store.minimumFreeBytes = minFree
        let cache = try SharedCache(configuration: configuration)
        if urlOrder { try CacheStore(directory: directory).setKeyOrder(kept: true) }
        // The corpus of `urlcache bench`, 32 bodies per size.
        let bodies = (0..<32).map { Data(BenchWorkload.body(size: size, variant: UInt64($0))) }
        let tagged = wanted.contains("purge") || wanted.contains("tag")
        let hotStride = max(entries / hotEntries, 1)
        func response(_ i: Int) -> CachedURLResponse {
            var fields = ["Cache-Control": "max-age=86400", "Content-Type": "application/json"]
            if tagged { fields["Surrogate-Key"] = i % hotStride == 7 % hotStride ? "t\(i % 997) hot" : "t\(i % 997)" }
            let http = HTTPURLResponse(
                url: Self.url(i), statusCode: 200, httpVersion: "HTTP/1.1", headerFields: fields)!
            return CachedURLResponse(response: http, data: bodies[i % 32])
        }
        let filled = reuse ? try CacheStore(directory: directory).statistics().entries >= entries : false
        if !filled {
            for i in 0..<entries { cache.storeCachedResponse(response(i), for: URLRequest(url: Self.url(i))) }
        }

        var random = seed | 1
        func nextIndex(_ bound: Int) -> Int {
            random = random &* 6364136223846793005 &+ 1442695040888963407
            return Int((random >> 33) % UInt64(bound))
        }
        // Requests are built before the clock starts, as diskcache's keys are plain strings, and
        // only for the phases asked for: an instruction count of one phase (callgrind, with
        // --operations 0 and N) must not include the preparation of the others.
        let hot = memory ? min(entries, 256) : entries
        let hitRequests = (wanted.contains("hit") ? 0..<lookupCount : 0..<0).map { _ in
            URLRequest(url: Self.url(nextIndex(hot)))
        }
        let missRequests = (wanted.contains("miss") ? 0..<lookupCount : 0..<0).map { URLRequest(url: Self.missURL($0)) }
        var result: [String: Double] = [:]
        func timed(_ name: String, _ work: () throws -> Int) rethrows {
            guard wanted.contains(name) else { return }
            let start = DispatchTime.now().uptimeNanoseconds
            let done = try work()
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            result[name + "_per_second"] = seconds > 0 ? Double(done) / seconds : 0
        }
        var failures = 0
        if implementation == "cache-store" {
            let store = try CacheStore(directory: directory)
            func key(_ url: URL) throws -> [UInt8] {
                try CacheKey(partition: cache.configuration.partition, method: .get, url: url.absoluteString).encoded
            }
            let hitKeys = try hitRequests.map { try key($0.url!) }
            let missKeys = try missRequests.map { try key($0.url!) }
            try timed("hit") {
                for k in hitKeys where try store.record(for: k)?.body == nil { failures += 1 }
                return hitKeys.count
            }
            try timed("miss") {
                for k in missKeys where try store.record(for: k) != nil { failures += 1 }
                return missKeys.count
            }
            // The same bodies under the same keys, with no HTTP head: what a SharedCache store
            // costs above the core's.
            let stores = try (wanted.contains("store") ? 0..<operations : 0..<0).map { _ in
                let i = nextIndex(entries)
                return (try key(Self.url(i)), [UInt8](bodies[i % 32]))
            }
            try timed("store") {
                for (k, body) in stores { try store.store(RecordDescriptor(key: k), body: body) }
                return stores.count
            }
        } else {
            if memory { for i in 0..<hot { _ = cache.cachedResponse(for: URLRequest(url: Self.url(i))) } }
            timed("hit") {
                for request in hitRequests where cache.cachedResponse(for: request)?.data.count != size {
                    failures += 1
                }
                return hitRequests.count
            }
            timed("miss") {
                for request in missRequests where cache.cachedResponse(for: request) != nil { failures += 1 }
                return missRequests.count
            }
            let stores = (wanted.contains("store") ? 0..<operations : 0..<0).map {
                _ -> (CachedURLResponse, URLRequest) in
                let i = nextIndex(entries)
                return (response(i), URLRequest(url: Self.url(i)))
            }
            timed("store") {
                for (response, request) in stores { cache.storeCachedResponse(response, for: request) }
                return stores.count
            }
        }
        if wanted.contains("purge") {
            let store = try CacheStore(directory: directory)
            let start = DispatchTime.now().uptimeNanoseconds
            let report = try store.purge(tag: "hot")
            result["purge_seconds"] = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            result["purge_records_read"] = Double(report.recordsRead)
            result["purge_removed"] = Double(report.removedEntries)
        }
        var output: [String: Any] = result
        output["implementation"] = implementation
        output["size"] = size
        output["entries"] = entries
        output["failures"] = failures
        let json = try JSONSerialization.data(withJSONObject: output, options: [.sortedKeys])
        print(String(decoding: json, as: UTF8.self))
    }
}
