import CSharedURLCacheRawLimit
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPCacheSemantics
import SharedURLCache

/// Body sizes of the suite: JSON-like text (an array of product objects with varying numbers).
enum BodySize: Int, CaseIterable {
    case k1 = 1024
    case k16 = 16384
    case k256 = 262_144

    var label: String {
        switch self {
        case .k1: "1KiB"
        case .k16: "16KiB"
        case .k256: "256KiB"
        }
    }
}

/// Deterministic inputs: bodies, URLs and key orders, identical for every implementation.
extension SplitMix64 {
    /// A value in 0..<n (SplitMix64 is the main package's, compiled in here: SplitMix64.swift).
    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
}

enum Inputs {
    /// Distinct bodies per size; entry `i` gets body `i % bodyVariants`.
    static let bodyVariants = 32

    /// JSON-like text of exactly `size` bytes (compresses about 4-6x at zlib level 1).
    static func body(size: Int, seed: UInt64) -> [UInt8] {
        var rng = SplitMix64(state: seed &* 0x1000_0001 &+ UInt64(size))
        let words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
                     "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango"]
        let colors = ["red", "green", "blue", "black", "white", "silver", "orange"]
        var out = "{\"items\":["
        var n = 0
        while out.utf8.count < size {
            let id = 100_000 + rng.below(900_000)
            let name = (0..<3).map { _ in words[rng.below(words.count)] }.joined(separator: " ")
            let desc = (0..<(6 + rng.below(10))).map { _ in words[rng.below(words.count)] }.joined(separator: " ")
            out += n == 0 ? "" : ","
            out += "{\"id\":\(id),\"sku\":\"SKU-\(String(rng.next() & 0xFFFFFF, radix: 16))\",\"name\":\"\(name)\","
            out += "\"price\":\(rng.below(100_000) / 100).\(rng.below(100)),\"inStock\":\(rng.below(2) == 0),"
            out += "\"tags\":[\"\(colors[rng.below(colors.count)])\",\"\(colors[rng.below(colors.count)])\"],"
            out += "\"rating\":\(1 + rng.below(4)).\(rng.below(10)),\"updatedAt\":\"2025-0\(1 + rng.below(9))-1\(rng.below(10))T1\(rng.below(10)):\(10 + rng.below(50)):\(10 + rng.below(50))Z\","
            out += "\"description\":\"\(desc)\"}"
            n += 1
        }
        return Array(out.utf8.prefix(size))
    }

    static func bodies(_ size: BodySize) -> [[UInt8]] {
        (0..<bodyVariants).map { body(size: size.rawValue, seed: UInt64($0)) }
    }

    /// The URL of entry `n` (present in every fixture when `n < entries`).
    static func url(_ n: Int) -> String { "https://api.example.com/items/\(n)?v=1" }
    /// URLs that are never stored. (Not `items/<n>?v=2`: Foundation's URLCache on Linux
    /// answers that with the entry stored for `items/<n>?v=1`.)
    static func missURL(_ n: Int) -> String { "https://api.example.com/missing/\(n)?v=1" }
    /// URLs of entries made and removed by the remove benchmarks.
    static func scratchURL(_ n: Int) -> String { "https://api.example.com/scratch/\(n)?v=1" }

    /// A fixed pseudo-random permutation of 0..<n (lookups in random order).
    static func order(_ n: Int) -> [Int] {
        var a = Array(0..<n)
        var rng = SplitMix64(state: 42)
        for i in stride(from: n - 1, to: 0, by: -1) { a.swapAt(i, rng.below(i + 1)) }
        return a
    }

    /// The store key SharedCache uses for a GET of `url` in the default partition, so the
    /// `SharedURLCacheStore` rows read the SharedURLCache fixture's entries directly.
    static func storeKey(_ url: String) -> [UInt8] {
        try! CacheKey(partition: "", method: .get, url: url).encoded
    }

    static func request(_ url: String) -> URLRequest { URLRequest(url: URL(string: url)!) }

    static func response(_ url: String, length: Int) -> HTTPURLResponse {
        HTTPURLResponse(
            url: URL(string: url)!, statusCode: 200, httpVersion: "HTTP/1.1",
            headerFields: [
                "Content-Type": "application/json", "Cache-Control": "max-age=86400",
                "Content-Length": "\(length)", "ETag": "\"\(url.hashValue & 0xFFFF_FFFF)\"",
            ])!
    }

    static func cached(_ url: String, body: [UInt8]) -> CachedURLResponse {
        CachedURLResponse(response: response(url, length: body.count), data: Data(body), userInfo: nil, storagePolicy: .allowed)
    }
}

/// Which cache a fixture directory holds.
enum FixtureKind: String {
    case ours = "ours"
    case foundation = "foundation"
    case raw = "raw"          // every body in a file
    case rawInline = "rawinline" // compressed bodies <= 2048 bytes in the LMDB value

    var rawInlineMax: UInt32 { self == .rawInline ? RL_INLINE_DEFAULT : 0 }
}

/// Populated cache directories, built once and reused by every later run (a `.ready` marker
/// says a fixture is complete; delete Benchmarks/.fixtures, or set SUC_BENCH_DIR, to rebuild).
enum Fixtures {
    /// Bump when bodies, URLs or the layout of fixtures change.
    static let version = 1

