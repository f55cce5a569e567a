import Foundation

/// What to store besides the body: the keys, the opaque response head and caller data.
///
/// The store knows nothing about HTTP: `key` is an injective encoding of what identifies the
/// resource (the layers above put partition, method and URL in it), `variant` tells variants
/// of one key apart (e.g. the request values named by Vary).
public struct RecordDescriptor: Sendable, Hashable {
    /// The primary key: an injective encoding of what identifies the resource.
    public var key: [UInt8]
    /// Tells variants of one key apart (the request values `Vary` selects); empty for none.
    public var variant: [UInt8]
    /// The partition the entry is counted and purged under (a tenant or service); may be empty.
    public var partition: [UInt8]
    /// The response head, opaque to the store (the layers above encode it).
    public var head: [UInt8]
    /// Caller data stored with the entry, opaque to the store.
    public var userInfo: [UInt8]
    /// The store time, kept to the millisecond; `removeAll(storedSince:)` compares against it.
    public var storedAt: Date
    /// Opaque to the store; returned on lookup.
    public var appFlags: UInt32
    /// Store the body as it is (already content-encoded, or known incompressible).
    public var storeUncompressed: Bool
    /// What the store does to the key's other variants, in the same commit.
    public var otherVariants: OtherVariants
    /// Names the entry can be purged by (``CacheStore/purge(tag:partition:soft:)``), e.g. a
    /// response's `Surrogate-Key` values. Each is 1 to 1,024 bytes of UTF-8 without a newline or
    /// NUL, 16 KiB together; others fail the store with `.invalidInput` or `.tooLarge`.
    public var tags: [String]

    /// A descriptor; everything but the key has an empty or neutral default.
    public init(
        key: [UInt8], variant: [UInt8] = [], partition: [UInt8] = [], head: [UInt8] = [],
        userInfo: [UInt8] = [], storedAt: Date = Date(), appFlags: UInt32 = 0, storeUncompressed: Bool = false,
        otherVariants: OtherVariants = .leave, tags: [String] = []
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
        self.tags = tags
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
    /// The primary key the entry was stored under.
    public var key: [UInt8]
    /// The variant the entry was stored under; empty for none.
    public var variant: [UInt8]
    /// The partition the entry was stored under.
    public var partition: [UInt8]
    /// The response head, as stored.
    public var head: [UInt8]
    /// The caller data, as stored.
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
    /// When it was stored.
    public var storedAt: Date
    /// When a lookup last used it (updated at most once per `touchInterval`): eviction goes by this.
    public var lastUsed: Date
    /// The caller's flags, as stored.
    public var appFlags: UInt32
    /// The body lives inside the index record, not in a file.
    public var isInline: Bool
    /// The body is stored zlib-compressed (not raw).
    public var isCompressed: Bool
    /// The tags it was stored with.
    public var tags: [String]
    /// When a soft purge marked it stale (``CacheStore/invalidate(key:variant:)``,
    /// ``CacheStore/purge(tag:partition:soft:)``), to the second; `nil` when never.
    public var invalidatedAt: Date?
}

/// Usage counters of a cache directory, exact as of the last commit.
public struct StoreStatistics: Sendable, Hashable {
    /// Entries in the directory (a key's variants count one each).
    public var entries: Int
    /// Sum of logical body sizes.
    public var bodyBytes: Int
    /// Bytes the bodies take on disk (files and inline bodies).
    public var storedBytes: Int
    /// Bytes of index records.
    public var recordBytes: Int
    /// The size of the index map (what the index file may grow to before it is remapped larger).
    public var indexMapBytes: Int
    /// Bytes of the index map in use (pages holding data).
    public var indexUsedBytes: Int
    /// Reader slots in use across every process (stale ones are cleared at open).
    public var readerSlotsUsed: Int
    /// Reader slots the index has (`CacheStoreConfiguration.maximumReaders`).
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
    /// See ``hits``.
    public var misses: Int
    /// The directory's format (``StoreFormats/directory`` for a directory this release created;
    /// an older one it opens keeps its own, docs/Formats.md).
    public var directoryFormat: Int

    /// Counters as read from the index.
    public init(
        entries: Int, bodyBytes: Int, storedBytes: Int, recordBytes: Int, indexMapBytes: Int, indexUsedBytes: Int,
        readerSlotsUsed: Int, readerSlotsMax: Int, evictions: Int, corruptPurges: Int,
        stores: Int = 0, hits: Int = 0, misses: Int = 0, directoryFormat: Int = StoreFormats.directory
    ) {
        self.directoryFormat = directoryFormat
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
