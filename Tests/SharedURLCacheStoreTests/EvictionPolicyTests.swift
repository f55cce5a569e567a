import Foundation
@_spi(Testing) import SharedURLCacheStore
import Testing
import TestProcess

/// The directory's eviction policy (docs/Capacity.md, "Eviction policy"): least recently used,
/// the default, or S3-FIFO. The tests that claim a difference run under both policies and expect
/// the opposite outcome under LRU, so each fails if the policy does nothing.
@Suite(.blockingWaits, .timeLimit(.minutes(5)))
struct EvictionPolicyTests {
    /// Room for about 20 entries of `entrySize`.
    static let entrySize = 5_000
    static let capacity = 20 * (entrySize + 300)

    static func open(
        _ dir: TestDirectory, _ policy: EvictionPolicy, touchInterval: Duration = .milliseconds(1)
    ) throws -> CacheStore {
        var configuration = CacheStoreConfiguration()
        configuration.touchInterval = touchInterval
        configuration.hardCapacityBytes = capacity
        let store = try CacheStore(directory: dir.cache, configuration: configuration)
        try store.setEvictionPolicy(policy)
        #expect(try store.evictionPolicy() == policy)
        return store
    }

    /// A store with no online capacity (compaction's target is the capacity) that counts hits 1 ms apart.
    static func openWithoutCapacity(_ dir: TestDirectory) throws -> CacheStore {
        var configuration = CacheStoreConfiguration()
        configuration.touchInterval = .milliseconds(1)
        return try CacheStore(directory: dir.cache, configuration: configuration)
    }

    static func put(_ store: CacheStore, _ key: String, seed: UInt64 = 1) throws {
        try store.store(
            RecordDescriptor(key: bytes(key)), body: makeBody(size: entrySize, compressible: false, seed: seed))
    }

    /// A hit the next store's commit counts (touches are written with the next write).
    static func hit(_ store: CacheStore, _ key: String) throws {
        Thread.sleep(forTimeInterval: 0.002) // past the touch interval
        #expect(try store.record(for: bytes(key)) != nil, "\(key) is stored")
    }

    /// "hot" stored and hit (`hit`) three times between stores, `beforeScan`, then a scan of 200
    /// new keys: whether "hot" is still there.
    static func hotEntryOutlivesScan(
        _ store: CacheStore, hit: () throws -> Void, beforeScan: () throws -> Void = {}
    ) throws -> Bool {
        try put(store, "hot")
        for round in 0..<3 {
            try hit()
            try put(store, "warm-\(round)")
        }
        try beforeScan()
        for i in 0..<200 { try put(store, "scan-\(i)", seed: UInt64(i)) }
        return try store.version(for: bytes("hot")) != nil
    }

    /// After `hotEntryOutlivesScan`: the hot entry stayed under S3-FIFO alone, the scan evicted,
    /// the bytes held to the capacity, verify clean.
    static func expectScanOutcome(_ store: CacheStore, _ policy: EvictionPolicy, kept: Bool) throws {
        #expect(kept == (policy == .s3fifo), "\(policy): the hot entry \(kept ? "stayed" : "was evicted")")
        #expect(try store.statistics().evictions > 150)
        #expect(try store.diskUsage(measure: false).entryBytes <= capacity)
        try expectClean(store, "after the scan")
    }

    static func expectClean(_ store: CacheStore, _ what: String) throws {
        let report = try store.verify(checkBodies: true)
        #expect(!report.isDamaged && report.strayIndexKeys == 0, "\(what): \(report)")
    }

    @Test(
        "a scan of one-hit wonders evicts a frequently hit entry under LRU, never under S3-FIFO, whether the hits come past the touch interval or right after the store within the default one",
        arguments: EvictionPolicy.allCases, [false, true])
    func scanResistance(policy: EvictionPolicy, hitsWithinInterval: Bool) throws {
        let dir = TestDirectory()
        // The default interval (a minute) spares LRU a record write per hit; S3-FIFO's counter must
        // hear of the hits anyway, or a new entry's first minute of hits is lost.
        let interval = hitsWithinInterval ? CacheStoreConfiguration().touchInterval : .milliseconds(1)
        let store = try Self.open(dir, policy, touchInterval: interval)
        let kept = try Self.hotEntryOutlivesScan(store) {
            if hitsWithinInterval {
                #expect(try store.record(for: bytes("hot")) != nil, "hot is stored")
            } else {
                try Self.hit(store, "hot")
            }
        }
        try Self.expectScanOutcome(store, policy, kept: kept)
    }

