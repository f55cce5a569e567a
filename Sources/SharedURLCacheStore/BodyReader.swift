import CSharedURLCache
import Foundation

/// A stored body read piece by piece, so a large body never sits in memory whole: at most one
/// 64 KiB chunk of stored bytes plus what the caller asks for.
///
/// ```swift
/// if let (record, reader) = try store.openBody(for: key) {
///     while case let chunk = try reader.read(maxBytes: 64 << 10), !chunk.isEmpty { send(chunk) }
/// }
/// ```
///
/// The body's checksum, exact length and file size are verified by the read that produces the
/// last byte: when they fail, that read throws `.corrupt` instead of returning the last bytes
/// (or the empty array that means "end"), and the entry has been purged. Bytes returned before
/// that were not yet verified, so a consumer that must not act on a damaged body keeps them
/// until the end; an HTTP relay instead fails the response mid-stream. After a failure every
/// read throws the same error. The reader closes its file when released (or at ``close()``).
///
/// Safe to hand between tasks; reads are serialised by a lock.
public final class BodyReader: @unchecked Sendable {
    // @unchecked: `reader` is only touched under `lock` (an NSLock, a pthread mutex that the
    // thread sanitizer understands, unlike Synchronization.Mutex on Linux).
    private let lock = NSLock()
    private var reader: OpaquePointer?
    private let store: CacheStore // keeps the cache open while the reader lives
    /// The logical (uncompressed) body length, in bytes; for a reader of the stored stream
    /// (``CacheStore/openEncodedBody(for:variant:)``), the stream's length.
    public let size: Int
    /// The logical body's length and CRC-32, from the record: what a gzip trailer carries.
    package let logicalSize: Int
    package let logicalCRC32: UInt32

    init(store: CacheStore, reader: OpaquePointer) {
        self.store = store
        self.size = Int(suc_body_reader_size(reader))
        self.logicalSize = Int(suc_body_reader_logical_size(reader))
        self.logicalCRC32 = suc_body_reader_crc32(reader)
        self.reader = reader
    }

    deinit { close() }

    /// Reads up to `maxBytes` bytes of the body; an empty array means the body ended, verified.
    /// - Parameter maxBytes: the most bytes to return (at least 1).
    /// - Throws: `.corrupt` when the body failed a check (the entry is then purged); `.io`,
    ///   `.outOfMemory` for environment failures; `.invalidInput` after ``close()``.
    /// The corresponding C function is `suc_body_reader_read`.
    public func read(maxBytes: Int = 64 << 10) throws(CacheError) -> [UInt8] {
        precondition(maxBytes > 0, "BodyReader.read: maxBytes must be positive")
        lock.lock()
        defer { lock.unlock() }
        let result: Result<[UInt8], CacheError> = {
            guard let reader else { return .failure(CacheError(.invalidInput, "the body reader is closed")) }
            var rc: Int32 = SUC_OK
            var detail = suc_error()
            let bytes = [UInt8](unsafeUninitializedCapacity: maxBytes) { buffer, count in
                var produced = 0
                rc = suc_body_reader_read(reader, buffer.baseAddress, buffer.count, &produced, &detail)
                count = rc == SUC_OK ? produced : 0
            }
            return rc == SUC_OK ? .success(bytes) : .failure(CacheError(core: rc, detail))
        }()
        return try result.get()
    }

    /// Moves `count` bytes forward without returning them, for a byte range that starts deep in
    /// a large body: a body stored uncompressed is not read in between; a compressed one is
    /// inflated through them (and still verified at its end). After skipping part of a body
    /// stored uncompressed, its checksum is not verified (only its file's size), as for any read
    /// that stops before the end.
    /// - Throws: `.invalidInput` past the end, for a reader of the stored stream, or after
    ///   ``close()``; otherwise what ``read(maxBytes:)`` throws.
    /// The corresponding C function is `suc_body_reader_skip`.
    package func skip(_ count: Int) throws(CacheError) {
        precondition(count >= 0, "BodyReader.skip: count must not be negative")
        lock.lock()
        defer { lock.unlock() }
        guard let reader else { throw CacheError(.invalidInput, "the body reader is closed") }
        var detail = suc_error()
        let rc = suc_body_reader_skip(reader, UInt64(count), &detail)
        guard rc == SUC_OK else { throw CacheError(core: rc, detail) }
    }

    /// Closes the body file now (reads then throw). Releasing the reader does the same.
    /// The corresponding C function is `suc_body_reader_close`.
    public func close() {
        lock.lock()
        defer { lock.unlock() }
        suc_body_reader_close(reader)
        reader = nil
    }
}

extension CacheStore {
    /// Looks up an entry without reading its body, and opens the body for streaming; `nil` is a
    /// miss (including a body file that is gone or fails its opening checks, which is purged).
    ///
    /// The record and the reader are of the same version: a remove or replace by another
    /// process after this call does not disturb the reader (an unlinked body file stays
    /// readable through the descriptor it holds).
    /// - Parameters:
    ///   - key: the primary key bytes.
    ///   - variant: the secondary key bytes.
    ///   - countAsUse: whether the lookup counts as a use for eviction.
    /// - Returns: the record (its `body` is `nil`) and a reader of its body.
    /// - Throws: environment failures only (`.io`, `.outOfMemory`, `.index`…), never for a miss.
    /// The corresponding C functions are `suc_get` (with `SUC_GET_NO_BODY`) and `suc_body_reader_open`.
    public func openBody(for key: [UInt8], variant: [UInt8] = [], countAsUse: Bool = true) throws(CacheError) -> (
        record: StoredRecord, body: BodyReader
    )? {
        try withEntry(for: key, variant: variant, includeBody: false, countAsUse: countAsUse) { entry in
            withHandle { handle in
                var detail = suc_error()
                var reader: OpaquePointer?
                let rc = suc_body_reader_open(handle, entry, &reader, &detail)
                if rc == SUC_ENOTFOUND { return .success(nil) }
                guard rc == SUC_OK, let reader else { return .failure(CacheError(core: rc, detail)) }
                let record = StoredRecord(suc_entry_get_view(entry).pointee, includesBody: false)
                return .success((record, BodyReader(store: self, reader: reader)))
            }
        }
    }

    /// Like ``openBody(for:variant:countAsUse:)``, but the reader hands out the stored zlib
    /// stream as it is (HTTP's `deflate` coding; `gzip` with a header and trailer around its
    /// deflate data), not the body: compressed passthrough, no inflate. The stream's checksum is
    /// then checked by whoever inflates it. `nil` for a miss or a body stored uncompressed.
    /// The corresponding C function is `suc_body_reader_open_encoded`. Never counts as a use.
    package func openEncodedBody(for key: [UInt8], variant: [UInt8] = []) throws(CacheError) -> (
        record: StoredRecord, body: BodyReader
    )? {
        try withEntry(for: key, variant: variant, includeBody: false, countAsUse: false) { entry in
            withHandle { handle in
                if suc_entry_get_view(entry).pointee.flags & UInt32(SUC_ENTRY_RAW) != 0 { return .success(nil) }
                var detail = suc_error()
                var reader: OpaquePointer?
                let rc = suc_body_reader_open_encoded(handle, entry, &reader, &detail)
                if rc == SUC_ENOTFOUND { return .success(nil) }
                guard rc == SUC_OK, let reader else { return .failure(CacheError(core: rc, detail)) }
                let record = StoredRecord(suc_entry_get_view(entry).pointee, includesBody: false)
                return .success((record, BodyReader(store: self, reader: reader)))
            }
        }
    }
}
