import Foundation
import Histogram

/// `urlcache bench`: for each implementation and process count, N real processes run the same
/// workload on one directory for a set time; the table puts them side by side with ratios taken
/// in the same run.
package struct BenchDriver: Sendable {
    package var directory: String
    package var implementations: [BenchImplementationKind]
    package var processCounts: [Int]
    /// Entry counts to run at (each implementation and size is populated to each in turn, so
    /// list them in increasing order); the table compares lookup rates across them.
    package var entryCounts: [Int]
    /// Foundation's URLCache costs O(entries) per call; it runs with at most this many.
    package var foundationEntries: Int
    package var bodyBytes: [Int]
    /// What every worker does; its `threads` apply to our store only (the others run one).
    package var mix: BenchMix
    /// How to start a worker: the executable and the arguments before the workload JSON.
    package var workerCommand: (executable: String, arguments: [String])

    package init(
        directory: String, implementations: [BenchImplementationKind], processCounts: [Int], entryCounts: [Int],
        foundationEntries: Int, bodyBytes: [Int], mix: BenchMix,
        workerCommand: (executable: String, arguments: [String])
    ) {
        self.directory = directory
        self.implementations = implementations
        self.processCounts = processCounts
        self.entryCounts = entryCounts
        self.foundationEntries = foundationEntries
        self.bodyBytes = bodyBytes
        self.mix = mix
        self.workerCommand = workerCommand
    }

    /// One row of the table.
    package struct Row: Codable, Sendable {
        package var bench: String
        package var op: String
        package var size: Int
        package var n: Int
        package var procs: Int
        /// Threads per process.
        package var threads: Int
        package var ops_s: Double
        package var p50_us: UInt64
        package var p99_us: UInt64
        package var p999_us: UInt64
        package var hit_rate: Double?
        package var errors: Int
        /// Peak resident memory of the largest worker process (VmHWM on Linux, ru_maxrss
        /// elsewhere), MiB: it includes the index pages the process mapped (shared page cache).
        package var rss_mib: Double
        /// Largest anonymous resident memory (heap, stacks; no file pages) of a worker during its
        /// run (sampled), MiB; 0 where /proc is absent.
        package var anon_mib: Double
    }

    /// Each implementation and entry count has a directory of its own (DIR/<implementation>-<entries>,
    /// a normal cache directory for ours): 10k keys looked up in a directory that also holds a
    /// million would not measure a 10k-entry cache.
    func workload(_ kind: BenchImplementationKind, size: Int, entries: Int) -> BenchWorkload {
        let entries = kind == .foundation ? min(entries, foundationEntries) : entries
        var mix = mix
        if kind != .sharedURLCache { mix.threads = 1 }
        return BenchWorkload(
            implementation: kind, directory: directory + "/" + kind.rawValue + "-\(entries)",
            entries: entries, bodyBytes: size, mix: mix)
    }

    /// Populates, runs every combination, returns the rows (and reports progress as it goes).
    package func run(progress: (String) -> Void) throws -> [Row] {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var rows: [Row] = []
        for size in bodyBytes {
            for kind in implementations {
                // Foundation is capped to fewer entries: each capped count runs once.
                var counts: [Int] = []
                for n in entryCounts where !counts.contains(workload(kind, size: size, entries: n).entries) {
                    counts.append(workload(kind, size: size, entries: n).entries)
                }
                for n in counts { rows += try measure(workload(kind, size: size, entries: n), progress: progress) }
            }
        }
        return rows
    }

    /// Populates `base`'s directory, then runs it with each process count.
    private func measure(_ base: BenchWorkload, progress: (String) -> Void) throws -> [Row] {
        var rows: [Row] = []
        let kind = base.implementation, size = base.bodyBytes
        let started = Date()
        let added = try base.populate()
        progress(
            "\(kind.rawValue) \(size) B: \(base.entries) entries ready (\(added) added in \(String(format: "%.1f", Date().timeIntervalSince(started))) s)"
        )
        for procs in processCounts {
            var merged = BenchWorkerResult()
            let workers = try (0..<procs).map { index -> (Process, Pipe) in
                var workload = base
                workload.mix.seed = mix.seed &+ UInt64(index) &* 0x9E37_79B9
                return try spawn(workload)
            }
            for (process, pipe) in workers {
                let data = pipe.fileHandleForReading.readDataToEndOfFile()
                process.waitUntilExit()
                guard process.terminationStatus == 0 else {
                    throw BenchError("a \(kind.rawValue) worker exited with \(process.terminationStatus)")
                }
                merged.merge(try JSONDecoder().decode(BenchWorkerResult.self, from: data))
            }
            let name = kind.rawValue
            var all = merged.lookupMicros
            all.add(merged.storeMicros)
            for (op, count, histogram) in [
                ("mix", merged.lookups + merged.stores, all),
                ("lookup", merged.lookups, merged.lookupMicros),
                ("store", merged.stores, merged.storeMicros),
            ] where count > 0 {
                rows.append(
                    Row(
                        bench: name, op: op, size: size, n: base.entries, procs: procs, threads: base.mix.threads,
                        ops_s: Double(count) / max(merged.seconds, 0.001),
                        p50_us: histogram.valueAtPercentile(50), p99_us: histogram.valueAtPercentile(99),
                        p999_us: histogram.valueAtPercentile(99.9),
                        hit_rate: op == "lookup" ? Double(merged.hits) / Double(max(merged.lookups, 1)) : nil,
                        errors: merged.errors,
                        rss_mib: Double(merged.peakResidentKiB) / 1024,
                        anon_mib: Double(merged.anonymousResidentKiB) / 1024))
            }
            progress("\(name) \(size) B × \(procs) proc: \(merged.lookups + merged.stores) ops")
        }
        return rows
    }

    private func spawn(_ workload: BenchWorkload) throws -> (Process, Pipe) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: workerCommand.executable)
        process.arguments =
            workerCommand.arguments + [String(decoding: try JSONEncoder().encode(workload), as: UTF8.self)]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        return (process, pipe)
    }

    /// The human table: every row, then the ratios ours / raw limit and ours / Foundation for the
    /// same operation, size and process count, measured in this run.
    package static func table(_ rows: [Row]) -> String {
        func pad(_ s: String, _ n: Int, left: Bool = false) -> String {
            s.count >= n
                ? s
                : (left
                    ? s + String(repeating: " ", count: n - s.count) : String(repeating: " ", count: n - s.count) + s)
        }
        var lines = [
            pad("implementation", 18, left: true) + pad("op", 7) + pad("size", 8) + pad("entries", 9) + pad("procs", 6)
                + pad("thr", 4) + pad("ops/s", 11) + pad("p50 µs", 9) + pad("p99 µs", 9) + pad("p999 µs", 9)
                + pad("hits", 7)
                + pad("rss MiB", 9) + pad("anon MiB", 9)
        ]
        for row in rows {
            lines.append(
                pad(row.bench, 18, left: true) + pad(row.op, 7) + pad("\(row.size)", 8) + pad("\(row.n)", 9)
                    + pad("\(row.procs)", 6) + pad("\(row.threads)", 4) + pad(String(format: "%.0f", row.ops_s), 11)
                    + pad("\(row.p50_us)", 9) + pad("\(row.p99_us)", 9) + pad("\(row.p999_us)", 9)
                    + pad(row.hit_rate.map { String(format: "%.0f%%", $0 * 100) } ?? "", 7)
                    + pad(String(format: "%.1f", row.rss_mib), 9) + pad(String(format: "%.1f", row.anon_mib), 9))
        }
        lines.append("")
        lines.append("Rows: 'mix' is every operation of the run (its ops/s is the workload's throughput); 'lookup' and")
        lines.append("'store' are that operation's share of the same run (their ops/s are counts per wall second, so a")
        lines.append("slow store also lowers the lookup row) and its own latency percentiles. 'thr' is threads per")
        lines.append("process; 'rss MiB' the largest worker's peak resident memory (VmHWM, index pages it mapped")
        lines.append("included: shared page cache), 'anon MiB' its largest anonymous memory (heap, stacks), sampled.")
        lines.append(
            "ratios, shared-url-cache ÷ the other, same size and processes, this run (higher is better for ours):")
        for ours in rows where ours.bench == BenchImplementationKind.sharedURLCache.rawValue && ours.op == "mix" {
            var parts: [String] = []
            for other in [BenchImplementationKind.rawLimit, .foundation] {
                // The same entry count, except for Foundation (capped: its largest count).
                guard
                    let mix = rows.last(where: {
                        $0.bench == other.rawValue && $0.op == "mix" && $0.size == ours.size && $0.procs == ours.procs
                            && (other == .foundation || $0.n == ours.n)
                    })
                else { continue }
                var part =
                    "\(other.rawValue): throughput \(String(format: "%.2f", ours.ops_s / max(mix.ops_s, 0.001)))×"
                for op in ["lookup", "store"] {
                    if let mine = rows.first(where: {
                        $0.bench == ours.bench && $0.op == op && $0.size == ours.size && $0.procs == ours.procs
                            && $0.n == ours.n
                    }),
                        let theirs = rows.first(where: {
                            $0.bench == other.rawValue && $0.op == op && $0.size == ours.size && $0.procs == ours.procs
                                && $0.n == mix.n
                        })
                    {
                        part +=
                            ", \(op) p50 \(String(format: "%.2f", Double(theirs.p50_us) / Double(max(mine.p50_us, 1))))×"
                    }
                }
                if mix.n != ours.n { part += " (it holds \(mix.n) entries)" }
                parts.append(part)
            }
            if !parts.isEmpty {
                lines.append(
                    "  \(ours.size) B × \(ours.procs) proc × \(ours.threads) thr, \(ours.n) entries — "
                        + parts.joined(separator: "; "))
            }
        }
        lines += scaling(rows)
        return lines.joined(separator: "\n")
    }

    /// Ratios within each implementation: aggregate lookup throughput of P processes ÷ one
    /// process (the target in Benchmarks/RESULTS.md, "Targets": 2 processes ≥ 1.8×), and lookup
    /// throughput at each entry count ÷ the smallest (target: 1M entries ≥ 0.7× 10k).
    static func scaling(_ rows: [Row]) -> [String] {
        var lines: [String] = []
        let lookups = rows.filter { $0.op == "lookup" }
        for row in lookups where row.procs > 1 {
            guard
                let one = lookups.first(where: {
                    $0.bench == row.bench && $0.size == row.size && $0.n == row.n && $0.procs == 1
                })
            else { continue }
            lines.append(
                "  \(row.bench) \(row.size) B, \(row.n) entries: \(row.procs) procs ÷ 1 proc, lookup ops/s "
                    + String(format: "%.2f×", row.ops_s / max(one.ops_s, 0.001)))
        }
        for row in lookups {
            guard
                let small = lookups.filter({ $0.bench == row.bench && $0.size == row.size && $0.procs == row.procs })
                    .min(by: { $0.n < $1.n }),
                small.n < row.n
            else { continue }
            lines.append(
                "  \(row.bench) \(row.size) B × \(row.procs) proc: \(row.n) entries ÷ \(small.n), lookup ops/s "
                    + String(format: "%.2f×", row.ops_s / max(small.ops_s, 0.001)))
        }
        if !lines.isEmpty { lines.insert("scaling, same implementation and size, this run:", at: 0) }
        return lines
    }
}

package struct BenchError: Error, CustomStringConvertible {
    package let description: String
    init(_ description: String) { self.description = description }
}
