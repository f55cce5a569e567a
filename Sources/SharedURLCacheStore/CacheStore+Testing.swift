import CSharedURLCache
import Foundation

// Hooks for the project's own tests (fault injection, raw records, body paths), behind
// @_spi(Testing): `@_spi(Testing) import SharedURLCacheStore` reaches them, an ordinary import
// does not. Their C side is CSupport/core/include/shared_url_cache_testing.h.

extension CacheStore {
    /// Testing hook: holds the index write lock for `milliseconds` in a transaction that commits
    /// nothing (the other side of "a hit takes no write lock").
    /// The corresponding C function is `suc_debug_hold_write_lock`.
    @_spi(Testing) public func withDebugWriteLock(milliseconds: UInt32) throws(CacheError) {
        let rc = withHandle { suc_debug_hold_write_lock($0, milliseconds) }
        guard rc == SUC_OK else { throw CacheError(core: rc, suc_error()) }
    }
}

extension CacheStore {
    /// Testing hook: begins `count` read transactions at once, then ends them all, leaving the
    /// pool a process keeps after that many concurrent lookups.
    /// The corresponding C function is `suc_debug_fill_read_pool`.
    @_spi(Testing) public func debugFillReadPool(_ count: UInt32) throws(CacheError) {
        let rc = withHandle { suc_debug_fill_read_pool($0, count) }
        guard rc == SUC_OK else { throw CacheError(core: rc, suc_error()) }
    }
}

extension CacheStore {
    /// Testing hook: the body file of an entry, relative to the root (nil for inline bodies).
    /// The corresponding C function is `suc_debug_body_path`.
    @_spi(Testing) public func debugBodyPath(for key: [UInt8], variant: [UInt8] = []) -> String? {
        var buffer = [CChar](repeating: 0, count: 64)
        let rc = withHandle { handle in
            key.withUnsafeBytes { k in
                variant.withUnsafeBytes { v in
                    suc_debug_body_path(handle, k.baseAddress, k.count, v.baseAddress, v.count, &buffer, buffer.count)
                }
            }
        }
        guard rc == SUC_OK else { return nil }
        return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Testing hook: replaces the raw index record of an entry (corruption tests).
    /// The corresponding C function is `suc_debug_put_raw_record`.
    @_spi(Testing) public func debugOverwriteRecord(for key: [UInt8], variant: [UInt8] = [], with raw: [UInt8])
        throws(CacheError)
    {
        try debugPutRaw(key: key, variant: variant, bytes: raw, with: suc_debug_put_raw_record)
    }

    /// Calls a C hook that writes raw bytes for (key, variant).
    private func debugPutRaw(
        key: [UInt8], variant: [UInt8], bytes: [UInt8],
        with hook: (OpaquePointer?, UnsafeRawPointer?, Int, UnsafeRawPointer?, Int, UnsafeRawPointer?, Int) -> Int32
    ) throws(CacheError) {
        let rc = withHandle { handle in
            key.withUnsafeBytes { k in
                variant.withUnsafeBytes { v in
                    bytes.withUnsafeBytes { b in
                        hook(handle, k.baseAddress, k.count, v.baseAddress, v.count, b.baseAddress, b.count)
                    }
                }
            }
        }
        guard rc == SUC_OK else { throw CacheError(core: rc, suc_error()) }
    }

    /// Testing hook: puts raw bytes under a raw key of the index's meta table (tests of damaged
    /// postings, counters and eviction queues).
    /// The corresponding C function is `suc_debug_put_raw_meta`.
    @_spi(Testing) public func debugPutMeta(key: [UInt8], value: [UInt8]) throws(CacheError) {
        let rc = withHandle { handle in
            key.withUnsafeBytes { k in
                value.withUnsafeBytes { v in
                    suc_debug_put_raw_meta(handle, k.baseAddress, k.count, v.baseAddress, v.count)
                }
            }
        }
        guard rc == SUC_OK else { throw CacheError(core: rc, suc_error()) }
    }

    /// Testing hook: sets the value of an entry's use-order key to raw bytes (the eviction
    /// policy's; S3-FIFO keeps the entry's place in its queues there), for tests of damaged values.
    /// The corresponding C function is `suc_debug_put_raw_use_value`.
    @_spi(Testing) public func debugPutUseOrderValue(for key: [UInt8], variant: [UInt8] = [], value: [UInt8])
        throws(CacheError)
    {
        try debugPutRaw(key: key, variant: variant, bytes: value, with: suc_debug_put_raw_use_value)
    }

    /// Testing hook: how many keys the use order holds (the entries' own, and those left behind
    /// by moves until they are swept) and how many records the index holds, in one snapshot.
    /// The corresponding C function is `suc_debug_use_order_keys`.
    @_spi(Testing) public func debugUseOrderKeys() throws(CacheError) -> (keys: Int, records: Int) {
        var keys: UInt64 = 0
        var records: UInt64 = 0
        let rc = withHandle { suc_debug_use_order_keys($0, &keys, &records) }
        guard rc == SUC_OK else { throw CacheError(core: rc, suc_error()) }
        return (Int(keys), Int(records))
    }

    /// Testing hook: the index key of (key, variant), to write keys as an earlier build did.
    /// The corresponding C function is `suc_debug_index_key`.
    @_spi(Testing) public static func debugIndexKey(for key: [UInt8], variant: [UInt8] = []) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 48)
        key.withUnsafeBytes { k in
            variant.withUnsafeBytes { v in
                out.withUnsafeMutableBufferPointer { o in
                    suc_debug_index_key(k.baseAddress, k.count, v.baseAddress, v.count, o.baseAddress!)
                }
            }
        }
        return out
    }

    /// Testing hook: the raw index record of an entry.
    /// The corresponding C function is `suc_debug_get_raw_record`.
    @_spi(Testing) public func debugRawRecord(for key: [UInt8], variant: [UInt8] = []) throws(CacheError) -> [UInt8]? {
        var out: UnsafeMutablePointer<UInt8>?
        var length = 0
        let rc = withHandle { handle in
            key.withUnsafeBytes { k in
                variant.withUnsafeBytes { v in
                    suc_debug_get_raw_record(handle, k.baseAddress, k.count, v.baseAddress, v.count, &out, &length)
                }
            }
        }
        if rc == SUC_ENOTFOUND { return nil }
        guard rc == SUC_OK, let out else { throw CacheError(core: rc, suc_error()) }
        defer { free(out) }
        return Array(UnsafeBufferPointer(start: out, count: length))
    }
}

