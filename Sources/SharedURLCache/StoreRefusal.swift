import SharedURLCacheStore

/// Why a response was not stored. Every refusal is counted
/// (``SharedCacheStatistics/refusals``) and logged with this reason.
public enum StoreRefusal: Error, Sendable, CustomStringConvertible {
    /// No cache key: a method other than GET/HEAD, a non-http(s) or malformed URL, or an
    /// oversized partition.
    case uncacheableRequest(String)
    /// `Vary: *` never matches a later request (RFC 9111 §4.1).
    case varyWildcard
    /// `Vary` lists something that is not a field name.
    case invalidVary
    /// The entry exceeds ``SharedCacheConfiguration/maximumEntrySizeBytes``.
    case entryTooLarge(bytes: Int, limit: Int)
    /// The entry alone is larger than ``SharedCache/diskCapacity`` (smaller ones evict older
    /// entries to fit). Nothing of it is kept, and the key's previous response is gone.
    case largerThanDiskCapacity(capacity: Int)
    /// userInfo holds something other than property-list types under string keys.
    case userInfoNotPropertyList
    /// The store failed (disk full, permissions…). Nothing of it is kept, and the key's
    /// previous response was removed (best effort).
    case storeFailed(CacheError)

    public var description: String {
        switch self {
        case .uncacheableRequest(let why): "uncacheable request: \(why)"
        case .varyWildcard: "response has Vary: *"
        case .invalidVary: "response Vary lists an invalid field name"
        case .entryTooLarge(let bytes, let limit): "entry of \(bytes) bytes exceeds maximumEntrySizeBytes \(limit)"
        case .largerThanDiskCapacity(let capacity): "entry larger than the disk capacity of \(capacity) bytes"
        case .userInfoNotPropertyList: "userInfo is not a property list with string keys"
        case .storeFailed(let error): "store failed: \(error.detailedDescription())"
        }
    }
}
