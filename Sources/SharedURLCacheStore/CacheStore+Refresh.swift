import CSharedURLCache

extension CacheStore {
    /// Replaces the head of an entry while it is still `version`, keeping its body: what a 304
    /// revalidation stores. The new record names the same body file (or carries the same
    /// inline body), so a refresh writes one index record whatever the body's size.
    ///
    /// From `descriptor` it takes the key, variant, head, userInfo, tags, app flags and store
    /// time; the partition must be the entry's, and `otherVariants` is not applied (the
    /// variants stay as they are). The refreshed entry is no longer soft-purged.
    /// - Parameters:
    ///   - descriptor: the entry's key and variant, with the new head and its companions.
    ///   - version: the version the caller read (and validated).
    /// - Returns: the new record version, or `nil` when the entry is gone, was replaced since
    ///   `version`, or is in another partition: store the whole response instead.
    /// - Throws: `.invalidInput` and `.tooLarge` for what a store would refuse, or an
    ///   environment error (`.diskFull`, `.indexFull`, `.io`).
    /// The corresponding C function is `suc_refresh`.
    public func refresh(_ descriptor: RecordDescriptor, expecting version: UInt64) throws(CacheError) -> UInt64? {
        let result: Result<UInt64?, CacheError> = withHandle { handle in
            descriptor.withParams(capacityBytes: nil) { params in
                params.flags = 0
                var detail = suc_error()
                var refreshed: UInt64 = 0
                let rc = suc_refresh(handle, &params, version, &refreshed, &detail)
                if rc == SUC_OK { return .success(refreshed) }
                return rc == SUC_ENOTFOUND ? .success(nil) : .failure(CacheError(core: rc, detail))
            }
        }
        return try result.get()
    }
}
