import Foundation
import Histogram

/// What one worker process does: a mix of lookups and stores over Zipf-distributed keys.
public struct BenchWorkload: Sendable, Codable {
    public var implementation: BenchImplementationKind
    public var directory: String
    public var entries: Int
    public var bodyBytes: Int
    public var seconds: Double
    public var lookupPercent: Int
    public var zipfExponent: Double
    public var seed: UInt64

    public init(implementation: BenchImplementationKind, directory: String, entries: Int, bodyBytes: Int,
                seconds: Double, lookupPercent: Int, zipfExponent: Double, seed: UInt64) {
        self.implementation = implementation
        self.directory = directory
        self.entries = entries
        self.bodyBytes = bodyBytes
        self.seconds = seconds
        self.lookupPercent = lookupPercent
        self.zipfExponent = zipfExponent
        self.seed = seed
    }

    static func key(_ n: Int, size: Int) -> String { "https://api.example.com/items/\(n)?v=1&size=\(size)" }

    /// JSON-like text, compressible like an API response.
    static func body(size: Int, variant: UInt64) -> [UInt8] {
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
public struct BenchWorkerResult: Codable, Sendable {
    public var lookups = 0
    public var hits = 0
    public var stores = 0
    public var errors = 0
    public var seconds = 0.0
    public var lookupMicros = Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)
    public var storeMicros = Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)

    public init() {}

    mutating func merge(_ other: BenchWorkerResult) {
        lookups += other.lookups
        hits += other.hits
        stores += other.stores
        errors += other.errors
        seconds = max(seconds, other.seconds)
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
        cumulative = table.map { $0 / sum }
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

/// SplitMix64: seeded, so a run can be replayed.
struct BenchRandom {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}

extension BenchWorkload {
    /// Runs in a worker process: the measured loop.
    public func run() throws -> BenchWorkerResult {
        let implementation = try self.implementation.open(directory: directory)
        let keys = ZipfKeys(count: entries, exponent: zipfExponent)
        var random = BenchRandom(state: seed)
        var result = BenchWorkerResult()
        let body = Self.body(size: bodyBytes, variant: seed)
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: .milliseconds(Int(seconds * 1000)))
        let start = clock.now
        while clock.now < deadline {
            let key = Self.key(keys.next(random.unit()), size: bodyBytes)
            let isLookup = Int(random.next() % 100) < lookupPercent
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
        }
        result.seconds = (clock.now - start).seconds
        return result
    }

    /// Fills the implementation's directory up to `entries` (missing keys only).
    public func populate() throws -> Int {
        let implementation = try self.implementation.open(directory: directory)
        var added = 0
        for n in 0..<entries where try implementation.lookup(Self.key(n, size: bodyBytes)) == nil {
            try implementation.store(Self.key(n, size: bodyBytes), body: Self.body(size: bodyBytes, variant: UInt64(n)))
            added += 1
        }
        return added
    }
}

extension Duration {
    var microseconds: Int64 { components.seconds * 1_000_000 + components.attoseconds / 1_000_000_000_000 }
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
