import ArgumentParser
import BenchmarkDriver
import Foundation
import SharedURLCacheStore

struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Throughput of N real processes on one directory: this cache beside the raw limit and Foundation's URLCache.",
        discussion: """
            For each implementation, body size and process count, the processes run a mix of lookups \
            and stores over Zipf-distributed keys (URLs like https://api.example.com/items/<n>?v=1) for \
            --seconds. Foundation's URLCache costs O(entries) per call, so it holds at most \
            --foundation-entries. Ratios are taken within the run. Each implementation and entry count keeps \
            its own subdirectory of DIR (DIR/shared-url-cache-<entries> is a normal cache directory).

            Targets it can show (each ratio within one run): --entries 10000,1000000 \
            --lookup-percent 100 (lookup rate at 1M entries ÷ 10k); --procs 1,2 (aggregate of 2 \
            processes ÷ 1); --durable --lookup-percent 0 --threads 4 --procs 1 (our durable stores \
            from 4 threads sharing commits ÷ the raw durable loop, which runs one thread); \
            --operations 1000000 --lookup-percent 100 (peak memory of a process doing 1M lookups: \
            the rss and anon columns).
            """)

    @Argument(
        help: "Benchmark directory (default: $XDG_CACHE_HOME/SharedURLCache-bench or ~/.cache/SharedURLCache-bench).")
    var directory: String?
    @Option(help: "Process counts, comma-separated.") var procs = "1,2,4"
    @Option(help: "Seconds per run.") var seconds = 5.0
    @Option(help: "Entries (keys) per implementation; a comma-separated list runs each, smallest first.") var entries =
        "10000"
    @Option(help: "Upper bound on Foundation URLCache entries.") var foundationEntries = 200
    @Option(help: "Body sizes in bytes, comma-separated.") var sizes = "1024"
    @Option(help: "Percent of operations that are lookups.") var lookupPercent = 90
    @Option(help: "Zipf exponent of the key distribution.") var zipf = 1.0
    @Option(help: "Implementations: shared-url-cache, raw-limit, foundation.") var implementations =
        "shared-url-cache,raw-limit,foundation"
    @Option(help: "Threads per process sharing one open cache (shared-url-cache only; the others run one).")
    var threads = 1
    @Option(help: "Operations per process; the run ends after them instead of after --seconds.") var operations: Int?
    @Flag(help: "Durable mode: every store synced (body, directory, full commit), for ours and the raw limit.")
    var durable = false
    @Option(help: "Random seed (printed; replay with it).") var seed: UInt64 = UInt64.random(in: 1...UInt64(UInt32.max))
    @Flag(help: "One JSON object per row instead of the table.") var json = false

    func run() throws {
        let kinds = try implementations.split(separator: ",").map { name in
            guard let kind = BenchImplementationKind(rawValue: String(name)) else {
                throw ValidationError("unknown implementation \(name)")
            }
            return kind
        }
        func counts(_ list: String, _ option: String) throws -> [Int] {
            let values = list.split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
            guard !values.isEmpty, values.allSatisfy({ ($0 ?? 0) > 0 }) else {
                throw ValidationError("\(option): positive integers, comma-separated")
            }
            return values.compactMap { $0 }
        }
        guard threads >= 1 else { throw ValidationError("--threads: at least 1") }
        guard (operations ?? 1) >= 1 else { throw ValidationError("--operations: at least 1") }
        let base = directory ?? CacheStore.defaultDirectory + "-bench"
        let driver = BenchDriver(
            directory: base, implementations: kinds, processCounts: try counts(procs, "--procs"),
            entryCounts: try counts(entries, "--entries").sorted(), foundationEntries: foundationEntries,
            bodyBytes: try counts(sizes, "--sizes"),
            mix: BenchMix(
                seconds: seconds, lookupPercent: lookupPercent, zipfExponent: zipf, seed: seed, threads: threads,
                operations: operations, durable: durable),
            workerCommand: (URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL.path, ["bench-worker"]))
        if !json {
            let length = operations.map { "\($0) operations per process" } ?? "\(seconds) s per run"
            print(
                "urlcache bench: \(base), seed \(seed), \(lookupPercent)% lookups, Zipf \(zipf), \(length)"
                    + (threads > 1 ? ", \(threads) threads per process (ours)" : "") + (durable ? ", durable mode" : "")
            )
        }
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
    static let configuration = CommandConfiguration(
        commandName: "bench-worker", abstract: "One process of `urlcache bench`.", shouldDisplay: false)
    @Argument var workload: String

    func run() throws {
        let workload = try JSONDecoder().decode(BenchWorkload.self, from: Data(workload.utf8))
        let result = try workload.run()
        print(String(decoding: try JSONEncoder().encode(result), as: UTF8.self))
    }
}
