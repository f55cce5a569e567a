import CSharedURLCache

extension CacheStore {
    /// One key, or one variant of it, for ``remove(_:)`` and ``invalidate(_:)``.
    public struct KeyReference: Sendable, Hashable {
        /// The entry's key.
        public var key: [UInt8]
        /// One variant of `key`; `nil` names every variant, as in ``remove(key:variant:)``.
        public var variant: [UInt8]?

        /// A reference to `variant` of `key`, or to every variant of it when `variant` is `nil`.
        public init(key: [UInt8], variant: [UInt8]? = nil) {
            self.key = key
            self.variant = variant
        }
    }

    /// Removes every key (or variant) of `references`, many in one commit (up to a thousand, and
    /// one `fdatasync` for them all, where ``remove(key:variant:)`` costs a commit each). The
    /// commits are sized to hold the write lock about 8 ms, with a pause between two, so a store
    /// of another process waits for one of them at most; the handle keeps the size from one call
    /// to the next. Every key is checked before any is
    /// removed: an empty key throws `.invalidInput` and removes nothing.
    /// - Returns: how many entries were removed.
    /// The corresponding C function is `suc_remove_many`.
    @discardableResult
    public func remove(_ references: [KeyReference]) throws(CacheError) -> Int {
        try manyKeysOperation(suc_remove_many, references)
    }

    /// Marks every key (or variant) of `references` stale (a soft purge, as
    /// ``invalidate(key:variant:)``), in commits as ``remove(_:)``'s.
    /// - Returns: how many entries were marked now.
    /// The corresponding C function is `suc_invalidate_many`.
    @discardableResult
    public func invalidate(_ references: [KeyReference]) throws(CacheError) -> Int {
        try manyKeysOperation(suc_invalidate_many, references)
    }

    /// The signature `suc_remove_many` and `suc_invalidate_many` share.
    typealias ManyKeysOperation = (
        OpaquePointer?, UnsafePointer<suc_key_ref>?, Int, UnsafeMutablePointer<UInt64>?,
        UnsafeMutablePointer<suc_error>?
    ) -> Int32

    /// Runs `operation` on all of `references` at once: their bytes go into one buffer, so one
    /// borrow of it gives the core a pointer for every key and variant.
    func manyKeysOperation(_ operation: ManyKeysOperation, _ references: [KeyReference]) throws(CacheError) -> Int {
        // A byte more than the keys and variants take: the base address is never nil, so an
        // empty variant still gets a non-NULL pointer (exactly that variant, not every one).
        var bytes: [UInt8] = [0]
        var spans: [(key: Range<Int>, variant: Range<Int>?)] = []
        spans.reserveCapacity(references.count)
        for reference in references {
            let keyStart = bytes.count
            bytes += reference.key
            let keyRange = keyStart..<bytes.count
            var variantRange: Range<Int>?
            if let variant = reference.variant {
                let variantStart = bytes.count
                bytes += variant
                variantRange = variantStart..<bytes.count
            }
            spans.append((keyRange, variantRange))
        }
        let result: Result<Int, CacheError> = bytes.withUnsafeBytes { buffer in
            let base = buffer.baseAddress!
            let refs = spans.map { span in
                suc_key_ref(
                    key: base + span.key.lowerBound, key_len: span.key.count,
                    variant: span.variant.map { base + $0.lowerBound }, variant_len: span.variant?.count ?? 0)
            }
            var detail = suc_error()
            var count: UInt64 = 0
            let rc = withHandle { handle in
                refs.withUnsafeBufferPointer { operation(handle, $0.baseAddress, $0.count, &count, &detail) }
            }
            return rc == SUC_OK ? .success(Int(count)) : .failure(CacheError(core: rc, detail))
        }
        return try result.get()
    }
}
