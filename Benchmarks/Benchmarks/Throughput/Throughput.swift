import Benchmark
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPCacheSemantics
import SharedURLCache
import SharedURLCacheStore

// Names are `<operation>/<implementation>/<size>` (docs/Style.md rule 40), so one run prints them side
// by side. Implementations:
//   SharedURLCacheStore      the store core through `CacheStore` on the SharedURLCache fixture,
//                            with the keys SharedCache computes: no Foundation objects, no HTTP
//   SharedURLCache           SharedCache, memoryCapacity 0 (every hit reads the index and body)
//   SharedURLCache+memory    SharedCache with a 256 MiB memory tier; hits cycle over 256 hot
//                            entries already in memory (each hit still reads the entry's
//                            version from the index, which is what keeps the tier coherent)
//   Foundation.URLCache@1k   Foundation's URLCache (FoundationNetworking), memoryCapacity 0,
//                            1k entries: it is O(entries) per call, so it gets a smaller cache
//   raw-limit                CSharedURLCacheRawLimit, every body in a file, one fdatasync per
//                            commit (MDB_NOMETASYNC, like our default durability)
//   raw-limit+inline         the same with compressed bodies <= 2048 bytes in the LMDB value
//                            (the rule our store applies by default)
//   raw-limit+nosync, raw-limit+inline+nosync   stores without any fsync (MDB_NOSYNC)
// Ours and the raw limit hold 10k entries unless the name says @100k.
// Every sample is one operation; setup outside the operation (the store that a remove needs)
// is excluded with startMeasurement/stopMeasurement.

let entries = 10_000
let foundationEntries = 1_000
let bigEntries = 100_000
let hotEntries = 256

/// SUC_BENCH_TIME_ONLY=1 measures time alone. The syscall metrics read /proc/self/io around
/// every sample, which adds microseconds (and 16 mallocs) to each one: a floor that hides most
/// of the difference between a 3 µs and a 10 µs operation. Use it for time ratios; the default
/// set is for the deterministic metrics (mallocs, syscalls) and the thresholds.
let timeOnly = ProcessInfo.processInfo.environment["SUC_BENCH_TIME_ONLY"] == "1"

/// SUC_BENCH_SECONDS=N runs every benchmark for N seconds with no iteration cap (for profiling
/// one benchmark under perf; the default is a few seconds or a fixed count, whichever is first).
let profileSeconds = ProcessInfo.processInfo.environment["SUC_BENCH_SECONDS"].flatMap { Int($0) }

func configuration(iterations: Int = 20_000, seconds: Int = 2) -> Benchmark.Configuration {
    let iterations = profileSeconds == nil ? iterations : 100_000_000
    let seconds = profileSeconds ?? seconds
    return .init(
        metrics: timeOnly ? [.throughput, .wallClock] : [.throughput, .wallClock, .mallocCountTotal, .readSyscalls, .writeSyscalls],
        timeUnits: .nanoseconds,
        warmupIterations: 20,
        maxDuration: .seconds(seconds),
        maxIterations: iterations,
        thresholds: timeOnly ? [:] : [
            .mallocCountTotal: .init(relative: [.p50: 5.0, .p90: 10.0], absolute: [.p50: 2, .p90: 4])
        ]
    )
}

/// Everything one benchmark needs, made in its setup (outside any measurement).
final class State: @unchecked Sendable {
    var cursor = 0
    var ours: SharedCache?
    var store: CacheStore?
    var foundation: URLCache?
    var raw: RawLimit?
    var requests: [URLRequest] = []
    var keys: [[UInt8]] = []
    var responses: [CachedURLResponse] = []
    var bodies: [[UInt8]] = []
    var urls: [String] = []
    var order: [Int] = []

    @inline(__always) func next(_ n: Int) -> Int {
        defer { cursor = cursor &+ 1 }
        return cursor % n
    }
}

enum Impl {
    case store, ours, oursMemory, foundation, raw, rawInline, rawNoSync, rawInlineNoSync

    var label: String {
        switch self {
        case .store: "SharedURLCacheStore"
        case .ours: "SharedURLCache"
        case .oursMemory: "SharedURLCache+memory"
        case .foundation: "Foundation.URLCache@1k"
        case .raw: "raw-limit"
        case .rawInline: "raw-limit+inline"
        case .rawNoSync: "raw-limit+nosync"
        case .rawInlineNoSync: "raw-limit+inline+nosync"
        }
    }

    var fixture: FixtureKind {
        switch self {
        case .store, .ours, .oursMemory: .ours
        case .foundation: .foundation
        case .raw, .rawNoSync: .raw
        case .rawInline, .rawInlineNoSync: .rawInline
        }
    }

    var defaultEntries: Int { self == .foundation ? foundationEntries : entries }
    var noSync: Bool { self == .rawNoSync || self == .rawInlineNoSync }
}