/// Fault injection for tests (docs/Reliability.md T14): the operations the C core can be made to fail.
@_spi(Testing) public enum InjectedFault: Int32, CaseIterable, Sendable {
    case open = 0, write, fsync, rename, unlink, fstat, read, malloc, inflate, commit
    /// The index rewrite's steps: call 1 after the copy, 2 after publishing, 3 after switching.
    case rewrite
    /// Group commit across processes, as kill points only (`abortProcess`): a store queued for
    /// any process's commit; a committer holding other processes' stores in its transaction; the
    /// same after its commit, before it unlinks the bodies that commit dropped for them; a store
    /// that found, without the write lock, that another process's commit carried it.
    case handoffQueued, handoffClaimed, handoffCommitted, handoffSettled

    /// Makes call `nth` (1-based, from now, process-wide) of this operation fail with `errno`;
    /// `persistent` keeps every later call failing too. Not for concurrent use with live
    /// operations: set faults while the cache is idle.
    /// The corresponding C function is `suc_debug_fault`.
    @_spi(Testing) public func inject(
        nth: Int, errno: Int32 = EIO, persistent: Bool = false, abortProcess: Bool = false
    ) {
        suc_debug_fault(rawValue, UInt64(nth), errno, persistent ? 1 : 0, abortProcess ? 1 : 0)
    }

    /// Whether the injected fault has fired.
    public var tripped: Bool { suc_debug_fault_tripped(rawValue) != 0 }

    public static func clearAll() { suc_debug_fault_clear_all() }
}
