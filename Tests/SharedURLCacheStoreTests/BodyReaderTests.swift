import Foundation
@_spi(Testing) import SharedURLCacheStore
import Testing
import TestProcess

/// Streaming a stored body with `BodyReader`: the same bytes as a whole read, in any chunking;
/// a damaged body never ends normally and its entry is purged (docs/Reliability.md §3.4, T10).
@Suite(.blockingWaits, .timeLimit(.minutes(5)))
struct BodyReaderTests {
    enum Storage: String, CaseIterable, Sendable {
        case compressedFile, rawFile, compressedInline, rawInline, empty
    }

    static func store(_ dir: TestDirectory, inline: Bool) throws -> CacheStore {
        var configuration = CacheStoreConfiguration()
        configuration.inlineBodyLimitBytes = inline ? 1 << 20 : nil
        return try CacheStore(directory: dir.cache, configuration: configuration)
    }

    static func body(for storage: Storage) -> [UInt8] {
        switch storage {
        case .compressedFile: makeBody(size: 700_000, compressible: true, seed: 3)
        case .rawFile: makeBody(size: 300_001, compressible: false, seed: 4)
        case .compressedInline: makeBody(size: 200_000, compressible: true, seed: 5) // ~50 KB stored
        case .rawInline: makeBody(size: 5_000, compressible: false, seed: 6)
        case .empty: []
        }
    }

    /// Reads the whole body in chunks of `chunk` bytes, checking that no read returns more.
    static func readAll(_ reader: BodyReader, chunk: Int) throws(CacheError) -> [UInt8] {
        var out: [UInt8] = []
        while true {
            let piece = try reader.read(maxBytes: chunk)
            #expect(piece.count <= chunk)
            if piece.isEmpty { return out }
            out += piece
        }
    }