/// Opens the implementation on its populated fixture.
func open(_ impl: Impl, _ size: BodySize, entries n: Int) throws -> State {
    let dir = try Fixtures.ensure(impl.fixture, size, entries: n)
    let state = State()
    switch impl {
    case .store:
        // The store SharedCache opens on the directory, with its default configuration.
        state.store = try CacheStore(directory: dir.path)
    case .ours:
        state.ours = try SharedCache(memoryCapacity: 0, diskCapacity: 1 << 40, directory: dir)
    case .oursMemory:
        state.ours = try SharedCache(memoryCapacity: 256 << 20, diskCapacity: 1 << 40, directory: dir)
    case .foundation:
        state.foundation = URLCache(memoryCapacity: 0, diskCapacity: 1 << 40, diskPath: dir.path)
    case .raw, .rawInline, .rawNoSync, .rawInlineNoSync:
        state.raw = try RawLimit(dir, inlineMax: impl.fixture.rawInlineMax, noSync: impl.noSync)
    }
    return state
}

func name(_ op: String, _ impl: Impl, _ size: BodySize, entries n: Int? = nil) -> String {
    let suffix = n.map { $0 == impl.defaultEntries ? "" : "@\($0 / 1000)k" } ?? ""
    return "\(op)/\(impl.label)\(suffix)/\(size.label)"
}

// MARK: - lookup-hit

func registerLookupHit(_ impl: Impl, _ size: BodySize, entries n: Int) {
    Benchmark(name("lookup-hit", impl, size, entries: n), configuration: configuration()) { (benchmark: Benchmark, state: State) in
        switch impl {
        case .ours, .oursMemory, .foundation:
            let request = state.requests[state.next(state.requests.count)]
            let response = impl == .foundation ? state.foundation!.cachedResponse(for: request) : state.ours!.cachedResponse(for: request)
            guard let response else { return benchmark.error("lookup-hit missed") }
            blackHole(response.data.count)
        case .store:
            let record = try? state.store!.record(for: state.keys[state.next(state.keys.count)])
            guard let body = record?.body else { return benchmark.error("lookup-hit missed") }
            blackHole(body.count)
        default:
            let length = state.raw!.lookup(state.keys[state.next(state.keys.count)])
            if length < 0 { return benchmark.error("lookup-hit missed") }
            blackHole(length)
        }
    } setup: {
        let state = try open(impl, size, entries: n)
        let live = impl == .oursMemory ? hotEntries : n
        let order = Inputs.order(n).prefix(live)
        state.requests = order.map { Inputs.request(Inputs.url($0)) }
        state.keys = order.map { impl == .store ? Inputs.storeKey(Inputs.url($0)) : Array(Inputs.url($0).utf8) }
        if impl == .oursMemory { // fill the memory tier with the hot set
            for request in state.requests { _ = state.ours!.cachedResponse(for: request) }
            precondition(state.ours!.statistics.memoryEntries == hotEntries, "memory tier holds \(state.ours!.statistics.memoryEntries)")
        }
        return state
    }
}

// MARK: - lookup-miss

func registerLookupMiss(_ impl: Impl, _ size: BodySize) {
    Benchmark(name("lookup-miss", impl, size), configuration: configuration()) { (benchmark: Benchmark, state: State) in
        switch impl {
        case .ours, .oursMemory, .foundation:
            let request = state.requests[state.next(state.requests.count)]
            let response = impl == .foundation ? state.foundation!.cachedResponse(for: request) : state.ours!.cachedResponse(for: request)
            if response != nil { return benchmark.error("lookup-miss hit") }
        case .store:
            if (try? state.store!.record(for: state.keys[state.next(state.keys.count)])) != nil {
                return benchmark.error("lookup-miss hit")
            }
        default:
            if state.raw!.contains(state.keys[state.next(state.keys.count)]) { return benchmark.error("lookup-miss hit") }
        }
    } setup: {
        let state = try open(impl, size, entries: impl.defaultEntries)
        state.requests = (0..<4096).map { Inputs.request(Inputs.missURL($0)) }
        state.keys = (0..<4096).map { impl == .store ? Inputs.storeKey(Inputs.missURL($0)) : Array(Inputs.missURL($0).utf8) }
        return state
    }
}

// MARK: - store

