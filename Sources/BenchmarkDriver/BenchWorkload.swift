import Foundation
import Histogram
import SeededRandom
import Synchronization

/// What one worker process does: a mix of lookups and stores over Zipf-distributed keys.
package struct BenchWorkload: Sendable, Codable {
    package var implementation: BenchImplementationKind
    package var directory: String
    package var entries: Int
    package var bodyBytes: Int
    /// How long, what share of lookups, which keys, how many threads (see ``BenchMix``).
    package var mix: BenchMix

    package init(
        implementation: BenchImplementationKind, directory: String, entries: Int, bodyBytes: Int, mix: BenchMix
    ) {
        self.implementation = implementation
        self.directory = directory
        self.entries = entries
        self.bodyBytes = bodyBytes
        self.mix = mix
    }

    static func key(_ n: Int, size: Int) -> String { "https://api.example.com/items/\(n)?v=1&size=\(size)" }

    /// JSON-like text, compressible like an API response; `urlcache bench-ops` stores the same corpus.
    package static func body(size: Int, variant: UInt64) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(size + 64)
        var n = variant
        while out.count < size {
            n = n &* 6364136223846793005 &+ 1442695040888963407
            out += Array(#"{"id":\#(n >> 40),"name":"item","tags":["a","b"],"price":9.99},"#.utf8)
        }
        return Array(out.prefix(size))
    }
}

/// What a worker reports: operation counts and latency histograms (µs).
package struct BenchWorkerResult: Codable, Sendable {
    package var lookups = 0
    package var hits = 0
    package var stores = 0
    package var errors = 0
    package var seconds = 0.0
    /// Peak resident set of the worker process (Linux: VmHWM, see ``BenchWorkload/peakResidentKiB()``),
    /// KiB. It includes the pages of the index map the process touched (shared page cache).
    package var peakResidentKiB = 0
    /// Largest anonymous resident memory (the process's own heap and stacks, no file pages) seen
    /// during the run, KiB: sampled every 65,536 operations of a thread and at the end; Linux
    /// only (/proc/self/status RssAnon), else 0.
    package var anonymousResidentKiB = 0
    package var lookupMicros = Histogram<UInt64>(
        highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)
    package var storeMicros = Histogram<UInt64>(
        highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)

    package init() {}

    mutating func merge(_ other: BenchWorkerResult) {
        lookups += other.lookups
        hits += other.hits
        stores += other.stores
        errors += other.errors
        seconds = max(seconds, other.seconds)
        peakResidentKiB = max(peakResidentKiB, other.peakResidentKiB)
        anonymousResidentKiB = max(anonymousResidentKiB, other.anonymousResidentKiB)
        lookupMicros.add(other.lookupMicros)
        storeMicros.add(other.storeMicros)
    }
}

/// Zipf over 0..<n by inverse CDF (binary search in the cumulative weights).
struct ZipfKeys {
    private let cumulative: [Double]
    init(count: Int, exponent: Double) {
        var sum = 0.0
        var table = [Double]()
        table.reserveCapacity(count)
        for rank in 1...max(count, 1) {
            sum += 1 / pow(Double(rank), exponent)
            table.append(sum)
        }
        // In place: a second table would double the worker's peak memory at a million keys.
        for i in table.indices { table[i] /= sum }
        cumulative = table
    }
    func next(_ u: Double) -> Int {
        var low = 0, high = cumulative.count - 1
        while low < high {
            let mid = (low + high) / 2
            if cumulative[mid] < u { low = mid + 1 } else { high = mid }
        }
        return low
    }
}

extension SplitMix64 {
    /// A uniform value in [0, 1).
    mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}

extension BenchWorkload {
    /// Runs in a worker process: the measured loop, on `mix.threads` threads sharing one open cache.
    package func run() throws -> BenchWorkerResult {
        let implementation = try self.implementation.open(directory: directory, durable: mix.durable)
        let keys = ZipfKeys(count: entries, exponent: mix.zipfExponent)
        let body = Self.body(size: bodyBytes, variant: mix.seed)
        let threads = implementation.isThreadSafe ? max(mix.threads, 1) : 1
        let clock = ContinuousClock()
        let start = clock.now
        let deadline = start.advanced(by: .milliseconds(Int(mix.seconds * 1000)))
        var result = BenchWorkerResult()
        if threads == 1 {
            result = loop(
                implementation, keys: keys, body: body, seed: mix.seed, quota: mix.operations, until: deadline)
        } else {
            // Plain threads, not concurrentPerform: that runs at most one iteration per core at
            // once, and these loops must all run for the whole time.
            final class Shared: Sendable {
                let results = Mutex<[BenchWorkerResult]>([])
            }
            let shared = Shared()
            let group = DispatchGroup()
            nonisolated(unsafe) let implementation = implementation // thread-safe: isThreadSafe
            for index in 0..<threads {
                let quota = mix.operations.map { $0 / threads + (index < $0 % threads ? 1 : 0) }
                let seed = mix.seed &+ UInt64(index) &* 0x2545_F491_4F6C_DD1D
                group.enter()
                Thread {
                    let mine = self.loop(
                        implementation, keys: keys, body: body, seed: seed, quota: quota, until: deadline)
                    shared.results.withLock { $0.append(mine) }
                    group.leave()
                }.start()
            }
            group.wait()
            for mine in shared.results.withLock({ $0 }) { result.merge(mine) }
        }
        result.seconds = (clock.now - start).seconds
        result.peakResidentKiB = Self.peakResidentKiB()
        result.anonymousResidentKiB = max(result.anonymousResidentKiB, Self.anonymousResidentKiB())
        return result
    }