    @Test(
        "a frequently hit entry stored again (a new response for it) keeps its hits under S3-FIFO and outlives a scan; under LRU it does not",
        arguments: EvictionPolicy.allCases)
    func storedAgainKeepsItsHits(policy: EvictionPolicy) throws {
        let dir = TestDirectory()
        let store = try Self.open(dir, policy)
        let larger = makeBody(size: 2 * Self.entrySize, compressible: false, seed: 42)
        let kept = try Self.hotEntryOutlivesScan(store, hit: { try Self.hit(store, "hot") }) {
            // At the capacity (the oldest warm entry evicted), so the new response, twice the
            // size, makes room by eviction as well.
            for i in 0..<17 { try Self.put(store, "fill-\(i)", seed: UInt64(100 + i)) }
            let evictions = try store.statistics().evictions
            #expect(evictions > 0)
            try Self.hit(store, "hot")
            try store.store(RecordDescriptor(key: bytes("hot")), body: larger)
            #expect(try store.statistics().evictions > evictions)
        }
        try Self.expectScanOutcome(store, policy, kept: kept)
        if kept { #expect(try store.record(for: bytes("hot"))?.body == larger) }
    }

    @Test(
        "the oldest entry hit just before a store at the capacity is not that store's victim",
        arguments: EvictionPolicy.allCases)
    func hitBeforeStoreIsSeenByItsEviction(policy: EvictionPolicy) throws {
        let dir = TestDirectory()
        let store = try Self.open(dir, policy)
        var stored = 0
        while try store.statistics().evictions == 0 {
            Thread.sleep(forTimeInterval: 0.002) // one stored time each: LRU's order is the store order
            try Self.put(store, "e-\(stored)", seed: UInt64(stored))
            stored += 1
        }
        // The oldest entry left is the next victim, unless the hit (written with the next store's
        // commit) is applied before that store evicts.
        let oldest = try #require((0..<stored).first { try store.version(for: bytes("e-\($0)")) != nil })
        try Self.hit(store, "e-\(oldest)")
        try Self.put(store, "new")
        #expect(try store.version(for: bytes("e-\(oldest)")) != nil, "\(policy): the entry just hit was evicted")
        #expect(try store.version(for: bytes("e-\(oldest + 1)")) == nil, "\(policy): the next oldest went instead")
        try Self.expectClean(store, "after the store")
    }

    @Test(
        "a key evicted from the small queue and stored again goes to main, where a scan does not reach it",
        arguments: EvictionPolicy.allCases)
    func ghostReturnsToMain(policy: EvictionPolicy) throws {
        let dir = TestDirectory()
        let store = try Self.open(dir, policy)
        try Self.put(store, "returning")
        for i in 0..<30 { try Self.put(store, "first-\(i)", seed: UInt64(i)) }
        #expect(try store.version(for: bytes("returning")) == nil, "evicted, never hit")
        // Stored again beside a key stored for the first time, then a scan: the ghost sends the
        // returning key to main, the new one to the small queue with the scan.
        try Self.put(store, "returning")
        try Self.put(store, "new")
        for i in 0..<40 { try Self.put(store, "second-\(i)", seed: UInt64(100 + i)) }
        let returning = try store.version(for: bytes("returning")) != nil
        #expect(returning == (policy == .s3fifo), "\(policy): the returning key \(returning ? "stayed" : "went")")
        #expect(try store.version(for: bytes("new")) == nil, "\(policy): a new key with no hit is evicted")
        try Self.expectClean(store, "after the ghost")
    }

    /// Whether a key evicted from the small queue and stored again goes to main (the ghost
    /// remembered it): a scan after it evicts it otherwise.
    static func returnsToMain(_ store: CacheStore, _ key: String) throws -> Bool {
        try put(store, key)
        for i in 0..<30 { try put(store, "\(key)-first-\(i)", seed: UInt64(i)) }
        #expect(try store.version(for: bytes(key)) == nil, "evicted, never hit")
        try put(store, key)
        for i in 0..<40 { try put(store, "\(key)-second-\(i)", seed: UInt64(100 + i)) }
        return try store.version(for: bytes(key)) != nil
    }

    @Test(
        "a ghost file that cannot be opened (a directory in its place) leaves the ghost empty, and the ghost works again once the file can be made"
    )
    func ghostFileComesBack() throws {
        let dir = TestDirectory()
        // The policy chosen by a handle that is closed after (choosing it empties the ghost, which
        // opens its file): the next handle opens the file at its first eviction.
        _ = try Self.open(dir, .s3fifo)
        let path = dir.cache + "/ghost"
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        var configuration = CacheStoreConfiguration()
        configuration.touchInterval = .milliseconds(1)
        configuration.hardCapacityBytes = Self.capacity
        let store = try CacheStore(directory: dir.cache, configuration: configuration)
        #expect(try !Self.returnsToMain(store, "while-broken"), "no ghost while its file cannot be opened")
        try FileManager.default.removeItem(atPath: path)
        Thread.sleep(forTimeInterval: 1.1) // the next open is tried a second after the last that failed
        #expect(try Self.returnsToMain(store, "after-repair"), "the ghost remembers again")
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && !isDirectory.boolValue)
        try Self.expectClean(store, "after the ghost came back")
    }

