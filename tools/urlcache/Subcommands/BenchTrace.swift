import ArgumentParser
import Foundation
import SharedURLCacheStore

/// Replays a request trace through a real directory, for Benchmarks/eviction/run.py: the miss
/// ratio and the bytes written of one eviction policy at one cache size.
struct BenchTrace: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-trace",
        abstract: "Replay a request trace through a fresh directory under one eviction policy; prints one JSON object.",
        discussion: """
            The trace is text, one request a line: `key,size` (the object's name and its size in \
            bytes; lines that do not parse, such as a header, are skipped). The capacity \
            (CacheStoreConfiguration.hardCapacityBytes) is --capacity-percent of the working set: \
            the bytes of the distinct objects, each at the size of its first request. Each \
            request looks the object up (CacheStore.record, without its body); a miss stores it \
            (an incompressible body of the request's size, stored uncompressed). Hits are counted \
            with a touch interval of 1 ms unless --touch-interval says otherwise. Bytes written are this process's write_bytes and wchar \
            from /proc/self/io over the replay: write_bytes counts the pages it dirtied in the \
            page cache (the index's and the body files'), wchar the bytes of its write calls.
            """,
        shouldDisplay: false)

    @Argument(help: "A new directory for this run.") var directory: String
    @Option(help: "The trace: key,size per line.") var trace: String
    @Option(help: "lru or s3fifo.") var policy: EvictionPolicy
    @Option(help: "The capacity, in percent of the working set.") var capacityPercent: Double
    @Option(help: "Replay at most this many requests (0: all).") var limit = 0
    @Flag(help: "Relaxed durability (no fdatasync per store).") var relaxed = false
    @Option(help: "The touch interval, in milliseconds (CacheStoreConfiguration.touchInterval).")
    var touchInterval = 1

    struct Request {
        var key: [UInt8]
        var size: Int
    }

    struct Result: Codable {
        var policy: String
        var capacityPercent: Double
        var requests: Int
        var distinctObjects: Int
        var workingSetBytes: Int
        var capacityBytes: Int
        var misses: Int
        var missRatio: Double
        var writeBytes: Int
        var writeCalls: Int
        var evictions: Int
        var seconds: Double
    }

    func run() throws {
        let requests = try Self.load(trace, limit: limit)
        var firstSize: [[UInt8]: Int] = [:]
        for request in requests where firstSize[request.key] == nil { firstSize[request.key] = request.size }
        let workingSet = firstSize.values.reduce(0, +)
        let capacity = Int(Double(workingSet) * capacityPercent / 100)
        guard capacity > 0 else { throw ValidationError("the capacity is 0 bytes: a larger --capacity-percent") }
        var configuration = CacheStoreConfiguration()
        configuration.touchInterval = .milliseconds(touchInterval)
        configuration.hardCapacityBytes = capacity
        if relaxed { configuration.durability = .relaxed }
        let store = try CacheStore(directory: directory, configuration: configuration)
        try store.setEvictionPolicy(policy)
        let largest = requests.map(\.size).max() ?? 0
        var random = SystemRandomNumberGenerator()
        let noise = (0..<largest).map { _ in UInt8.random(in: 0...255, using: &random) }
        let before = try Self.processIO()
        let start = Date()
        var misses = 0
        for request in requests {
            if try store.record(for: request.key, includeBody: false) != nil { continue }
            misses += 1
            try Self.store(request, into: store, noise: noise)
        }
        try store.flush()
        let seconds = Date().timeIntervalSince(start)
        let after = try Self.processIO()
        let result = Result(
            policy: policy.rawValue, capacityPercent: capacityPercent, requests: requests.count,
            distinctObjects: firstSize.count, workingSetBytes: workingSet, capacityBytes: capacity, misses: misses,
            missRatio: requests.isEmpty ? 0 : Double(misses) / Double(requests.count),
            writeBytes: after["write_bytes", default: 0] - before["write_bytes", default: 0],
            writeCalls: after["wchar", default: 0] - before["wchar", default: 0],
            evictions: try store.statistics().evictions, seconds: seconds)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        print(String(decoding: try encoder.encode(result), as: UTF8.self))
    }

    /// Stores the object; one larger than the whole cache is refused (a miss every time, under
    /// both policies).
    static func store(_ request: Request, into store: CacheStore, noise: [UInt8]) throws {
        let descriptor = RecordDescriptor(key: request.key, storeUncompressed: true)
        do {
            try store.store(descriptor, body: Array(noise.prefix(request.size)))
        } catch {
            guard error.code == .overCapacity else { throw error }
        }
    }

    static func load(_ path: String, limit: Int) throws -> [Request] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var requests: [Request] = []
        for line in text.split(whereSeparator: \.isNewline) {
            if limit > 0 && requests.count == limit { break }
            let fields = line.split(separator: ",")
            guard fields.count == 2, let size = Int(fields[1]), size >= 0 else { continue }
            requests.append(Request(key: Array(fields[0].utf8), size: size))
        }
        return requests
    }

    /// /proc/self/io as name → value.
    static func processIO() throws -> [String: Int] {
        let text = try String(contentsOfFile: "/proc/self/io", encoding: .utf8)
        var values: [String: Int] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: ":")
            if parts.count == 2, let value = Int(parts[1].trimmingCharacters(in: .whitespaces)) {
                values[String(parts[0])] = value
            }
        }
        return values
    }
}
