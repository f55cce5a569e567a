import Foundation
import SharedURLCacheStore
import Testing
import TestProcess

@Suite(.blockingWaits, .timeLimit(.minutes(5)))
struct RoundTripTests {
    static let sizes = [0, 1, 1024, 1 << 20, 64 << 20]

    @Test("round trip of bodies of every size, compressible and not", arguments: sizes, [true, false])
    func roundTrip(size: Int, compressible: Bool) throws {
        let dir = TestDirectory()
        do {
            let store = try CacheStore(directory: dir.cache)
            let body = makeBody(size: size, compressible: compressible, seed: UInt64(size))
            // Binary head with NUL, CR/LF and bytes ≥ 0x80; userInfo likewise opaque bytes.
            let head: [UInt8] = [0, 13, 10, 0xff, 0x80] + bytes("HTTP/1.1 200 OK\r\n")
            let userInfo: [UInt8] = (0..<300).map { UInt8($0 % 256) }
            let descriptor = RecordDescriptor(
                key: bytes("GET https://api.example.com/x?size=\(size)"), variant: bytes("accept=json"),
                partition: bytes("svc-a"), head: head, userInfo: userInfo,
                storedAt: Date(timeIntervalSince1970: 1_700_000_000.123), appFlags: 0xABCD)
            let version = try store.store(descriptor, body: body)

            let hit = try #require(try store.record(for: descriptor.key, variant: descriptor.variant))
            #expect(hit.head == head)
            #expect(hit.userInfo == userInfo)
            #expect(hit.partition == bytes("svc-a"))
            #expect(hit.variant == bytes("accept=json"))
            #expect(hit.version == version)
            #expect(hit.appFlags == 0xABCD)
            #expect(hit.bodySize == size)
            #expect(abs(hit.storedAt.timeIntervalSince1970 - 1_700_000_000.123) < 0.001)
            let (storedSize, isCompressed) = (hit.storedSize, hit.isCompressed)
            if compressible && size >= 1024 { #expect(storedSize < size / 2, "compressible body was compressed") }
            if !compressible && size > 0 { #expect(isCompressed == false, "incompressible body stored raw") }
            let matches = hit.body == body
            #expect(matches, "body round-trips bit-exact")
            #expect(try store.record(for: descriptor.key, variant: bytes("accept=xml")) == nil, "other variant misses")

            let stats = try store.statistics()
            #expect(stats.entries == 1)
            #expect(stats.bodyBytes == size)
        }
    }

    /// Up to 2 KiB a compressed body is deflated with the format's fixed codes (the reader builds
    /// no decoding tables for it); a larger one with codes of its own. Either is one zlib stream.
    /// A streamed body that ends within the writer's 64 KiB sample is compressed as a whole one.
    @Test(
        "a small body is deflated with fixed codes, a larger one with codes of its own, put whole or streamed",
        arguments: [
            (1024, 1, false), (2048, 1, false), (2049, 2, false), (16384, 2, false), (1024, 1, true),
            (16384, 2, true),
        ] as [(Int, UInt8, Bool)])
    func smallBodiesUseFixedCodes(size: Int, blockType: UInt8, streamed: Bool) throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        let body = makeBody(size: size, compressible: true, seed: 31)
        if streamed {
            var writer = try store.makeBodyWriter()
            for start in stride(from: 0, to: size, by: 700) { try writer.append(body[start..<min(start + 700, size)]) }
            _ = try writer.commit(RecordDescriptor(key: bytes("k")))
        } else {
            try store.store(RecordDescriptor(key: bytes("k")), body: body)
        }
        let hit = try #require(try store.record(for: bytes("k")))
        #expect(hit.body == body)
        #expect(hit.isCompressed)
        let (_, encoded) = try #require(try store.openEncodedBody(for: bytes("k")))
        let stream = try BodyReaderTests.readAll(encoded, chunk: 64 << 10)
        // RFC 1950 header (2 bytes), then the first RFC 1951 block: BFINAL, then BTYPE (1 fixed, 2 own codes).
        #expect(stream.count == hit.storedSize && stream.count > 2)
        #expect((stream[2] >> 1) & 3 == blockType)
    }

    @Test("a body streamed in pieces reads back whole")
    func streamedWriter() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        let body = makeBody(size: 3 << 20, compressible: true)
        var writer = try store.makeBodyWriter()
        var offset = 0
        while offset < body.count {
            let end = min(offset + 70_001, body.count)
            try writer.append(body[offset..<end])
            offset = end
        }
        let version = try writer.commit(RecordDescriptor(key: bytes("k")))
        let hit = try #require(try store.record(for: bytes("k")))
        #expect(hit.body == body)
        #expect(hit.version == version)
    }