/// Replaces existing entries, round-robin in random order (a refresh: the old body is removed
/// after the commit, by every implementation).
func registerStore(_ impl: Impl, _ size: BodySize) {
    Benchmark(name("store", impl, size), configuration: configuration(iterations: 5_000)) { (benchmark: Benchmark, state: State) in
        let i = state.next(state.urls.count)
        switch impl {
        case .ours, .oursMemory, .foundation:
            let response = state.responses[state.order[i] % state.responses.count]
            if impl == .foundation {
                state.foundation!.storeCachedResponse(response, for: state.requests[i])
            } else {
                state.ours!.storeCachedResponse(response, for: state.requests[i])
            }
        default:
            do { try state.raw!.put(state.keys[i], state.bodies[state.order[i] % state.bodies.count]) } catch {
                benchmark.error("\(error)")
            }
        }
    } setup: {
        let state = try open(impl, size, entries: impl.defaultEntries)
        state.bodies = Inputs.bodies(size)
        // Entry i gets body i % variants (as in the fixture), so the stored bytes do not change.
        state.order = Inputs.order(impl.defaultEntries)
        state.urls = state.order.map { Inputs.url($0) }
        state.requests = state.urls.map { Inputs.request($0) }
        state.keys = state.urls.map { Array($0.utf8) }
        // One prepared response per body: building CachedURLResponse is the caller's work.
        state.responses = state.bodies.indices.map { Inputs.cached(Inputs.url(0), body: state.bodies[$0]) }
        return state
    } teardown: {
        // Nothing: the fixture keeps the same keys and bodies.
    }
}

// MARK: - remove

/// Each sample stores a fresh entry (not measured), then removes it (measured).
func registerRemove(_ impl: Impl, _ size: BodySize) {
    Benchmark(name("remove", impl, size), configuration: configuration(iterations: 2_000)) { (benchmark: Benchmark, state: State) in
        let n = state.cursor
        state.cursor += 1
        let url = Inputs.scratchURL(n)
        let body = state.bodies[n % state.bodies.count]
        switch impl {
        case .ours, .oursMemory, .foundation:
            let request = Inputs.request(url)
            let response = Inputs.cached(url, body: body)
            if impl == .foundation {
                state.foundation!.storeCachedResponse(response, for: request)
                benchmark.startMeasurement()
                state.foundation!.removeCachedResponse(for: request)
            } else {
                state.ours!.storeCachedResponse(response, for: request)
                benchmark.startMeasurement()
                state.ours!.removeCachedResponse(for: request)
            }
            benchmark.stopMeasurement()
        default:
            let key = Array(url.utf8)
            do {
                try state.raw!.put(key, body)
                benchmark.startMeasurement()
                try state.raw!.remove(key)
                benchmark.stopMeasurement()
            } catch {
                benchmark.error("\(error)")
            }
        }
    } setup: {
        let state = try open(impl, size, entries: impl.defaultEntries)
        state.bodies = Inputs.bodies(size)
        return state
    }
}

// MARK: - remove-since

/// Each sample stores 10 fresh entries (not measured), then removes every entry stored since
/// just before them (measured): 10 of the fixture's 10k (1k for Foundation) go.
func registerRemoveSince(_ impl: Impl, _ size: BodySize) {
    let batch = 10
    Benchmark(name("remove-since", impl, size), configuration: configuration(iterations: 500)) { (benchmark: Benchmark, state: State) in
        let since = Date()
        for j in 0..<batch {
            let n = state.cursor * batch + j
            let url = Inputs.scratchURL(n)
            let response = Inputs.cached(url, body: state.bodies[n % state.bodies.count])
            if impl == .foundation {
                state.foundation!.storeCachedResponse(response, for: Inputs.request(url))
            } else {
                state.ours!.storeCachedResponse(response, for: Inputs.request(url))
            }
        }
        state.cursor += 1
        benchmark.startMeasurement()
        if impl == .foundation {
            state.foundation!.removeCachedResponses(since: since)
        } else {
            state.ours!.removeCachedResponses(since: since)
        }
        benchmark.stopMeasurement()
    } setup: {
        let state = try open(impl, size, entries: impl.defaultEntries)
        state.bodies = Inputs.bodies(size)
        return state
    } teardown: {
    }
}

let benchmarks: @Sendable () -> Void = {
    for size in BodySize.allCases {
        for impl in [Impl.store, .ours, .oursMemory, .foundation, .raw, .rawInline] {
            registerLookupHit(impl, size, entries: impl.defaultEntries)
        }
        for impl in [Impl.store, .ours, .foundation, .raw] { registerLookupMiss(impl, size) }
        for impl in [Impl.ours, .oursMemory, .foundation, .raw, .rawInline, .rawNoSync, .rawInlineNoSync] {
            registerStore(impl, size)
        }
        for impl in [Impl.ours, .foundation, .raw, .rawInline] { registerRemove(impl, size) }
        for impl in [Impl.ours, .foundation] { registerRemoveSince(impl, size) }
    }
    // The lookup-hit target (Benchmarks/RESULTS.md, "Targets") is at 100k entries (1 KiB bodies: ~25 s to
    // populate once).
    for impl in [Impl.store, .ours, .raw, .rawInline] { registerLookupHit(impl, .k1, entries: bigEntries) }
}