    @Test(
        "compaction over its target evicts by the policy: the scan under S3-FIFO, the entry asked for again under LRU",
        arguments: EvictionPolicy.allCases)
    func compactionFollowsPolicy(policy: EvictionPolicy) throws {
        let dir = TestDirectory()
        let store = try Self.openWithoutCapacity(dir)
        try store.setEvictionPolicy(policy)
        try Self.put(store, "hot")
        for round in 0..<3 {
            try Self.hit(store, "hot")
            try Self.put(store, "warm-\(round)")
        }
        for i in 0..<100 { try Self.put(store, "scan-\(i)", seed: UInt64(i)) }
        let report = try store.compact(CompactionPolicy(targetBytes: Self.capacity))
        #expect(report.evictedEntries > 70, "\(report)")
        let kept = try store.version(for: bytes("hot")) != nil
        #expect(kept == (policy == .s3fifo), "\(policy): the hot entry \(kept ? "stayed" : "was evicted")")
        try Self.expectClean(store, "after compaction")
    }

    @Test(
        "main turns as a clock over the use order: an entry hit since the hand last passed it stays for another round, one that was not goes, oldest first, and the hand comes round"
    )
    func mainTurnsAsAClock() throws {
        let dir = TestDirectory()
        let store = try Self.openWithoutCapacity(dir)
        let keys = (0..<20).map { "m-\($0)" }
        for (i, key) in keys.enumerated() {
            Thread.sleep(forTimeInterval: 0.002) // one use time each: the use order is the store order
            try Self.put(store, key, seed: UInt64(i))
        }
        // Chosen on a populated directory: every entry in main, oldest use first, counters at 0.
        try store.setEvictionPolicy(.s3fifo)
        for key in keys where Int(key.dropFirst(2))! % 2 == 0 { try Self.hit(store, key) }
        try store.flush()
        let perEntry = try store.diskUsage(measure: false).entryBytes / keys.count
        func left() throws -> [Int] { try keys.indices.filter { try store.version(for: bytes(keys[$0])) != nil } }
        // Half the bytes: the first round lowers the hit entries' counters and evicts the others.
        _ = try store.compact(CompactionPolicy(targetBytes: 10 * perEntry + perEntry / 2))
        let firstRound = try left()
        #expect(firstRound == Array(stride(from: 0, to: 20, by: 2)), "the entries hit stayed: \(firstRound)")
        // A quarter: the hand comes round to the oldest, whose counters are now 0.
        _ = try store.compact(CompactionPolicy(targetBytes: 5 * perEntry + perEntry / 2))
        let secondRound = try left()
        #expect(secondRound == [10, 12, 14, 16, 18], "the second round took the oldest: \(secondRound)")
        try Self.expectClean(store, "after two rounds")
    }