    /// A streamed body is stored as it is when its first 64 KiB do not compress (so its file is
    /// no larger than the body, and a range deep in it reads only that range); otherwise
    /// compressed. One shorter than that sample is stored as a whole body would be: compressed
    /// unless that is no smaller. Pieces of any size cross the sample's end.
    @Test(
        "a streamed body is stored as it is when its start does not compress",
        arguments: [
            (400_000, false, 1_000, false), (400_000, false, 400_000, false), (400_000, false, 65_535, false),
            (3 << 20, false, 70_001, false), (400_000, true, 1_000, true), (3 << 20, true, 400_000, true),
            (30_000, false, 1_000, false), (30_000, true, 1_000, true), (65_536, false, 65_536, false),
            (0, false, 1, true),
        ] as [(Int, Bool, Int, Bool)])
    func streamedRawOrCompressed(size: Int, compressible: Bool, piece: Int, storedCompressed: Bool) throws {
        let dir = TestDirectory()
        var configuration = CacheStoreConfiguration()
        configuration.inlineBodyLimitBytes = nil
        let store = try CacheStore(directory: dir.cache, configuration: configuration)
        let body = makeBody(size: size, compressible: compressible, seed: 21)
        var writer = try store.makeBodyWriter()
        var offset = 0
        while offset < body.count {
            let end = min(offset + piece, body.count)
            try writer.append(body[offset..<end])
            offset = end
        }
        _ = try writer.commit(RecordDescriptor(key: bytes("k")))
        let hit = try #require(try store.record(for: bytes("k")))
        #expect(hit.body == body)
        if size > 0 {
            #expect(hit.isCompressed == storedCompressed)
            if !storedCompressed { #expect(hit.storedSize == size) }
        }
        let (_, reader) = try #require(try store.openBody(for: bytes("k")))
        #expect(try BodyReaderTests.readAll(reader, chunk: 64 << 10) == body, "streamed back whole, checked")
    }

    @Test("replacing an entry changes its version and keeps counters exact")
    func replace() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        let v1 = try store.store(RecordDescriptor(key: bytes("k")), body: makeBody(size: 100_000, compressible: true))
        let v2 = try store.store(RecordDescriptor(key: bytes("k")), body: makeBody(size: 10, compressible: true))
        #expect(v2 > v1)
        #expect(try store.version(for: bytes("k")) == v2)
        let stats = try store.statistics()
        #expect(stats.entries == 1)
        #expect(stats.bodyBytes == 10)
        // The replaced body file was unlinked after the commit: one entry, no body file.
        let files = try FileManager.default.subpathsOfDirectory(atPath: dir.cache + "/bodies").filter { $0.count > 3 }
        #expect(files.isEmpty, "inline replacement leaves no body file: \(files)")
    }

    @Test("variants of one key are listed and removed together")
    func variants() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        for v in ["", "gzip", "br"] {
            try store.store(RecordDescriptor(key: bytes("k"), variant: bytes(v)), body: bytes("body-\(v)"))
        }
        try store.store(RecordDescriptor(key: bytes("other")), body: bytes("x"))
        let listed = try store.variants(for: bytes("k")).map { String(decoding: $0.variant, as: UTF8.self) }
        #expect(Set(listed) == ["", "gzip", "br"])
        #expect(try store.record(for: bytes("k"), variant: bytes("br"))?.body == bytes("body-br"))
        #expect(try store.remove(key: bytes("k"), variant: bytes("gzip")) == 1)
        #expect(try store.variants(for: bytes("k")).count == 2)
        #expect(try store.remove(key: bytes("k")) == 2)
        #expect(try store.variants(for: bytes("k")).isEmpty)
        #expect(try store.record(for: bytes("other"))?.body == bytes("x"))
        #expect(try store.statistics().entries == 1)
    }

    @Test("two handles on one directory in one process share one environment")
    func twoHandles() throws {
        let dir = TestDirectory()
        let a = try CacheStore(directory: dir.cache)
        let b = try CacheStore(directory: dir.cache)
        try a.store(RecordDescriptor(key: bytes("k")), body: bytes("v"))
        #expect(try b.record(for: bytes("k"))?.body == bytes("v"))
    }
}

@Suite(.blockingWaits) struct EntrySizes {
    @Test("a lookup and a scan report the same sizes; the stats' storedBytes is the sum of footprints")
    func lookupAndScanAgree() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        // Inline, file-backed and raw bodies.
        let bodies: [(String, [UInt8], Bool)] = [
            ("small", makeBody(size: 1024, compressible: true, seed: 1), false),
            ("large", makeBody(size: 300_000, compressible: false, seed: 2), false),
            ("raw", makeBody(size: 20_000, compressible: true, seed: 3), true),
        ]
        for (key, body, raw) in bodies {
            try store.store(RecordDescriptor(key: bytes(key), storeUncompressed: raw), body: body)
        }
        var scanned: [[UInt8]: StoredRecord] = [:]
        _ = try store.forEachRecord {
            scanned[$0.key] = $0; return true
        }
        var footprints = 0
        for (key, body, raw) in bodies {
            let hit = try #require(try store.record(for: bytes(key)))
            let listed = try #require(scanned[bytes(key)])
            #expect(hit.storedSize == listed.storedSize && hit.footprintSize == listed.footprintSize, "\(key)")
            if raw { #expect(hit.storedSize == body.count) }
            #expect(hit.isInline ? hit.footprintSize == hit.storedSize : hit.footprintSize > hit.storedSize, "\(key)")
            footprints += hit.footprintSize
        }
        #expect(try store.statistics().storedBytes == footprints)
    }
}
