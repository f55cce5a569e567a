import CacheMaintenance
import Foundation
import HTTPCacheSemantics
import SharedURLCacheStore
import Testing
@testable import urlcache
import TestProcess

@Suite(.blockingWaits) struct ArgumentTests {
    @Test(
        "sizes parse in binary and decimal units and as percentages",
        arguments: [
            ("20GiB", SizeLimit.bytes(20 << 30)), ("20G", .bytes(20 << 30)), ("20gb", .bytes(20_000_000_000)),
            ("1.5MiB", .bytes(1_572_864)), ("500MB", .bytes(500_000_000)), ("1048576", .bytes(1_048_576)),
            ("10 KiB", .bytes(10_240)), ("90%", .percent(90)), ("0%", .percent(0)), ("2T", .bytes(2 << 40)),
        ])
    func sizes(text: String, expected: SizeLimit) throws {
        #expect(try SizeLimit(text) == expected)
    }

    @Test("bad sizes are usage errors", arguments: ["", "GiB", "20XB", "-5G", "101%", "abc%", "1e30", "20GiB!"])
    func badSizes(text: String) {
        #expect(throws: MaintenanceError.self) { try SizeLimit(text) }
    }

    @Test("ages parse, alone and summed")
    func ages() throws {
        #expect(try AgeLimit.parse("30d") == .seconds(30 * 86_400))
        #expect(try AgeLimit.parse("12h") == .seconds(12 * 3600))
        #expect(try AgeLimit.parse("90m") == .seconds(5400))
        #expect(try AgeLimit.parse("1d12h") == .seconds(129_600))
        #expect(try AgeLimit.parse("2w") == .seconds(1_209_600))
        for bad in ["", "30", "d", "3x", "-1d", "99999999999999999999d"] {
            #expect(throws: MaintenanceError.self, "\(bad)") { try AgeLimit.parse(bad) }
        }
    }

    @Test("dates: ISO 8601 days and instants, or an age before now")
    func dates() throws {
        let now = Date(timeIntervalSince1970: 1_750_000_000)
        #expect(try DateArgument.parse("2h", now: now) == now.addingTimeInterval(-7200))
        #expect(try DateArgument.parse("2025-06-01T12:00:00Z", now: now) == Date(timeIntervalSince1970: 1_748_779_200))
        #expect(try DateArgument.parse("2025-06-01", now: now) == Date(timeIntervalSince1970: 1_748_736_000))
        #expect(throws: MaintenanceError.self) { try DateArgument.parse("yesterday", now: now) }
    }

    func plan(
        stored: Int, records: Int, indexUsed: Int, _ options: CompactionOptions, _ fs: FileSystemSpace,
        now: Date = Date()
    ) throws -> CompactionPlan {
        try CompactionPlan.make(
            entryBytes: stored + records, indexUsedBytes: indexUsed, options: options, fileSystem: fs, now: now)
    }

