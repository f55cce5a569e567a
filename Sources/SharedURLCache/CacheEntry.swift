import CacheEntryFormat
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A response as the cache holds it, independent of Foundation's reference types so that it can
/// cross threads and live in the memory tier (`CachedURLResponse` is rebuilt on every hit).
struct CacheEntry: Sendable {
    var head: ResponseHead
    var body: Data
    /// Binary property list of the userInfo dictionary; empty when there is none.
    var userInfo: [UInt8]
    var storedAt: Date
    /// When a soft purge marked the stored entry stale (from its index record); `nil` when never.
    var invalidatedAt: Date? = nil
    /// Where this entry may live: `.allowed` (disk and memory) or `.allowedInMemoryOnly`.
    var inMemoryOnly: Bool

    /// Bytes charged to the memory tier: body, head and userInfo.
    var memoryCost: Int { body.count + head.memoryCost + userInfo.count }
}

/// The primary and secondary key of one entry in the memory tier, as in the store.
struct MemoryKey: Hashable, Sendable {
    var key: [UInt8]
    var variant: [UInt8]

    /// The bytes hashed as blocks: `[UInt8]`'s own hashing feeds the hasher one byte at a time,
    /// which was half the memory tier's cost of finding an item. The key's length goes first,
    /// so (key, variant) pairs that concatenate alike still hash apart; equality stays the
    /// synthesised one.
    func hash(into hasher: inout Hasher) {
        hasher.combine(key.count)
        key.withUnsafeBytes { hasher.combine(bytes: $0) }
        variant.withUnsafeBytes { hasher.combine(bytes: $0) }
    }
}
