import Foundation
import SharedURLCacheStore
import Testing
import TestProcess

/// Bad input gets a clear typed error or a miss; nothing crashes; nothing stored is lost.
@Suite(.blockingWaits, .timeLimit(.minutes(5)))
struct BadInputTests {
    func code(_ body: () throws -> Void) -> CacheError.Code? {
        do {
            try body()
            return nil
        } catch let error as CacheError {
            return error.code
        } catch {
            return CacheError.Code("unexpected \(error)")
        }
    }

    @Test("a missing directory without createIfMissing is .directoryNotFound")
    func missingDirectory() {
        let dir = TestDirectory()
        var configuration = CacheStoreConfiguration()
        configuration.createIfMissing = false
        #expect(
            code { _ = try CacheStore(directory: dir.root + "/nope", configuration: configuration) }
                == .directoryNotFound)
    }

    @Test("a directory that cannot be created is a typed error")
    func uncreatableDirectory() throws {
        let dir = TestDirectory()
        // A regular file where a parent directory should be: mkdir fails whatever our privileges.
        try Data("x".utf8).write(to: URL(fileURLWithPath: dir.root + "/file"))
        let result = code { _ = try CacheStore(directory: dir.root + "/file/cache") }
        #expect(
            result == .io || result == .directoryNotFound || result == .notACache, "got \(String(describing: result))")
        // A read-only file system (procfs) refuses creation even to root.
        let proc = code { _ = try CacheStore(directory: "/proc/suc-cannot-create") }
        #expect(
            proc == .permissionDenied || proc == .directoryNotFound || proc == .io, "got \(String(describing: proc))")
    }

    @Test("a symlinked root is refused with .unsafeDirectory")
    func symlinkedRoot() throws {
        let dir = TestDirectory()
        _ = try CacheStore(directory: dir.cache)
        try FileManager.default.createSymbolicLink(atPath: dir.root + "/link", withDestinationPath: dir.cache)
        #expect(code { _ = try CacheStore(directory: dir.root + "/link") } == .unsafeDirectory)
    }

    @Test("a world-writable root is refused with .unsafeDirectory")
    func worldWritable() throws {
        let dir = TestDirectory()
        try FileManager.default.createDirectory(atPath: dir.cache, withIntermediateDirectories: false)
        chmod(dir.cache, 0o777)
        #expect(code { _ = try CacheStore(directory: dir.cache) } == .unsafeDirectory)
    }

    @Test("a foreign, non-empty directory is refused with .notACache and left untouched")
    func foreignDirectory() throws {
        let dir = TestDirectory()
        try FileManager.default.createDirectory(atPath: dir.cache, withIntermediateDirectories: false)
        try Data("precious".utf8).write(to: URL(fileURLWithPath: dir.cache + "/notes.txt"))
        #expect(code { _ = try CacheStore(directory: dir.cache) } == .notACache)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.cache) == ["notes.txt"])
    }

    @Test("an index file that is not LMDB is refused, not overwritten")
    func garbageIndex() throws {
        let dir = TestDirectory()
        try FileManager.default.createDirectory(atPath: dir.cache, withIntermediateDirectories: false)
        let garbage = Data(repeating: 0x5a, count: 8192)
        try garbage.write(to: URL(fileURLWithPath: dir.cache + "/index.lmdb"))
        let result = code { _ = try CacheStore(directory: dir.cache) }
        #expect(result == .notACache || result == .corrupt || result == .index, "got \(String(describing: result))")
        #expect(FileManager.default.contents(atPath: dir.cache + "/index.lmdb") == garbage)
    }

    @Test("oversized key, head, userInfo and body are refused with .tooLarge; earlier entries survive")
    func oversized() throws {
        let dir = TestDirectory()
        var configuration = CacheStoreConfiguration()
        configuration.maximumBodyBytes = 100_000
        configuration.maximumKeyBytes = 1024
        let store = try CacheStore(directory: dir.cache, configuration: configuration)
        try store.store(RecordDescriptor(key: bytes("keep")), body: bytes("kept"))
        try store.store(RecordDescriptor(key: bytes("big")), body: makeBody(size: 100_000, compressible: true))

        #expect(
            code { try store.store(RecordDescriptor(key: Array(repeating: 1, count: 2000)), body: []) } == .tooLarge)
        #expect(
            code {
                try store.store(RecordDescriptor(key: bytes("h"), head: Array(repeating: 1, count: 300_000)), body: [])
            } == .tooLarge)
        #expect(
            code {
                try store.store(
                    RecordDescriptor(key: bytes("u"), userInfo: Array(repeating: 1, count: 70_000)), body: [])
            } == .tooLarge)
        #expect(
            code {
                try store.store(RecordDescriptor(key: bytes("big")), body: makeBody(size: 100_001, compressible: false))
            } == .tooLarge)
        // Streaming past the limit fails at the append that crosses it, and leaves no temp file.
        var writer = try store.makeBodyWriter()
        try writer.append(makeBody(size: 90_000, compressible: false))
        #expect(code { try writer.append(makeBody(size: 20_000, compressible: false)) } == .tooLarge)
        _ = consume writer
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.cache + "/tmp").isEmpty)
        // The empty key is invalid input.
        #expect(code { try store.store(RecordDescriptor(key: []), body: []) } == .invalidInput)

        #expect(try store.record(for: bytes("keep"))?.body == bytes("kept"))
        #expect(
            try store.record(for: bytes("big"))?.bodySize == 100_000,
            "the refused replacement did not touch the old entry")
        #expect(try store.statistics().entries == 2)
    }

    @Test("a lookup with an empty key is a typed error, not a crash")
    func emptyKeyLookup() {
        let dir = TestDirectory()
        #expect(code { _ = try CacheStore(directory: dir.cache).record(for: []) } == .invalidInput)
    }
}
