import CSharedURLCache

/// A body being stored piece by piece: bytes are compressed and streamed to a temp file as they
/// arrive, so a large body never sits in memory whole. Dropping an uncommitted writer discards
/// the body (nothing partial is ever visible).
///
/// ```swift
/// var writer = try store.makeBodyWriter()
/// for try await chunk in response.body { try writer.append(chunk) }
/// let version = try writer.commit(RecordDescriptor(key: key, head: head))
/// ```
public struct BodyWriter: ~Copyable {
    private let store: CacheStore
    private var writer: OpaquePointer?

    init(store: CacheStore, writer: OpaquePointer) {
        self.store = store
        self.writer = writer
    }

    deinit { suc_writer_abort(writer) }

    /// Appends body bytes.
    /// - Throws: `.tooLarge` past the configured maximum (the temp file is removed at once),
    ///   `.diskFull`, `.io`.
    /// The corresponding C function is `suc_writer_append`.
    public mutating func append(_ bytes: some Collection<UInt8>) throws(CacheError) {
        guard let writer else { throw CacheError(.invalidInput, "the writer was already committed") }
        var detail = suc_error()
        let rc: Int32 =
            bytes.withContiguousStorageIfAvailable { buffer in
                suc_writer_append(writer, buffer.baseAddress, buffer.count, &detail)
            }
            ?? Array(bytes).withUnsafeBytes { buffer in
                suc_writer_append(writer, buffer.baseAddress, buffer.count, &detail)
            }
        guard rc == SUC_OK else { throw CacheError(core: rc, detail) }
    }

    /// Publishes the body and its record (body file first, index commit last).
    /// - Parameter capacityBytes: this store's cap, as in
    ///   ``CacheStore/store(_:body:capacityBytes:)``.
    /// - Returns: the new record version.
    /// The corresponding C function is `suc_writer_commit`.
    public consuming func commit(_ descriptor: RecordDescriptor, capacityBytes: Int? = nil) throws(CacheError) -> UInt64
    {
        guard let writer else { throw CacheError(.invalidInput, "the writer was already committed") }
        self.writer = nil // the C call consumes the writer whatever the result
        let result: Result<UInt64, CacheError> = descriptor.withParams(capacityBytes: capacityBytes) { params in
            var detail = suc_error()
            var version: UInt64 = 0
            let rc = suc_writer_commit(writer, &params, &version, &detail)
            return rc == SUC_OK ? .success(version) : .failure(CacheError(core: rc, detail))
        }
        _ = store
        return try result.get()
    }
}