    @Test("max-size gives the store the low water as its du target; min-free takes the shortfall of entry bytes")
    func planMarks() throws {
        let fs = FileSystemSpace(totalBytes: 100_000, availableBytes: 50_000)
        var options = CompactionOptions()
        options.maxSize = .bytes(10_000)
        // The store measures du and brings the directory to 90% of 10 000 when it is over that.
        let under = try plan(stored: 8_000, records: 1_000, indexUsed: 5_000, options, fs)
        #expect(under.entryBytes == 9_000 && under.targetBytes == nil && under.reasons.isEmpty)
        #expect(under.diskTargetBytes == 9_000 && under.lowWaterBytes == 9_000)
        // Percentages of the file system; min-free wants 5 000 more bytes available.
        options.maxSize = .percent(50)
        options.lowWater = .bytes(20_000)
        options.minFree = .percent(55)
        options.maxAge = .seconds(3600)
        let now = Date(timeIntervalSince1970: 1_000_000)
        let both = try plan(stored: 10_000, records: 1_000, indexUsed: 2_000, options, fs, now: now)
        #expect(both.maxSizeBytes == 50_000 && both.minFreeBytes == 55_000)
        #expect(both.targetBytes == 11_000 - 5_000 && both.reasons == ["below-min-free", "max-age"])
        #expect(both.unusedBefore == now.addingTimeInterval(-3600))
        #expect(both.diskTargetBytes == 20_000)
        // Both marks: each goes to the store, which evicts until both hold.
        options.maxSize = .bytes(10_500)
        options.lowWater = .percent(80)
        let marks = try plan(stored: 10_000, records: 1_000, indexUsed: 2_000, options, fs)
        #expect(marks.targetBytes == 6_000 && marks.diskTargetBytes == 8_400)
        options.minFree = nil
        #expect(try plan(stored: 10_000, records: 1_000, indexUsed: 2_000, options, fs).targetBytes == nil)
        // Low water above max size is a usage error; so is a percentage with no file system.
        options.lowWater = .bytes(60_000)
        #expect(throws: MaintenanceError.self) { try plan(stored: 1, records: 1, indexUsed: 1, options, fs) }
        options.lowWater = .percent(90)
        options.maxSize = .percent(10)
        #expect(throws: MaintenanceError.self) {
            try CompactionPlan.make(entryBytes: 2, indexUsedBytes: 1, options: options, fileSystem: nil, now: now)
        }
    }

    @Test("exit statuses: busy 4, cache errors 3, usage 2, findings 1")
    func exitStatuses() {
        #expect(ExitStatus(for: CacheError(.busy, "x")) == .busy)
        #expect(ExitStatus(for: CacheError(.directoryNotFound, "x")) == .cacheError)
        #expect(ExitStatus(for: MaintenanceError.invalidArgument("x")) == .usage)
        #expect(ExitStatus(for: MaintenanceError.notFound("x")) == .findings)
        #expect(ExitStatus.allCases.map(\.rawValue) == [0, 1, 2, 3, 4])
    }

    @Test("keys decode back to partition, method and URL, and StoredKey's encoder equals CacheKey's")
    func keys() throws {
        for (partition, method, url) in [
            ("", "GET", "https://API.example.com:443/a?b=1#frag"), ("tenant-ü", "HEAD", "http://x.test:8080/%2F?"),
        ] {
            let key = try CacheKey(partition: partition, method: method == "GET" ? .get : .head, url: url)
            let decoded = try #require(StoredKey(decoding: key.encoded))
            #expect(decoded == StoredKey(partition: partition, method: method, url: key.url.string))
            #expect(try StoredKey.encode(partition: partition, method: method, url: url) == key.encoded)
        }
        #expect(StoredKey(decoding: bytes("GET https://x.test/")) == nil)
        #expect(StoredKey(decoding: [UInt8(ascii: "K"), 1, 0, 0, 0, 9]) == nil, "a length past the end")
        var trailing = try CacheKey(partition: "", method: .get, url: "https://x.test/").encoded
        trailing.append(0)
        #expect(StoredKey(decoding: trailing) == nil)
        #expect(StoredKey.normalizePrefix("HTTPS://API.Example.com:443") == "https://api.example.com")
        #expect(StoredKey.normalizePrefix("https://api.example.com/v1/") == "https://api.example.com/v1/")
        #expect(StoredKey.normalizePrefix("not a url") == "not a url")
    }

    @Test("variants decode as Vary keys")
    func variants() throws {
        // "V", 1, count 2, "accept-encoding" = "gzip", "accept-language" absent.
        var encoded: [UInt8] = [UInt8(ascii: "V"), 1, 0, 0, 0, 2]
        for (name, value) in [("accept-encoding", Optional("gzip")), ("accept-language", nil)] {
            encoded += [0, 0, 0, UInt8(name.utf8.count)] + bytes(name)
            if let value { encoded += [1, 0, 0, 0, UInt8(value.utf8.count)] + bytes(value) } else { encoded.append(0) }
        }
        let variant = try #require(StoredVariant(decoding: encoded))
        #expect(
            variant.fields == [
                .init(name: "accept-encoding", value: "gzip"), .init(name: "accept-language", value: nil),
            ])
        #expect(StoredVariant(decoding: [])?.fields == [])
        #expect(StoredVariant(decoding: Array(encoded.dropLast())) == nil)
    }
}
