import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import CSharedURLCacheRawLimit
import SharedURLCacheStore

/// One implementation under test: the same three operations for each.
protocol BenchImplementation {
    /// Whether one instance may be used by several threads of a worker at once.
    var isThreadSafe: Bool { get }
    /// A hit returns the body length; a miss nil.
    func lookup(_ key: String) throws -> Int?
    func store(_ key: String, body: [UInt8]) throws
    func count() throws -> Int
}

/// Which implementation a run measures.
package enum BenchImplementationKind: String, CaseIterable, Sendable, Codable {
    /// This project: the C core through `CacheStore` (default durability, inline small bodies).
    case sharedURLCache = "shared-url-cache"
    /// The machine's limit: a minimal C loop over LMDB + file + zlib (CSupport/rawlimit).
    case rawLimit = "raw-limit"
    /// Foundation's URLCache on Linux (memoryCapacity 0, a disk path); O(entries) per call.
    case foundation = "foundation"

    /// Opens the implementation on `directory`. `durable`: the durable mode (ours: every store
    /// synced, body and directory included; raw limit: the same done minimally; Foundation has
    /// no such mode and ignores it). `populating`: the raw limit skips fsync while it fills its
    /// directory (the data reaches the page cache either way).
    func open(directory: String, durable: Bool, populating: Bool = false) throws -> any BenchImplementation {
        switch self {
        case .sharedURLCache: return try OursImplementation(directory: directory, durable: durable)
        case .rawLimit:
            return try RawLimitImplementation(
                directory: directory, flags: populating ? UInt32(RL_NOSYNC) : durable ? UInt32(RL_DURABLE) : 0)
        case .foundation: return FoundationImplementation(directory: directory)
        }
    }
}

struct OursImplementation: BenchImplementation {
    let store: CacheStore
    /// Concurrent stores from several threads share one commit (group commit).
    var isThreadSafe: Bool { true }
    init(directory: String, durable: Bool) throws {
        var configuration = CacheStoreConfiguration()
        configuration.durability = durable ? .durable : .standard
        store = try CacheStore(directory: directory, configuration: configuration)
    }
    func lookup(_ key: String) throws -> Int? {
        // Counted in the directory's shared counters, as SharedCache does on every lookup.
        let size = try store.record(for: Array(key.utf8))?.bodySize
        store.countUsage(hits: size == nil ? 0 : 1, misses: size == nil ? 1 : 0)
        return size
    }
    func store(_ key: String, body: [UInt8]) throws {
        try store.store(RecordDescriptor(key: Array(key.utf8)), body: body)
    }
    func count() throws -> Int { try store.statistics().entries }
}

/// The raw-limit C loop (``RawLimit``).
final class RawLimitImplementation: BenchImplementation {
    private let raw: RawLimit
    /// One `rl_env` per thread, and LMDB allows one environment per file per process.
    var isThreadSafe: Bool { false }

    init(directory: String, flags: UInt32) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // The map is fixed in the raw limit (no growth): room for a million entries and more.
        raw = try RawLimit(directory: directory, flags: flags, mapSize: 1 << 34)
    }

    func lookup(_ key: String) throws -> Int? { try raw.lookup(utf8: key) }

    func store(_ key: String, body: [UInt8]) throws { try raw.put(utf8: key, body) }

    func count() throws -> Int { raw.count }
}

struct FoundationImplementation: BenchImplementation {
    let cache: URLCache
    let directory: String
    var isThreadSafe: Bool { false }
    init(directory: String) {
        self.directory = directory
        cache = URLCache(memoryCapacity: 0, diskCapacity: 1 << 30, diskPath: directory)
    }
    func request(_ key: String) -> URLRequest { URLRequest(url: URL(string: key)!) }
    func lookup(_ key: String) throws -> Int? { cache.cachedResponse(for: request(key))?.data.count }
    func store(_ key: String, body: [UInt8]) throws {
        let url = URL(string: key)!
        let response = HTTPURLResponse(
            url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: ["Cache-Control": "max-age=3600"])!
        cache.storeCachedResponse(CachedURLResponse(response: response, data: Data(body)), for: request(key))
    }
    func count() throws -> Int {
        // Foundation offers no count; the number of files in its directory is what it scans.
        (try? FileManager.default.subpathsOfDirectory(atPath: directory).count) ?? 0
    }
}