    @Test("chunked read equals the whole read", arguments: Storage.allCases, [1, 777, 64 << 10, 1 << 20])
    func chunkedEqualsWhole(_ storage: Storage, chunk: Int) throws {
        if chunk == 1 && (storage == .compressedFile || storage == .rawFile) { return } // slow, nothing new
        let dir = TestDirectory()
        let inline = storage == .compressedInline || storage == .rawInline || storage == .empty
        let store = try Self.store(dir, inline: inline)
        let raw = storage == .rawFile || storage == .rawInline
        let body = Self.body(for: storage)
        try store.store(RecordDescriptor(key: bytes("k"), head: bytes("head"), storeUncompressed: raw), body: body)

        let (record, reader) = try #require(try store.openBody(for: bytes("k")))
        #expect(record.body == nil && record.head == bytes("head") && record.bodySize == body.count)
        #expect(record.isInline == inline)
        if !body.isEmpty { #expect(record.isCompressed == !raw) }
        #expect(reader.size == body.count)
        let streamed = try Self.readAll(reader, chunk: chunk)
        #expect(streamed == body)
        #expect(try store.record(for: bytes("k"))?.body == streamed)
        #expect(try reader.read().isEmpty, "the end is sticky")
    }

    @Test("a missing entry is nil")
    func missing() throws {
        let dir = TestDirectory()
        let store = try Self.store(dir, inline: false)
        #expect(try store.openBody(for: bytes("nothing")) == nil)
    }

    enum Damage: String, CaseIterable, Sendable {
        case flippedPayloadByte, flippedLastPayloadByte, truncated, extended
    }

    /// Damage applied after the reader was opened: the read that would end the body throws
    /// `.corrupt`, no read before it returned wrong bytes as the end, and the entry is gone.
    @Test("damage while streaming fails the final read and purges", arguments: Damage.allCases, [false, true])
    func damageWhileStreaming(_ damage: Damage, raw: Bool) throws {
        let dir = TestDirectory()
        let store = try Self.store(dir, inline: false)
        // Compressed: large enough that the damaged bytes lie past the reader's first 64 KiB chunk
        // of stored bytes (bytes it already holds are the intact ones and are served as such).
        let body = makeBody(size: raw ? 400_000 : 4_000_000, compressible: !raw, seed: 7)
        try store.store(RecordDescriptor(key: bytes("victim"), storeUncompressed: raw), body: body)
        try store.store(RecordDescriptor(key: bytes("bystander")), body: bytes("fine"))
        let path = dir.cache + "/" + (try #require(store.debugBodyPath(for: bytes("victim"))))
        let (_, reader) = try #require(try store.openBody(for: bytes("victim")))
        let first = try reader.read(maxBytes: 1000)
        #expect(first == Array(body.prefix(1000)))

        // Damage the file in place (same inode: the reader's descriptor sees it).
        let handle = try #require(FileHandle(forUpdatingAtPath: path))
        let size = Int(try handle.seekToEnd())
        let stored = size - 48 - (try #require(try store.debugRawRecord(for: bytes("victim")))).count
        switch damage {
        case .flippedPayloadByte, .flippedLastPayloadByte:
            let offset = UInt64(damage == .flippedPayloadByte ? 48 + stored * 3 / 4 : 48 + stored - 1)
            try handle.seek(toOffset: offset)
            let byte = try #require(try handle.read(upToCount: 1)).first!
            try handle.seek(toOffset: offset)
            try handle.write(contentsOf: [byte ^ 0x10])
        case .truncated:
            try handle.truncate(atOffset: UInt64(48 + stored * 3 / 4))
        case .extended:
            try handle.write(contentsOf: [1, 2, 3])
        }
        try handle.close()

        var received = first
        var failure: CacheError?
        do {
            while true {
                let piece = try reader.read(maxBytes: 32 << 10)
                if piece.isEmpty { break }
                received += piece
            }
        } catch {
            failure = error
        }
        let error = try #require(failure, "a damaged body must not end normally (\(damage), raw \(raw))")
        // A flip inside a zlib stream may be caught before the end (a data error): still .corrupt.
        #expect(error.code == .corrupt)
        #expect(received.count < body.count, "the last bytes are withheld")
        #expect(throws: CacheError.self) { try reader.read() }
        #expect(try store.version(for: bytes("victim")) == nil, "the damaged entry was purged")
        #expect(try store.record(for: bytes("bystander"))?.body == bytes("fine"))
    }

    /// Damage before opening is caught by the opening checks (size, header) or by the final read.
    @Test("damage before opening is a miss or a failed final read; never a wrong body", arguments: Damage.allCases)
    func damageBeforeOpening(_ damage: Damage) throws {
        let dir = TestDirectory()
        let store = try Self.store(dir, inline: false)
        let body = makeBody(size: 300_000, compressible: true, seed: 8)
        try store.store(RecordDescriptor(key: bytes("victim")), body: body)
        let path = dir.cache + "/" + (try #require(store.debugBodyPath(for: bytes("victim"))))
        var data = try #require(FileManager.default.contents(atPath: path))
        switch damage {
        case .flippedPayloadByte: data[48 + 1000] ^= 0x01
        case .flippedLastPayloadByte:
            data[data.count - (try #require(try store.debugRawRecord(for: bytes("victim")))).count - 1] ^= 0x01
        case .truncated: data = data.prefix(data.count - 10)
        case .extended: data.append(0)
        }
        try data.write(to: URL(fileURLWithPath: path))

        if let (_, reader) = try store.openBody(for: bytes("victim")) {
            #expect(throws: CacheError.self) { _ = try Self.readAll(reader, chunk: 64 << 10) }
        }
        #expect(try store.version(for: bytes("victim")) == nil, "the damaged entry was purged")
    }

    @Test("a body removed or replaced by another handle mid-read is read to its end, unchanged")
    func removedMidRead() throws {
        let dir = TestDirectory()
        let store = try Self.store(dir, inline: false)
        let other = try Self.store(dir, inline: false) // a second handle (one environment underneath)
        let body = makeBody(size: 500_000, compressible: true, seed: 9)
        try store.store(RecordDescriptor(key: bytes("k")), body: body)
        let (_, reader) = try #require(try store.openBody(for: bytes("k")))
        var received = try reader.read(maxBytes: 10_000)

        try other.store(RecordDescriptor(key: bytes("k")), body: bytes("replacement"))
        try other.remove(key: bytes("k"))
        #expect(try other.version(for: bytes("k")) == nil)

        received += try Self.readAll(reader, chunk: 50_000)
        #expect(received == body)
    }

    @Test("a closed reader throws; the cache outlives its store reference through the reader")
    func closed() throws {
        let dir = TestDirectory()
        var store: CacheStore? = try Self.store(dir, inline: false)
        let body = makeBody(size: 100_000, compressible: true)
        try store!.store(RecordDescriptor(key: bytes("k")), body: body)
        let (_, reader) = try #require(try store!.openBody(for: bytes("k")))
        store = nil
        #expect(try Self.readAll(reader, chunk: 4096) == body)
        reader.close()
        #expect(throws: CacheError.self) { try reader.read() }
    }

    /// Where a byte range starts: the skipped bytes are not handed out, the rest is the body's.
    @Test(
        "a skip lands where reading the skipped bytes would", arguments: Storage.allCases, [0, 1, 65_537, 250_000, -1])
    func skipThenRead(_ storage: Storage, offset: Int) throws {
        let dir = TestDirectory()
        let inline = storage == .compressedInline || storage == .rawInline || storage == .empty
        let store = try Self.store(dir, inline: inline)
        let body = Self.body(for: storage)
        try store.store(
            RecordDescriptor(key: bytes("k"), storeUncompressed: storage == .rawFile || storage == .rawInline),
            body: body)
        let skipped = offset < 0 ? body.count : min(offset, body.count) // -1: to the very end
        let (_, reader) = try #require(try store.openBody(for: bytes("k")))
        let before = min(skipped, 3) // a read before the skip, where there is room
        if before > 0 { #expect(try reader.read(maxBytes: before) == Array(body.prefix(before))) }
        try reader.skip(skipped - before)
        #expect(try Self.readAll(reader, chunk: 64 << 10) == Array(body[skipped...]))
        #expect(try reader.read().isEmpty, "the end is sticky")
    }

    static func failsAsInvalidInput(_ work: () throws -> Void) -> Bool {
        do {
            try work()
            return false
        } catch {
            return (error as? CacheError)?.code == .invalidInput
        }
    }

    @Test("a skip past the end, or of the stored stream, is invalid input and moves nothing")
    func skipInvalid() throws {
        let dir = TestDirectory()
        let store = try Self.store(dir, inline: false)
        let body = makeBody(size: 100_000, compressible: true, seed: 11)
        try store.store(RecordDescriptor(key: bytes("k")), body: body)
        let (_, reader) = try #require(try store.openBody(for: bytes("k")))
        _ = try reader.read(maxBytes: 10)
        #expect(Self.failsAsInvalidInput { try reader.skip(body.count - 9) })
        #expect(try Self.readAll(reader, chunk: 64 << 10) == Array(body[10...]))
        let (_, encoded) = try #require(try store.openEncodedBody(for: bytes("k")))
        #expect(Self.failsAsInvalidInput { try encoded.skip(1) })
        reader.close()
        #expect(Self.failsAsInvalidInput { try reader.skip(0) })
    }

    /// A raw body is not read before the offset skipped to: a damaged byte there does not stop a
    /// range after it (whose own bytes are intact); a compressed body is inflated through the
    /// skipped part, so damage there is still caught.
    @Test(
        "a raw body is not read before the skip; a compressed one still is, and is checked", arguments: [true, false])
    func skipReadsRawBodiesFromTheOffset(_ raw: Bool) throws {
        let dir = TestDirectory()
        let store = try Self.store(dir, inline: false)
        let body = makeBody(size: raw ? 400_000 : 4_000_000, compressible: !raw, seed: 12)
        try store.store(RecordDescriptor(key: bytes("k"), storeUncompressed: raw), body: body)
        let path = dir.cache + "/" + (try #require(store.debugBodyPath(for: bytes("k"))))
        let stored = (try #require(try store.record(for: bytes("k"), includeBody: false))).storedSize
        let handle = try #require(FileHandle(forUpdatingAtPath: path))
        let offset = UInt64(48 + stored / 4)
        try handle.seek(toOffset: offset)
        let byte = try #require(try handle.read(upToCount: 1)).first!
        try handle.seek(toOffset: offset)
        try handle.write(contentsOf: [byte ^ 0x10])
        try handle.close()

        let (_, reader) = try #require(try store.openBody(for: bytes("k")))
        let from = body.count / 2
        if raw {
            try reader.skip(from)
            #expect(try Self.readAll(reader, chunk: 64 << 10) == Array(body[from...]))
            let (_, whole) = try #require(try store.openBody(for: bytes("k")))
            #expect(throws: CacheError.self) { _ = try Self.readAll(whole, chunk: 64 << 10) }
        } else {
            #expect(throws: CacheError.self) {
                try reader.skip(from)
                _ = try Self.readAll(reader, chunk: 64 << 10)
            }
        }
        #expect(try store.version(for: bytes("k")) == nil, "a full read (or inflate) found the damage and purged")
    }

}

/// Fault injection is process-wide, so these run only when asked and alone:
/// `SUC_IN_PROCESS_FAULTS=1 swift test --filter BodyReaderFaultTests`.
@Suite(
    .blockingWaits, .serialized, .timeLimit(.minutes(5)),
    .enabled(if: ProcessInfo.processInfo.environment["SUC_IN_PROCESS_FAULTS"] == "1"))
struct BodyReaderFaultTests {
    @Test(
        "an injected pread or inflate failure is a typed error, not corruption; the entry stays",
        arguments: [(InjectedFault.read, false), (.read, true), (.inflate, false)])
    func injected(_ fault: InjectedFault, raw: Bool) throws {
        defer { InjectedFault.clearAll() }
        let dir = TestDirectory()
        var configuration = CacheStoreConfiguration()
        configuration.inlineBodyLimitBytes = nil
        let store = try CacheStore(directory: dir.cache, configuration: configuration)
        // past one 64 KiB chunk stored
        let body = makeBody(size: raw ? 300_000 : 4_000_000, compressible: !raw, seed: 10)
        try store.store(RecordDescriptor(key: bytes("k"), storeUncompressed: raw), body: body)
        let (_, reader) = try #require(try store.openBody(for: bytes("k")))
        _ = try reader.read(maxBytes: 1000)
        fault.inject(nth: 1, errno: EIO)
        var failure: CacheError?
        do { _ = try BodyReaderTests.readAll(reader, chunk: 64 << 10) } catch { failure = error }
        InjectedFault.clearAll()
        let error = try #require(failure)
        #expect(error.code == (fault == .inflate ? .outOfMemory : .io))
        #expect(throws: CacheError.self) { try reader.read() }
        // Not bad data: the entry is kept and reads whole afterwards.
        let (_, again) = try #require(try store.openBody(for: bytes("k")))
        #expect(try BodyReaderTests.readAll(again, chunk: 64 << 10) == body)
    }
}
