import Foundation

/// What to store besides the body: the keys, the opaque response head and caller data.
///
/// The store knows nothing about HTTP: `key` is an injective encoding of what identifies the
/// resource (the layers above put partition, method and URL in it), `variant` tells variants
/// of one key apart (e.g. the request values named by Vary).
public struct RecordDescriptor: Sendable, Hashable {
    public var key: [UInt8]
    public var variant: [UInt8]
    public var partition: [UInt8]
    public var head: [UInt8]
    public var userInfo: [UInt8]
    public var storedAt: Date
    /// Opaque to the store; returned on lookup.
    public var appFlags: UInt32
    /// Store the body as it is (already content-encoded, or known incompressible).
    public var storeUncompressed: Bool
    /// What the store does to the key's other variants, in the same commit.
    public var otherVariants: OtherVariants

    public init(
        key: [UInt8], variant: [UInt8] = [], partition: [UInt8] = [], head: [UInt8] = [],
        userInfo: [UInt8] = [], storedAt: Date = Date(), appFlags: UInt32 = 0, storeUncompressed: Bool = false,
        otherVariants: OtherVariants = .leave
    ) {
        self.key = key
        self.variant = variant
        self.partition = partition
        self.head = head
        self.userInfo = userInfo
        self.storedAt = storedAt
        self.appFlags = appFlags
        self.storeUncompressed = storeUncompressed
        self.otherVariants = otherVariants
    }
}

/// What one store does to the other variants of its key, in its own commit: so a response and
/// the record that selects among the key's variants never disagree, in any process, and one
/// store is one commit (docs/Formats.md, "Variants").
public enum OtherVariants: Sendable, Hashable {
    /// Leaves them: the store touches only its own key and variant.
    case leave
    /// The entry is the key's only one: every other variant is removed.
    case remove
    /// Puts a body-less selector record (`head`, `appFlags`) at the empty variant, unless an
    /// identical one is there; replacing another record there removes every variant but the
    /// stored one (they were chosen by a rule that no longer holds). The stored entry's variant
    /// must not be empty.
    case selectedBy(head: [UInt8], appFlags: UInt32)
}

/// An entry read from the store: a value, independent of any transaction.
public struct StoredRecord: Sendable, Hashable {
    public var key: [UInt8]
    public var variant: [UInt8]
    public var partition: [UInt8]
    public var head: [UInt8]
    public var userInfo: [UInt8]
    /// The body, or `nil` when the lookup asked for the record only.
    public var body: [UInt8]?
    /// Logical (uncompressed) body length.
    public var bodySize: Int
    /// The body as stored: its compressed (or raw) bytes. The same from a lookup and a scan.
    public var storedSize: Int
    /// What the body adds to the directory: its file (header, stored bytes, a copy of the
    /// record), or its stored bytes inside the record when inline. ``StoreStatistics/storedBytes``
    /// is the sum of these.
    public var footprintSize: Int
    /// Changes whenever the entry is replaced; memory tiers validate against it.
    public var version: UInt64
    public var storedAt: Date
    public var lastUsed: Date
    public var appFlags: UInt32
    public var isInline: Bool
    public var isCompressed: Bool
}

/// Usage counters of a cache directory, exact as of the last commit.
public struct StoreStatistics: Sendable, Hashable {
    public var entries: Int
    /// Sum of logical body sizes.
    public var bodyBytes: Int
    /// Bytes the bodies take on disk (files and inline bodies).
    public var storedBytes: Int
    /// Bytes of index records.
    public var recordBytes: Int
    public var indexMapBytes: Int
    public var indexUsedBytes: Int
    public var readerSlotsUsed: Int
    public var readerSlotsMax: Int
    /// Entries removed by compaction or the hard cap, ever (shared by every process).
    public var evictions: Int
    /// Entries purged because their data failed a check, ever.
    public var corruptPurges: Int
    /// Entries stored, ever, by every process.
    public var stores: Int
    /// Lookups answered / not answered, ever, as reported by every process's
    /// ``CacheStore/countUsage(hits:misses:)`` (written with each process's next write).
    public var hits: Int
    public var misses: Int

    public init(entries: Int, bodyBytes: Int, storedBytes: Int, recordBytes: Int, indexMapBytes: Int, indexUsedBytes: Int,
                readerSlotsUsed: Int, readerSlotsMax: Int, evictions: Int, corruptPurges: Int,
                stores: Int = 0, hits: Int = 0, misses: Int = 0) {
        self.stores = stores
        self.hits = hits
        self.misses = misses
        self.entries = entries
        self.bodyBytes = bodyBytes
        self.storedBytes = storedBytes
        self.recordBytes = recordBytes
        self.indexMapBytes = indexMapBytes
        self.indexUsedBytes = indexUsedBytes
        self.readerSlotsUsed = readerSlotsUsed
        self.readerSlotsMax = readerSlotsMax
        self.evictions = evictions
        self.corruptPurges = corruptPurges
    }
}