    @Test(
        "main's hand passes over more entries of the small queue than one look reads and still takes main's entry, not the small queue's oldest"
    )
    func mainFoundPastManySmallEntries() throws {
        let dir = TestDirectory()
        let store = try Self.openWithoutCapacity(dir)
        try store.setEvictionPolicy(.s3fifo)
        func put(_ key: String) throws {
            try store.store(RecordDescriptor(key: bytes(key)), body: bytes("body of \(key)"))
        }
        // 1,500 keys in the small queue, then three in main (places written as a ghost's return
        // leaves them), with the queues' counters saying the small queue is empty: main's turn,
        // its hand at the start of the use order, 1,500 small entries before main's first.
        for i in 0..<1_500 { try put("small-\(i)") }
        Thread.sleep(forTimeInterval: 0.002)
        for i in 0..<3 { try put("main-\(i)") }
        for i in 0..<3 {
            try store.debugPutUseOrderValue(
                for: bytes("main-\(i)"), value: [0x6D] + Self.be64(UInt64(10_000 + i)) + [0] + Self.le64(100))
        }
        try store.debugPutMeta(
            key: Array("s3fifo".utf8),
            value: Self.le64(20_000) + [UInt8](repeating: 0, count: 24) + Self.le64(0)
                + [UInt8](repeating: 0, count: 56))
        let total = try store.diskUsage(measure: false).entryBytes
        let report = try store.compact(CompactionPolicy(targetBytes: total - 10))
        #expect(report.evictedEntries == 1)
        let mainLeft = try (0..<3).filter { try store.version(for: bytes("main-\($0)")) != nil }
        #expect(mainLeft.count == 2, "one of main's entries went: \(mainLeft) left")
        #expect(try store.statistics().entries == 1_502)
    }

    @Test("switching the policy on a populated directory keeps every entry and verify clean, both ways")
    func switchingKeepsEntries() throws {
        let dir = TestDirectory()
        let store = try Self.open(dir, .lru)
        for i in 0..<15 { try Self.put(store, "entry-\(i)", seed: UInt64(i)) }
        for i in stride(from: 0, to: 15, by: 2) { try Self.hit(store, "entry-\(i)") }
        let versions = try (0..<15).map { try store.version(for: bytes("entry-\($0)")) }
        #expect(versions.allSatisfy { $0 != nil })
        for policy in [EvictionPolicy.s3fifo, .lru, .s3fifo] {
            try store.setEvictionPolicy(policy)
            #expect(try store.evictionPolicy() == policy)
            #expect(try (0..<15).map { try store.version(for: bytes("entry-\($0)")) } == versions, "\(policy)")
            try Self.expectClean(store, "switched to \(policy)")
        }
        // At the capacity under S3-FIFO, a recount (verify --fix) keeps the queues as they are.
        for i in 0..<30 { try Self.put(store, "more-\(i)", seed: UInt64(50 + i)) }
        try Self.expectClean(store, "at the capacity")
        let fixed = try store.verify(fix: true)
        #expect(fixed.repaired == 0, "\(fixed)")
        try Self.expectClean(store, "after a recount")
    }

    @Test("a directory of the earlier release opens as LRU, unchanged; choosing S3-FIFO keeps every entry")
    func earlierReleaseDirectory() throws {
        let dir = TestDirectory()
        let golden = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../Fixtures/earlier-release/golden-6538a5b.tar.gz").standardized
        let unpack = try ChildProcess.run(URL(fileURLWithPath: "/bin/tar"), ["-xzf", golden.path, "-C", dir.root])
        #expect(unpack.status == 0, "\(unpack.err)")
        let store = try CacheStore(directory: dir.root + "/golden")
        #expect(try store.evictionPolicy() == .lru)
        let entries = try store.statistics().entries
        try Self.expectClean(store, "as the earlier release left it")
        try store.setEvictionPolicy(.s3fifo)
        #expect(try store.statistics().entries == entries)
        try Self.expectClean(store, "under S3-FIFO")
    }

