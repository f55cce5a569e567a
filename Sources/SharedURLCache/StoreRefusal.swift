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
    /// Storing would take the directory past ``SharedCache/diskCapacity``; the entry was kept
    /// in memory only.
    case diskCapacityReached(usage: Int, entryBytes: Int, capacity: Int)
    /// userInfo holds something other than property-list types under string keys.
    case userInfoNotPropertyList
    /// The store failed (disk full, permissions…); the entry was kept in memory only.
    case storeFailed(CacheError)

    public var description: String {
        switch self {
        case .uncacheableRequest(let why): "uncacheable request: \(why)"
        case .varyWildcard: "response has Vary: *"
        case .invalidVary: "response Vary lists an invalid field name"
        case .entryTooLarge(let bytes, let limit): "entry of \(bytes) bytes exceeds maximumEntrySizeBytes \(limit)"
        case .diskCapacityReached(let usage, let entryBytes, let capacity):
            "disk capacity reached: \(usage) + \(entryBytes) bytes > \(capacity)"
        case .userInfoNotPropertyList: "userInfo is not a property list with string keys"
        case .storeFailed(let error): "store failed: \(error.detailedDescription())"
        }
    }
}
