import ArgumentParser
import BenchmarkDriver
import Foundation

struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Throughput of N real processes on one directory: this cache beside the raw limit and Foundation's URLCache.",
        discussion: """
            For each implementation, body size and process count, the processes run a mix of lookups \
            and stores over Zipf-distributed keys (URLs like https://api.example.com/items/<n>?v=1) for \
            --seconds. Foundation's URLCache costs O(entries) per call, so it holds at most \
            --foundation-entries. Ratios are taken within the run. Each implementation keeps its own \
            subdirectory of DIR (DIR/shared-url-cache is a normal cache directory).
            """)

    @Argument(help: "Benchmark directory (default: $XDG_CACHE_HOME/shared-url-cache-bench or ~/.cache/shared-url-cache-bench).")
    var directory: String?
    @Option(help: "Process counts, comma-separated.") var procs = "1,2,4"
    @Option(help: "Seconds per run.") var seconds = 5.0
    @Option(help: "Entries (keys) per implementation.") var entries = 10_000
    @Option(help: "Upper bound on Foundation URLCache entries.") var foundationEntries = 200
    @Option(help: "Body sizes in bytes, comma-separated.") var sizes = "1024"
    @Option(help: "Percent of operations that are lookups.") var lookupPercent = 90
    @Option(help: "Zipf exponent of the key distribution.") var zipf = 1.0
    @Option(help: "Implementations: shared-url-cache, raw-limit, foundation.") var implementations = "shared-url-cache,raw-limit,foundation"
    @Option(help: "Random seed (printed; replay with it).") var seed: UInt64 = UInt64.random(in: 1...UInt64(UInt32.max))
    @Flag(help: "One JSON object per row instead of the table.") var json = false

    func run() throws {
        let kinds = try implementations.split(separator: ",").map { name in
            guard let kind = BenchImplementationKind(rawValue: String(name)) else { throw ValidationError("unknown implementation \(name)") }
            return kind
        }
        let base = directory ?? CacheDirectoryOptions.defaultDirectory + "-bench"
        let driver = BenchDriver(
            directory: base, implementations: kinds, processCounts: procs.split(separator: ",").compactMap { Int($0) },
            entries: entries, foundationEntries: foundationEntries, bodyBytes: sizes.split(separator: ",").compactMap { Int($0) },
            seconds: seconds, lookupPercent: lookupPercent, zipfExponent: zipf, seed: seed,
            workerCommand: (URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL.path, ["bench-worker"]))
        if !json { print("urlcache bench: \(base), seed \(seed), \(lookupPercent)% lookups, Zipf \(zipf), \(seconds) s per run") }
        let rows = try driver.run { line in
            FileHandle.standardError.write(Data((line + "\n").utf8))
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            for row in rows { print(String(decoding: try encoder.encode(row), as: UTF8.self)) }
        } else {
            print(BenchDriver.table(rows))
        }
    }
}

struct BenchWorker: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "bench-worker", abstract: "One process of `urlcache bench`.", shouldDisplay: false)
    @Argument var workload: String

    func run() throws {
        let workload = try JSONDecoder().decode(BenchWorkload.self, from: Data(workload.utf8))
        let result = try workload.run()
        print(String(decoding: try JSONEncoder().encode(result), as: UTF8.self))
    }
}