    static var root: URL {
        if let dir = ProcessInfo.processInfo.environment["SUC_BENCH_DIR"], !dir.isEmpty {
            return URL(fileURLWithPath: dir)
        }
        // Benchmarks/Benchmarks/Throughput/Fixtures.swift → Benchmarks/.fixtures
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".fixtures")
    }

    static func directory(_ kind: FixtureKind, _ size: BodySize, entries: Int) -> URL {
        root.appendingPathComponent("\(kind.rawValue)-\(size.label)-\(entries)-v\(version)")
    }

    /// A directory of its own for a benchmark that must start empty (removed first).
    static func scratch(_ name: String) -> URL {
        let url = root.appendingPathComponent("scratch-\(name)")
        try? FileManager.default.removeItem(at: url)
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Reads every file of `dir` once, so the benchmark that follows measures the cache and not
    /// the disk. Without it the first benchmark on a fixture pays the cold reads (this machine
    /// reclaims idle page cache), and the order of benchmarks decides the result.
    static func warm(_ dir: URL) {
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        guard let files = FileManager.default.enumerator(atPath: dir.path) else { return }
        for case let path as String in files {
            let fd = Foundation.open(dir.appendingPathComponent(path).path, O_RDONLY)
            if fd < 0 { continue }
            while read(fd, buffer, 1 << 20) > 0 {}
            close(fd)
        }
    }

    /// The fixture directory, populated with `entries` entries (body `i % variants`) if needed.
    static func ensure(_ kind: FixtureKind, _ size: BodySize, entries: Int) throws -> URL {
        let dir = directory(kind, size, entries: entries)
        let marker = dir.appendingPathComponent(".ready")
        if FileManager.default.fileExists(atPath: marker.path) {
            warm(dir)
            return dir
        }
        try? FileManager.default.removeItem(at: dir)
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let bodies = Inputs.bodies(size)
        let started = Date()
        switch kind {
        case .ours:
            let cache = try SharedCache(memoryCapacity: 0, diskCapacity: 1 << 40, directory: dir)
            // Four writers share each commit (group commit), so populating costs fewer fsyncs.
            let writers = 4
            DispatchQueue.concurrentPerform(iterations: writers) { w in
                for i in stride(from: w, to: entries, by: writers) {
                    let url = Inputs.url(i)
                    cache.storeCachedResponse(Inputs.cached(url, body: bodies[i % bodies.count]), for: Inputs.request(url))
                }
            }
            let stats = cache.statistics
            precondition(stats.refusals == 0, "fixture \(dir.path): \(stats.refusals) stores refused")
        case .foundation:
            let cache = URLCache(memoryCapacity: 0, diskCapacity: 1 << 40, diskPath: dir.path)
            for i in 0..<entries {
                let url = Inputs.url(i)
                cache.storeCachedResponse(Inputs.cached(url, body: bodies[i % bodies.count]), for: Inputs.request(url))
            }
        case .raw, .rawInline:
            // Populated without fsync (the flag only affects this open); the data is in the
            // page cache either way for the runs that follow.
            let env = try RawLimit(dir, inlineMax: kind.rawInlineMax, noSync: true)
            for i in 0..<entries {
                let key = Array(Inputs.url(i).utf8)
                try env.put(key, bodies[i % bodies.count])
            }
        }
        try Verify.fixture(kind, size, dir: dir, entries: entries, bodies: bodies)
        _ = FileManager.default.createFile(atPath: marker.path, contents: Data("\(entries)\n".utf8))
        let seconds = Date().timeIntervalSince(started)
        FileHandle.standardError.write(Data("fixture \(dir.lastPathComponent): \(entries) entries in \(Int(seconds)) s\n".utf8))
        return dir
    }
}

/// Spot checks that every implementation returns the bytes that were stored (the suite
/// compares like with like only if they all work).
enum Verify {
    static func fixture(_ kind: FixtureKind, _ size: BodySize, dir: URL, entries: Int, bodies: [[UInt8]]) throws {
        let probes = [0, 1, entries / 2, entries - 1]
        switch kind {
        case .ours:
            let cache = try SharedCache(memoryCapacity: 0, diskCapacity: 1 << 40, directory: dir)
            for i in probes {
                let got = cache.cachedResponse(for: Inputs.request(Inputs.url(i)))
                precondition(got.map { [UInt8]($0.data) } == bodies[i % bodies.count], "SharedCache fixture: entry \(i) is wrong")
            }
            precondition(cache.cachedResponse(for: Inputs.request(Inputs.missURL(0))) == nil)
        case .foundation:
            let cache = URLCache(memoryCapacity: 0, diskCapacity: 1 << 40, diskPath: dir.path)
            for i in probes {
                let got = cache.cachedResponse(for: Inputs.request(Inputs.url(i)))
                precondition(got.map { [UInt8]($0.data) } == bodies[i % bodies.count], "URLCache fixture: entry \(i) is wrong")
            }
        case .raw, .rawInline:
            let env = try RawLimit(dir, inlineMax: kind.rawInlineMax, noSync: false)
            for i in probes {
                precondition(env.get(Array(Inputs.url(i).utf8)) == bodies[i % bodies.count], "raw fixture: entry \(i) is wrong")
            }
            precondition(env.count == entries, "raw fixture: \(env.count) entries, expected \(entries)")
        }
    }
}

extension RawLimit {
    /// The raw limit over a fixture directory (RawLimit is the main package's BenchmarkDriver
    /// wrapper, compiled in here: RawLimit.swift).
    convenience init(_ dir: URL, inlineMax: UInt32, noSync: Bool) throws {
        try self.init(directory: dir.path, flags: noSync ? UInt32(RL_NOSYNC) : 0, inlineMax: inlineMax)
    }
}
