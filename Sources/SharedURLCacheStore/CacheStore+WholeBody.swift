import CSharedURLCache
import Foundation

extension CacheStore {
    /// A body at least this long is handed over in the core's own buffer instead of copied
    /// (``recordWithBody(for:variant:)``), if it is also ``bodyHandoverRatio`` times what the rest
    /// of its entry holds. The buffer comes with that rest (the copy of the index record: key,
    /// head, userInfo, tags, and an inline body's stored bytes), which stays allocated until the
    /// `Data` is released, unseen by the memory tier's accounting; below this size a copy costs
    /// next to nothing.
    package static let bodyHandoverMinimumBytes = 16 << 10
    /// See ``bodyHandoverMinimumBytes``: what a handed-over body keeps allocated beside it is at
    /// most an eighth of its size.
    package static let bodyHandoverRatio = 8

    /// Looks up an entry with its body as `Data`: the record (``StoredRecord/body`` is `nil`)
    /// and the body, which a large body shares with the store's read instead of being copied
    /// out of it. Otherwise the same lookup as ``record(for:variant:includeBody:)``: a miss
    /// (including a body that failed its checks, then purged) is `nil`, and it counts as a use.
    /// - Throws: environment failures only (`.io`, `.outOfMemory`, `.index`…), never for a miss.
    /// The corresponding C function is `suc_get`.
    package func recordWithBody(for key: [UInt8], variant: [UInt8] = []) throws(CacheError) -> (
        record: StoredRecord, body: Data
    )? {
        let result: Result<(StoredRecord, Data)?, CacheError> = withHandle { handle in
            key.withUnsafeBytes { k in
                variant.withUnsafeBytes { v in
                    var detail = suc_error()
                    var found: OpaquePointer?
                    let rc = suc_get(handle, k.baseAddress, k.count, v.baseAddress, v.count, 0, &found, &detail)
                    if rc == SUC_ENOTFOUND { return .success(nil) }
                    guard rc == SUC_OK, let entry = found else { return .failure(CacheError(core: rc, detail)) }
                    let view = suc_entry_get_view(entry).pointee
                    let record = StoredRecord(view, includesBody: false)
                    let inline = view.flags & UInt32(SUC_ENTRY_INLINE) != 0
                    let rest =
                        view.key_len + view.variant_len + view.partition_len + view.head_len + view.user_info_len
                        + view.tags_len + (inline ? Int(view.stored_size) : 0)
                    guard let body = view.body,
                        view.body_len >= max(Self.bodyHandoverMinimumBytes, Self.bodyHandoverRatio * rest)
                    else {
                        defer { suc_entry_free(entry) }
                        return .success((record, view.body.map { Data(bytes: $0, count: view.body_len) } ?? Data()))
                    }
                    // The entry owns the body's buffer until suc_entry_free (plain free calls,
                    // safe on any thread): the Data frees the entry when it is released.
                    let owner = EntryOwner(entry)
                    return .success(
                        (
                            record,
                            Data(
                                bytesNoCopy: UnsafeMutableRawPointer(mutating: body), count: view.body_len,
                                deallocator: .custom { _, _ in owner.free() })
                        ))
                }
            }
        }
        return try result.get()
    }
}

/// A `suc_entry` whose body a `Data` shares: freed once, by that `Data`'s deallocator.
private struct EntryOwner: @unchecked Sendable {
    // @unchecked: the pointer is used once, by the deallocator, after every reader of the body
    // is gone; suc_entry_free only calls free.
    let entry: OpaquePointer

    init(_ entry: OpaquePointer) { self.entry = entry }

    func free() { suc_entry_free(entry) }
}
