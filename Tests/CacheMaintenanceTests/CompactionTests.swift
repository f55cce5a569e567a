import CacheMaintenance
import Foundation
import SharedURLCacheStore
import Synchronization
import Testing
@testable import urlcache
import TestProcess

@Suite(.blockingWaits, .timeLimit(.minutes(5)))
struct CompactionTests {
    /// Entries for the large compaction. Filling 100 000 entries takes ~90 s in a debug build (one
    /// commit per store), so the unit test uses 20 000; SUC_COMPACT_ENTRIES=100000 runs the
    /// issue's figure (the release measurement is `urlcache compact`, see the closing note).
    static let largeCount = ProcessInfo.processInfo.environment["SUC_COMPACT_ENTRIES"].flatMap(Int.init) ?? 20_000

    @Test("a directory of 20,000 entries (100,000 on request) is compacted to a capacity, least recently used first")
    func largeDirectory() throws {
        let dir = TestDirectory()
        let count = Self.largeCount
        // Given: `count` tiny entries stored from 4 threads (group commit), oldest first per thread.
        do {
            let store = try CacheStore(directory: dir.cache)
            let fill = ContinuousClock.now
            let failures = Shared(0)
            onOwnThreads(4) { lane in
                for i in stride(from: lane, to: count, by: 4) {
                    do {
                        try store.store(
                            RecordDescriptor(
                                key: try StoredKey.encode(
                                    partition: "p\(i % 3)", method: "GET", url: "https://api.example.com/items/\(i)")),
                            body: bytes("{\"id\":\(i)}"))
                    } catch { failures.withLock { $0 += 1 } }
                }
            }
            #expect(failures.withLock { $0 } == 0)
            print("filled \(count) entries in \(ContinuousClock.now - fill)")
        }
        let maintainer = try CacheMaintainer(directory: dir.cache)
        let before = try maintainer.store.statistics()
        #expect(before.entries == count)
        // When: the capacity is half of what the directory takes on disk (du).
        let duBefore = allocatedBytes(under: dir.cache)
        var options = CompactionOptions()
        options.maxSize = .bytes(duBefore / 2)
        let summary = try maintainer.compact(options)
        // Then: du is at the low water (90% of half), within the store's measurement slack.
        print(
            "compacted \(count) entries: evicted \(summary.result.evictedEntries) in \(String(format: "%.3f", summary.seconds)) s = \(String(format: "%.0f", summary.evictedPerSecond)) entries/s, \(summary.result.transactions) transactions, du \(duBefore) → \(allocatedBytes(under: dir.cache)), \(summary.result.indexRewrites) index rewrites"
        )
        let after = try maintainer.store.statistics()
        let target = try #require(summary.plan.diskTargetBytes)
        #expect(target == duBefore / 2 * 9 / 10)
        let duAfter = allocatedBytes(under: dir.cache)
        #expect(duAfter <= target + target / 100 + (2 << 20), "du \(duAfter) within the low water \(target)")
        #expect(summary.result.diskBytesAfter == duAfter, "the store's measurement is du's")
        #expect(summary.result.indexRewrites >= 1 && summary.result.indexBytesAfter < summary.result.indexBytesBefore)
        #expect(summary.reasons.contains("over-low-water"))
        #expect(summary.result.evictedEntries == count - after.entries)
        #expect(summary.result.evictedEntries > count / 3 && after.entries > count / 5, "down to 90% of half")
        #expect(summary.result.transactions >= summary.result.evictedEntries / options.run.batchSize)
        #expect(after.evictions == summary.result.evictedEntries, "evictions counted in the directory's counters")
        // Stored last, used last: the newest entries survive, the oldest went.
        #expect(
            try maintainer.store.version(
                for: StoredKey.encode(
                    partition: "p\((count - 1) % 3)", method: "GET", url: "https://api.example.com/items/\(count - 1)"))
                != nil)
        #expect(
            try maintainer.store.version(
                for: StoredKey.encode(partition: "p0", method: "GET", url: "https://api.example.com/items/0")) == nil)
        #expect(try maintainer.verify().damageFound == false)
        // A second run finds the directory within its limits and evicts nothing.
        #expect(try maintainer.compact(options).result.evictedEntries == 0)
    }

    /// How a directory is filled before it is compacted to 10% of its du.
    enum Fill: String, CaseIterable, Sendable {
        /// 20,000 small compressible bodies, all inline: the index file is nearly everything.
        case indexHeavy
        /// 400 incompressible 64 KiB bodies in files: the index is small.
        case bodyHeavy
    }

    @Test(
        "compacted to 10% of its du while 4 real processes store and read: du within the bound, no wrong body, verify clean",
        arguments: Fill.allCases)
    func toTenPercentUnderLoad(_ fill: Fill) throws {
        let dir = TestDirectory()
        // Given: a full directory (stored from 4 threads: group commit).
        do {
            let store = try CacheStore(directory: dir.cache)
            let count = fill == .indexHeavy ? 20_000 : 400
            onOwnThreads(4) { lane in
                for i in stride(from: lane, to: count, by: 4) {
                    let body =
                        fill == .indexHeavy
                        ? Array(String(repeating: "{\"id\":\(i),\"name\":\"item\"},", count: 40).utf8)
                        : randomBody(size: 64 << 10, seed: UInt64(i))
                    _ = try? store.store(RecordDescriptor(key: bytes("fill-\(i)")), body: body)
                }
            }
        }
        let duBefore = allocatedBytes(under: dir.cache)
        let capacity = duBefore / 10
        // When: 4 real processes read, store (up to 4 KiB) and remove throughout; the compaction runs.
        let worker = builtExecutable("CacheWorker")
        let workers = try (0..<4).map { id in
            try ChildProcess(worker, ["mixed", dir.cache, "\(7000 + id)", "6", "300", "\(id)", "\(4 << 10)"])
        }
        // They are at work once each has stored its marker (every 50 operations).
        let watcher = try CacheStore(directory: dir.cache)
        let working = waitUntil {
            (0..<4).allSatisfy { (try? watcher.version(for: bytes("marker-\($0)"))) != nil }
        }
        #expect(working, "the 4 processes got going")
        let maintainer = try CacheMaintainer(directory: dir.cache)
        var options = CompactionOptions()
        options.maxSize = .bytes(capacity)
        let summary = try maintainer.compact(options)
        let duAfter = allocatedBytes(under: dir.cache)
        // Then: after compact returns, du is within the capacity plus 1% and the layout's 2 MiB.
        print(
            "\(fill): du \(duBefore) → \(duAfter) for max-size \(capacity): evicted \(summary.result.evictedEntries), \(summary.result.indexRewrites) rewrites (longest store pause \(summary.result.longestRewriteMilliseconds) ms), index \(summary.result.indexBytesBefore) → \(summary.result.indexBytesAfter)"
        )
        #expect(duAfter <= capacity + capacity / 100 + (2 << 20), "du \(duAfter) over \(capacity) + 1% + 2 MiB")
        #expect(summary.result.evictedEntries > 0)
        // No process saw a wrong body, an error, or another process's marker go back.
        for (id, child) in workers.enumerated() {
            let result = child.finish()
            #expect(result.status == 0, "worker \(id): \(result.err)")
        }
        let verification = try maintainer.verify(checkBodies: true)
        #expect(verification.damageFound == false, "\(verification.found)")
    }

    @Test("compaction every second to 50% while 2 real processes read, write and remove")
    func underLoad() throws {
        let dir = TestDirectory()
        _ = try CacheStore(directory: dir.cache) // created once, before the workers race
        let worker = builtExecutable("CacheWorker")
        // Sanitizer builds compact several times slower (scripts/sanitize.sh sets SUC_TIME_SCALE):
        // the run is stretched so that as many rounds happen while the workers run.
        let timeScale = Int(ProcessInfo.processInfo.environment["SUC_TIME_SCALE"] ?? "") ?? 1
        let seconds = 8 * max(1, timeScale)
        // Given: two workers on 400 shared keys (10 hot), bodies up to 32 KiB, self-checking.
        let workers = try (0..<2).map { id in
            try ChildProcess(worker, ["mixed", dir.cache, "\(1000 + id)", "\(seconds)", "400", "\(id)", "\(32 << 10)"])
        }
        let maintainer = try CacheMaintainer(directory: dir.cache)
        var evicted = 0, rounds = 0, roundsEvicting = 0
        let deadline = ContinuousClock.now + .seconds(seconds)
        // When: compaction every ~1 s to half the current size, at least 5 times: on a loaded
        // machine (the suite in parallel) a round takes longer, and the last ones may come after
        // the workers stopped (they still find entries to evict), bounded at five times the run.
        let lastStart = ContinuousClock.now + .seconds(5 * seconds)
        while ContinuousClock.now < deadline || (rounds < 5 && ContinuousClock.now < lastStart) {
            Thread.sleep(forTimeInterval: 1) // the test's own pace: a compaction every second
            var options = CompactionOptions()
            options.maxSize = .bytes(max(1, allocatedBytes(under: dir.cache) - 1))
            options.lowWater = .percent(50)
            options.run.batchSize = 50
            options.run.waitForLock = true
            let summary = try maintainer.compact(options)
            evicted += summary.result.evictedEntries
            rounds += 1
            if summary.result.evictedEntries > 0 { roundsEvicting += 1 }
        }
        // Then: no worker saw a torn body or an error.
        for (id, child) in workers.enumerated() {
            let result = child.finish()
            #expect(result.status == 0, "worker \(id): \(result.err)")
            print("worker \(id): \(result.out.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        print("compactions: \(rounds) rounds, \(roundsEvicting) evicting, \(evicted) entries evicted")
        #expect(rounds >= 5 && roundsEvicting >= 3)
        let verification = try maintainer.verify(checkBodies: true)
        #expect(verification.damageFound == false, "\(verification.found)")
        #expect(verification.found.countersMatch)
        let stats = try maintainer.store.statistics()
        #expect(stats.evictions == evicted, "every eviction, and nothing else, in the shared counter")
        var walked = 0
        try maintainer.store.forEachRecord { _ in
            walked += 1; return true
        }
        #expect(walked == stats.entries)
    }

    @Test("two compactions at once: the second gets .busy (exit 4), or waits with waitForLock")
    func overlapping() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        for i in 0..<2000 { try store.store(RecordDescriptor(key: bytes("k\(i)")), body: bytes("v\(i)")) }
        let first = CacheMaintainer(store: store)
        let second = try CacheMaintainer(directory: dir.cache)
        var options = CompactionOptions()
        options.maxSize = .bytes(1)
        options.lowWater = .bytes(0)
        options.run.batchSize = 10
        var busy: (any Error)?
        let waited = Shared<Result<CompactionSummary, any Error>?>(nil)
        var waiter: Thread?
        let waiterDone = DispatchSemaphore(value: 0)
        // When: while the first runs, a second starts without waiting, and a third waits.
        let summary = try first.compact(options) { _, _ in
            guard waiter == nil else { return }
            do { _ = try second.compact(CompactionOptions()) } catch { busy = error }
            let waiting = {
                var o = CompactionOptions(); o.run.waitForLock = true; return o
            }()
            let thread = Thread {
                waited.withLock { $0 = Result { try second.compact(waiting) } }
                waiterDone.signal()
            }
            waiter = thread
            thread.start()
        }
        // Then
        let error = try #require(busy)
        #expect((error as? CacheError)?.code == .busy)
        #expect(ExitStatus(for: error) == .busy)
        #expect(waiterDone.wait(timeout: .now() + 30) == .success)
        let third = try #require(waited.withLock { $0 })
        #expect(try third.get().entriesBefore == 0, "the waiting run started after the first finished")
        #expect(summary.result.evictedEntries == 2000)
    }

    @Test("a dry run reports the same evictions as the real run and changes nothing")
    func dryRun() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache, configuration: fileConfiguration())
        for i in 0..<300 {
            try store.store(RecordDescriptor(key: bytes("k\(i)")), body: randomBody(size: 2000, seed: UInt64(i)))
        }
        let maintainer = CacheMaintainer(store: store)
        let stats = try store.statistics()
        var options = CompactionOptions()
        options.maxSize = .bytes(allocatedBytes(under: dir.cache))
        options.lowWater = .percent(60)
        options.run.dryRun = true
        let planned = try maintainer.compact(options)
        #expect(try store.statistics() == stats)
        #expect(planned.entriesAfter == 300 - planned.result.evictedEntries)
        options.run.dryRun = false
        let done = try maintainer.compact(options)
        // The dry run plans from the model of the rewritten index; the real run measures after
        // it, so the two may differ by the entries of an index page or so either way (seen: 203
        // planned, 202 taken, du then under the low water mark).
        #expect(planned.result.evictedEntries > 0)
        #expect(
            abs(done.result.evictedEntries - planned.result.evictedEntries) <= 30, "planned \(planned) done \(done)")
        #expect(
            done.result.diskBytesAfter <= (done.plan.lowWaterBytes ?? 0), "the real run reached the low water: \(done)")
    }

    @Test("--max-age evicts entries unused for that long, whatever the size")
    func maxAge() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        for i in 0..<20 { try store.store(RecordDescriptor(key: bytes("k\(i)")), body: bytes("v")) }
        let maintainer = CacheMaintainer(store: store)
        var options = CompactionOptions()
        options.maxAge = .seconds(3600)
        #expect(try maintainer.compact(options).result.evictedEntries == 0)
        let summary = try maintainer.compact(options, now: Date().addingTimeInterval(7200))
        #expect(summary.result.expiredEntries == 20 && summary.entriesAfter == 0)
    }
}
