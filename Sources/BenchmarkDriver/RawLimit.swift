import CSharedURLCacheRawLimit

/// Why a raw-limit call failed: the C function and its return code.
struct RawLimitError: Error, CustomStringConvertible {
    var code: Int32
    var operation: String
    var description: String { "\(operation): \(code)" }
}

/// A thin owner of one `rl_env`: the raw limit (CSupport/rawlimit), the design's hot path in
/// minimal C that the benchmarks measure us against. One per thread (LMDB allows one environment
/// per file per process). Benchmark-only code: the one place above the store layer that passes
/// pointers to C, because the raw limit is deliberately not behind the store's API. The
/// Benchmarks package compiles this same file (a symlink), so both measure the same wrapper.
final class RawLimit: @unchecked Sendable {
    // @unchecked: the environment and the buffer are used from one thread at a time.
    let env: OpaquePointer
    /// The hit path inflates into this reused buffer (the limit allocates nothing per hit).
    private let out: UnsafeMutablePointer<UInt8>
    private let outCapacity = 1 << 20

    /// Opens (or creates) the raw limit's directory.
    /// - Parameters:
    ///   - mapSize: the fixed map size in bytes (the raw limit never grows it), 0 for its default.
    init(directory: String, flags: UInt32 = 0, inlineMax: UInt32 = UInt32(RL_INLINE_DEFAULT), mapSize: UInt64 = 0)
        throws
    {
        var env: OpaquePointer?
        let rc = rl_open(directory, flags, inlineMax, mapSize, 1, &env)
        guard rc == 0, let env else { throw RawLimitError(code: rc, operation: "rl_open") }
        self.env = env
        out = .allocate(capacity: outCapacity)
    }

    deinit {
        rl_close(env)
        out.deallocate()
    }

    @inline(__always)
    private func read(_ key: UnsafeRawBufferPointer) -> (rc: Int32, length: Int) {
        var length = 0
        let rc = rl_get(env, key.baseAddress, key.count, out, outCapacity, &length)
        return (rc, length)
    }

    /// Hit path; returns the body length, or -1 for a miss (or a failure).
    @inline(__always)
    func lookup(_ key: [UInt8]) -> Int {
        let (rc, length) = key.withUnsafeBytes { read($0) }
        return rc == 0 ? length : -1
    }

    /// The body length for a key given as text, nil for a miss; a failure throws.
    func lookup(utf8 key: String) throws -> Int? {
        var key = key
        let (rc, length) = key.withUTF8 { read(UnsafeRawBufferPointer($0)) }
        if rc == RL_NOTFOUND { return nil }
        guard rc == 0 else { throw RawLimitError(code: rc, operation: "rl_get") }
        return length
    }

    /// The body stored under `key`, or nil.
    func get(_ key: [UInt8]) -> [UInt8]? {
        let n = lookup(key)
        return n < 0 ? nil : Array(UnsafeBufferPointer(start: out, count: n))
    }

    @inline(__always)
    func contains(_ key: [UInt8]) -> Bool {
        key.withUnsafeBytes { rl_contains(env, $0.baseAddress, $0.count) } == 0
    }

    func put(_ key: [UInt8], _ body: [UInt8]) throws {
        let rc = key.withUnsafeBytes { k in
            body.withUnsafeBytes { b in rl_put(env, k.baseAddress, k.count, b.baseAddress, b.count) }
        }
        guard rc == 0 else { throw RawLimitError(code: rc, operation: "rl_put") }
    }

    func put(utf8 key: String, _ body: [UInt8]) throws { try put(Array(key.utf8), body) }

    func remove(_ key: [UInt8]) throws {
        let rc = key.withUnsafeBytes { rl_remove(env, $0.baseAddress, $0.count) }
        guard rc == 0 else { throw RawLimitError(code: rc, operation: "rl_remove") }
    }

    var count: Int {
        var n: UInt64 = 0
        _ = rl_count(env, &n)
        return Int(n)
    }
}