    static func be64(_ v: UInt64) -> [UInt8] { (0..<8).reversed().map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
    static func le64(_ v: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }

    @Test(
        "places kept as an earlier build kept them (keys of their own in meta) are read by verify, hits and stores, and leave with their entries"
    )
    func placesOfAnEarlierBuild() throws {
        let dir = TestDirectory()
        let store = try Self.open(dir, .lru) // entries with no place anywhere
        let keys = (0..<15).map { "old-\($0)" }
        for (i, key) in keys.enumerated() { try Self.put(store, key, seed: UInt64(i)) }
        // What that build wrote for them under S3-FIFO: the last in the small queue, the others in
        // main, at positions 0..<15; each place (queue, position, counter, bytes) under 0x00 'f' ‖
        // index key; the queues' counters (the small queue's bytes and entries among them) under
        // 0x00 'E' 'c'.
        for (i, key) in keys.enumerated() {
            let ikey = CacheStore.debugIndexKey(for: bytes(key))
            let queue: UInt8 = i == keys.count - 1 ? 0x53 : 0x4D
            try store.debugPutMeta(key: [0, 0x46, queue] + Self.be64(UInt64(i)) + ikey, value: [])
            try store.debugPutMeta(
                key: [0, 0x66] + ikey, value: [queue] + Self.be64(UInt64(i)) + [0] + Self.le64(UInt64(Self.entrySize)))
        }
        let counters = Self.le64(UInt64(keys.count)) + Self.le64(UInt64(Self.entrySize)) + Self.le64(1) + Self.le64(0)
        try store.debugPutMeta(key: [0, 0x45, 0x63], value: counters)
        // And its ghost, buckets of 16 slots in meta: dropped at this build's first write.
        for bucket: UInt8 in 0..<3 {
            try store.debugPutMeta(key: [0, 0x67, 0, bucket], value: [UInt8](repeating: bucket + 1, count: 128))
        }
        try store.debugPutMeta(key: [0, 0x45], value: [1])
        #expect(try store.evictionPolicy() == .s3fifo)
        try Self.expectClean(store, "with the earlier build's places")
        // A hit raises a counter found there; stores of the same keys keep their places.
        try Self.hit(store, "old-3")
        for key in keys.prefix(7) { try Self.put(store, key, seed: 99) }
        try Self.expectClean(store, "after hits and stores")
        // At the capacity, main's oldest entries are still placed as that build placed them: the
        // queues' walk reaches them, as it does the new entries placed in their use-order keys.
        for i in 0..<30 { try Self.put(store, "new-\(i)", seed: UInt64(200 + i)) }
        let left = try keys.filter { try store.version(for: bytes($0)) != nil }.count
        #expect(left < keys.count, "main's oldest went by its queue: \(left) of \(keys.count) left")
        try Self.expectClean(store, "after evictions at the capacity")
        // Each entry's place goes with it, wherever it was kept: nothing of theirs stays behind.
        for key in keys + (0..<30).map({ "new-\($0)" }) { _ = try store.remove(key: bytes(key)) }
        try Self.put(store, "last")
        try Self.expectClean(store, "after the old entries went")
        #expect(try store.statistics().entries == 1)
    }

    @Test(
        "under S3-FIFO with a quota, hits move the entry's use-order key and its place goes along: the hot entry outlives a scan"
    )
    func placeMovesWithTheUseOrder() throws {
        let dir = TestDirectory()
        let store = try Self.open(dir, .s3fifo)
        func put(_ key: String, seed: UInt64 = 1) throws {
            try store.store(
                RecordDescriptor(key: bytes(key), partition: bytes("q")),
                body: makeBody(size: Self.entrySize, compressible: false, seed: seed))
        }
        try put("hot")
        // A quota far above the capacity: it never evicts, but while it is set hits rewrite the
        // records' last use and move their use-order keys.
        _ = try store.setPartitionQuota(bytes("q"), maxBytes: 100 * Self.capacity)
        for round in 0..<3 {
            try Self.hit(store, "hot")
            try put("warm-\(round)")
        }
        for i in 0..<200 { try put("scan-\(i)", seed: UInt64(i)) }
        #expect(try store.version(for: bytes("hot")) != nil, "the hits counted: hot stayed in main")
        #expect(try store.statistics().evictions > 150)
        try Self.expectClean(store, "after hits that moved use-order keys")
    }

    /// Values an entry's use-order key may hold after damage, each of a shape S3-FIFO must not
    /// take for a place: none, too short, too long to carry, an unknown queue, a place in the small
    /// queue at a position no queue key has with the largest counter and size, a page's worth, a
    /// place in the small queue that the queues' counters do not count, a place in main with the
    /// largest counter and size.
    static let damagedUseValues: [[UInt8]] = [
        [],
        [1, 2, 3],
        [0x53] + [UInt8](repeating: 0xFF, count: 39),
        [0x07] + [UInt8](repeating: 0, count: 17),
        [0x53] + be64(1 << 63) + [200] + le64(.max),
        [0x4D] + [UInt8](repeating: 0xEE, count: 5_000),
        keylessPlace,
        [0x6D] + be64(.max) + [255] + le64(.max),
    ]
    /// A place in the small queue (which has no queue keys) at a position no entry was given.
    static let keylessPlace: [UInt8] = [0x73] + be64(12_345) + [1] + le64(UInt64(entrySize))

    @Test(
        "garbage in the use order's values (each entry's place): hits, stores, removals and evictions go on, verify reports it, --fix rebuilds"
    )
    func damagedPlaces() throws {
        let dir = TestDirectory()
        let store = try Self.open(dir, .s3fifo)
        for i in 0..<15 { try Self.put(store, "entry-\(i)", seed: UInt64(i)) }
        try Self.expectClean(store, "before the damage")
        for (i, value) in Self.damagedUseValues.enumerated() {
            try store.debugPutUseOrderValue(for: bytes("entry-\(i)"), value: value)
        }
        let damaged = try store.verify()
        #expect(damaged.strayIndexKeys >= UInt64(Self.damagedUseValues.count), "\(damaged)")
        // Every damaged entry is still served, hit (its counter raised or not), stored again, removed.
        for i in Self.damagedUseValues.indices { try Self.hit(store, "entry-\(i)") }
        // A small-queue place left on the use-order key of a record that no longer decodes: the
        // small queue's walk meets a key whose record is gone, and drops it.
        try store.debugPutUseOrderValue(for: bytes("entry-14"), value: Self.keylessPlace)
        try store.debugOverwriteRecord(for: bytes("entry-14"), with: [1, 2, 3])
        try Self.put(store, "entry-0", seed: 70)
        try Self.put(store, "entry-3", seed: 73)
        try Self.put(store, "entry-5", seed: 75)
        #expect(try store.remove(key: bytes("entry-4")) == 1)
        #expect(
            try store.record(for: bytes("entry-0"))?.body
                == makeBody(size: Self.entrySize, compressible: false, seed: 70))
        // Past the capacity: the queues evict around the damage, the bytes stay within it.
        for i in 15..<60 { try Self.put(store, "entry-\(i)", seed: UInt64(i)) }
        #expect(try store.diskUsage(measure: false).entryBytes <= Self.capacity)
        #expect(try store.statistics().evictions > 20)
        for i in 55..<60 {
            #expect(
                try store.record(for: bytes("entry-\(i)"))?.body
                    == makeBody(size: Self.entrySize, compressible: false, seed: UInt64(i)), "entry-\(i)")
        }
        _ = try store.verify(fix: true)
        try Self.expectClean(store, "after --fix")
        for i in 60..<80 { try Self.put(store, "entry-\(i)", seed: UInt64(i)) }
        #expect(try store.diskUsage(measure: false).entryBytes <= Self.capacity)
        try Self.expectClean(store, "stores after --fix")
    }

    @Test(
        "the small queue, which has no keys of its own, is found again from the start of the use order when its counters are lost, past more entries of main than one eviction looks at"
    )
    func smallQueueFoundAgain() throws {
        let dir = TestDirectory()
        func open(capacity: Int?) throws -> CacheStore {
            var configuration = CacheStoreConfiguration()
            configuration.hardCapacityBytes = capacity
            return try CacheStore(directory: dir.cache, configuration: configuration)
        }
        func put(_ store: CacheStore, _ key: String) throws {
            try store.store(RecordDescriptor(key: bytes(key)), body: bytes("body of \(key)"))
        }
        // 2,500 entries, all in main (the queues built again when the policy is chosen). The handle
        // is closed before the next opens: a process has one handle per directory.
        let perEntry = try {
            let unbounded = try open(capacity: nil)
            for i in 0..<2_500 { try put(unbounded, "old-\(i)") }
            try unbounded.setEvictionPolicy(.s3fifo)
            // The queues' counters lost: the small queue is looked for from the start of the use order.
            try unbounded.debugPutMeta(key: Array("s3fifo".utf8), value: [1])
            return try unbounded.diskUsage(measure: false).entryBytes / 2_500
        }()
        // At a capacity of about 2,400 entries, 400 new keys asked for once, more than the small
        // queue's tenth: once the walk is past main's entries (more than one eviction looks at,
        // however many evictions take), the small queue's oldest go, so not all new keys stay.
        let store = try open(capacity: 2_400 * perEntry)
        for i in 0..<400 { try put(store, "new-\(i)") }
        let newLeft = try (0..<400).filter { try store.version(for: bytes("new-\($0)")) != nil }.count
        #expect(newLeft < 350, "one-hit keys evicted from the small queue: \(400 - newLeft) of 400")
        #expect(try store.diskUsage(measure: false).entryBytes <= 2_400 * perEntry)
        _ = try store.verify(fix: true)
        try Self.expectClean(store, "after --fix")
    }

    @Test("garbage in the policy key and the queues' keys: eviction goes on, verify reports it, --fix rebuilds")
    func damagedKeys() throws {
        let dir = TestDirectory()
        let store = try Self.open(dir, .s3fifo)
        for i in 0..<25 { try Self.put(store, "entry-\(i)", seed: UInt64(i)) }
        let garbage: [([UInt8], [UInt8])] = [
            ([0, 0x45, 0x63], [1, 2, 3]), // the queues' counters, too short
            ([0, 0x66] + [UInt8](repeating: 0xAB, count: 48), [0xFF]), // an entry's place naming no record
            ([0, 0x67, 0, 0], [1, 2, 3]), // a ghost bucket, too short
            ([0, 0x46, 0x4D] + [UInt8](repeating: 0, count: 8) + [UInt8](repeating: 0xAA, count: 48), []), // a stray
            ([0, 0x46, 0x53, 1, 2, 3], []), // a key of no known length first in the small queue
        ]
        for (key, value) in garbage { try store.debugPutMeta(key: key, value: value) }
        for i in 25..<60 { try Self.put(store, "entry-\(i)", seed: UInt64(i)) }
        #expect(try store.diskUsage(measure: false).entryBytes <= Self.capacity)
        #expect(try store.verify().strayIndexKeys > 0)
        _ = try store.verify(fix: true)
        try Self.expectClean(store, "after --fix")
        // A policy this release does not know is least recently used; the stores go on.
        try store.debugPutMeta(key: [0, 0x45], value: [9])
        #expect(try store.evictionPolicy() == .lru)
        for i in 60..<80 { try Self.put(store, "entry-\(i)", seed: UInt64(i)) }
        #expect(try store.diskUsage(measure: false).entryBytes <= Self.capacity)
        try Self.expectClean(store, "under an unknown policy")
    }
}
