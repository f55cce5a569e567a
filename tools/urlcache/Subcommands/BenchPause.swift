import ArgumentParser
import BenchmarkDriver
import Foundation
import SharedURLCacheStore

/// A writer that times every store it makes, for Benchmarks/compaction: run beside
/// `urlcache compact`, its longest store is the longest pause compaction caused, as a service
/// storing into the directory sees it.
struct BenchPause: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-pause",
        abstract: "Stores into DIR until a file appears (or for --seconds); prints the store latencies as JSON.",
        discussion: """
            Each store is one 1 KiB record (the corpus of `urlcache bench`) under the key \
            pause-<pid>-<i mod --keys>, through CacheStore in the given durability, one after the \
            other. Prints stores, the longest store and the 99th and 99.9th percentiles in \
            milliseconds, how many stores took longer than 50 ms, and when each of those began \
            (ms since 1970) with how long it took.
            """,
        shouldDisplay: false)

    @Argument(help: "An existing cache directory.") var directory: String
    @Option(help: "Stop once this file exists.") var stopFile: String?
    @Option(help: "Stop after this many seconds.") var seconds: Double = 60
    @Option(help: "Distinct keys the stores cycle over.") var keys = 1000
    @Option(help: "standard, durable or relaxed.") var durability = "standard"
    @Option(help: "Pause between stores, in milliseconds.") var intervalMilliseconds: Double = 1

    func run() throws {
        var configuration = CacheStoreConfiguration()
        switch durability {
        case "standard": configuration.durability = .standard
        case "durable": configuration.durability = .durable
        case "relaxed": configuration.durability = .relaxed
        default: throw ValidationError("unknown durability \(durability)")
        }
        let store = try CacheStore(directory: directory, configuration: configuration)
        let body = BenchWorkload.body(size: 1024, variant: 0)
        let pid = getpid()
        var latencies: [Double] = []
        var slow: [[Double]] = [] // [when (ms since 1970), how long (ms)] of stores over 50 ms
        let start = DispatchTime.now().uptimeNanoseconds
        var i = 0
        while Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9 < seconds {
            if let stopFile, FileManager.default.fileExists(atPath: stopFile) { break }
            let key = Array("pause-\(pid)-\(i % keys)".utf8)
            let t0 = DispatchTime.now().uptimeNanoseconds
            let startedAt = Date().timeIntervalSince1970 * 1000
            try store.store(RecordDescriptor(key: key), body: body)
            let milliseconds = Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e6
            latencies.append(milliseconds)
            if milliseconds > 50 { slow.append([startedAt.rounded(), milliseconds]) }
            i += 1
            if intervalMilliseconds > 0 { usleep(UInt32(intervalMilliseconds * 1000)) }
        }
        let sorted = latencies.sorted()
        func percentile(_ p: Double) -> Double {
            sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
        }
        let report: [String: Any] = [
            "stores": sorted.count,
            "max_ms": sorted.last ?? 0,
            "p99_ms": percentile(0.99),
            "p999_ms": percentile(0.999),
            "over_50ms": sorted.filter { $0 > 50 }.count,
            "slow": slow,
        ]
        let data = try JSONSerialization.data(withJSONObject: report, options: [.sortedKeys])
        print(String(decoding: data, as: UTF8.self))
    }
}