    /// One thread's loop: until `quota` operations are done, or else until `deadline`.
    private func loop(
        _ implementation: any BenchImplementation, keys: ZipfKeys, body: [UInt8], seed: UInt64,
        quota: Int?, until deadline: ContinuousClock.Instant
    ) -> BenchWorkerResult {
        var random = SplitMix64(state: seed)
        var result = BenchWorkerResult()
        let clock = ContinuousClock()
        var done = 0
        while quota.map({ done < $0 }) ?? (clock.now < deadline) {
            let key = Self.key(keys.next(random.unit()), size: bodyBytes)
            let isLookup = Int(random.next() % 100) < mix.lookupPercent
            let t0 = clock.now
            do {
                if isLookup {
                    if try implementation.lookup(key) != nil { result.hits += 1 }
                    result.lookups += 1
                } else {
                    try implementation.store(key, body: body)
                    result.stores += 1
                }
            } catch {
                result.errors += 1
            }
            let micros = UInt64(max(1, (clock.now - t0).microseconds))
            if isLookup { _ = result.lookupMicros.record(micros) } else { _ = result.storeMicros.record(micros) }
            done += 1
            if done & 0xFFFF == 0 {
                result.anonymousResidentKiB = max(result.anonymousResidentKiB, Self.anonymousResidentKiB())
            }
        }
        return result
    }

    /// Peak resident set of this process, KiB. On Linux from /proc/self/status `VmHWM`, not
    /// getrusage: a process started with posix_spawn (as Foundation's Process does) runs in
    /// its parent's address space until exec, and exec folds the parent's peak into the child's
    /// `ru_maxrss` (seen here: every worker reported the parent's 800 MiB after it populated a
    /// million entries). `VmHWM` belongs to the process's own address space.
    static func peakResidentKiB() -> Int {
        #if os(Linux)
        return statusKiB("VmHWM:")
        #else
        var usage = rusage()
        guard getrusage(RUSAGE_SELF, &usage) == 0 else { return 0 }
        return Int(usage.ru_maxrss) / 1024 // bytes on Darwin
        #endif
    }

    static func anonymousResidentKiB() -> Int { statusKiB("RssAnon:") }

    /// A "Name:   123 kB" line of /proc/self/status, or 0 where there is none.
    static func statusKiB(_ field: String) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field) })
        else { return 0 }
        return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0
    }

    /// Fills the implementation's directory up to `entries` (missing keys only). Our store is
    /// filled from several threads so stores share commits (a million entries one fsync at a
    /// time would take many minutes); the raw limit fills without fsync.
    package func populate() throws -> Int {
        let implementation = try self.implementation.open(directory: directory, durable: false, populating: true)
        let threads = implementation.isThreadSafe ? 8 : 1
        final class Counts: Sendable {
            let added = Atomic<Int>(0)
            let failure = Mutex<(any Error)?>(nil)
        }
        let counts = Counts()
        nonisolated(unsafe) let shared = implementation // thread-safe when threads > 1
        let fill: @Sendable (Int) -> Void = { index in
            for n in stride(from: index, to: entries, by: threads) {
                do {
                    if try shared.lookup(Self.key(n, size: bodyBytes)) == nil {
                        try shared.store(
                            Self.key(n, size: bodyBytes), body: Self.body(size: bodyBytes, variant: UInt64(n)))
                        counts.added.add(1, ordering: .relaxed)
                    }
                } catch {
                    counts.failure.withLock { $0 = $0 ?? error }
                    return
                }
            }
        }
        if threads == 1 {
            fill(0)
        } else {
            let group = DispatchGroup()
            for index in 0..<threads {
                group.enter()
                Thread {
                    fill(index)
                    group.leave()
                }.start()
            }
            group.wait()
        }
        if let error = counts.failure.withLock({ $0 }) { throw error }
        return counts.added.load(ordering: .relaxed)
    }
}

extension Duration {
    var microseconds: Int64 { components.seconds * 1_000_000 + components.attoseconds / 1_000_000_000_000 }
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
