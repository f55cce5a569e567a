import HTTPCacheSemantics
import HTTPTypes

/// The in-process tier: entries by (key, variant), bounded by a byte capacity, least recently
/// used first out. Not thread-safe by itself; ``SharedCache`` keeps it behind a lock (`Locked`).
///
/// An item carries the store version it was read or written as (`nil` for
/// `.allowedInMemoryOnly` entries); the cache checks that version against the index before
/// serving the item, so another process's replace or remove is never hidden by this tier.
///
/// For keys whose response has `Vary`, the tier also remembers the `Vary` names (a memo per
/// key), so that a lookup can compute the presented request's variant without reading the
/// store's vary spec.
struct MemoryTier {
    struct Item: Sendable {
        var entry: CacheEntry
        /// The store version this item mirrors; `nil` when it lives in memory only.
        var version: UInt64?
        /// Foundation's response built from `entry` on the first hit, served as is on later
        /// hits (building it again cost most of a memory hit). Immutable, so sharing is safe.
        var response: BuiltResponse?
        /// The stored exchange parsed for the caching flow on the first HTTP hit, reused by
        /// later ones (``ParsedExchange``). Immutable, like `response`.
        var exchange: ParsedExchange?
        /// What a layer above derived from this item on a hit and keeps with it (the proxy's
        /// prepared head, ``MemoryItemRendition``). Immutable, like `response`.
        var rendition: (any MemoryItemRendition)?
        /// Which insertion this item is (set by ``MemoryTier/insert(_:at:vary:)``), so a
        /// response built outside the lock is attached only to the item it was built from.
        var stamp: UInt64 = 0
    }

    private struct Node {
        var key: MemoryKey
        var item: Item
        var cost: Int
    }

    /// A slot's place in the recency list, kept apart from the nodes: reading a link out of a
    /// node copied the whole node (a retain and release of everything its item holds), on every
    /// hit.
    private struct Links {
        var newer = -1
        var older = -1
    }

    private struct VaryMemo {
        var vary: VaryFields
        var variants: Set<[UInt8]>
    }

    private var nodes: [Node?] = []
    /// The recency list's links, by slot (as `nodes`).
    private var links: [Links] = []
    private var freeSlots: [Int] = []
    private var index: [MemoryKey: Int] = [:]
    private var varyMemos: [[UInt8]: VaryMemo] = [:]
    private var newest = -1
    private var oldest = -1
    private var nextStamp: UInt64 = 1

    /// Bytes charged to the items held.
    private(set) var usage = 0
    /// The byte budget; items are evicted, oldest use first, to stay within it.
    private(set) var capacity: Int

    init(capacity: Int) { self.capacity = max(capacity, 0) }

    var count: Int { index.count }

    // MARK: Lookup

    /// The key of the item that would serve a request: the empty variant, or for a key known
    /// to vary, the variant computed from the request's fields.
    func memoryKey(for key: [UInt8], requestFields: HTTPFields) -> MemoryKey {
        guard let memo = varyMemos[key] else { return MemoryKey(key: key, variant: []) }
        return MemoryKey(key: key, variant: VaryKey(vary: memo.vary, requestFields: requestFields).encoded)
    }

    /// The item at `memoryKey`, marked as most recently used.
    mutating func item(at memoryKey: MemoryKey) -> Item? {
        withItem(at: memoryKey) { $0 }
    }

    /// What `body` takes from the item at `memoryKey` (marked as most recently used), or `nil`
    /// when there is none: the item is lent in place, so a lookup copies only what it keeps.
    mutating func withItem<R>(at memoryKey: MemoryKey, _ body: (borrowing Item) -> R) -> R? {
        guard let slot = index[memoryKey] else { return nil }
        moveToFront(slot)
        return body(nodes[slot]!.item)
    }

    // MARK: Changes

    /// Inserts or replaces an item. An item larger than the whole capacity is not kept (and
    /// the key's previous item is dropped, so a stale item never outlives a newer store).
    /// - Returns: how many other items were evicted to make room.
    @discardableResult
    mutating func insert(_ item: Item, at memoryKey: MemoryKey, vary: VaryFields?) -> Int {
        var item = item
        item.stamp = nextStamp
        nextStamp &+= 1
        remove(memoryKey)
        updateVaryMemo(for: memoryKey, vary: vary)
        let cost = item.entry.memoryCost
        guard cost <= capacity else {
            if varyMemos[memoryKey.key]?.variants.isEmpty == true { varyMemos[memoryKey.key] = nil }
            return 0
        }
        let node = Node(key: memoryKey, item: item, cost: cost)
        let slot: Int
        if let free = freeSlots.popLast() {
            nodes[free] = node
            slot = free
        } else {
            nodes.append(node)
            links.append(Links())
            slot = nodes.count - 1
        }
        index[memoryKey] = slot
        if let vary, !vary.isEmpty { varyMemos[memoryKey.key]?.variants.insert(memoryKey.variant) }
        linkAtFront(slot)
        usage += cost
        return evictToCapacity()
    }

    /// The stamp of the latest insertion (valid right after ``insert(_:at:vary:)``).
    var lastStamp: UInt64 { nextStamp &- 1 }

    /// Keeps what was built from the item at `memoryKey` (Foundation's response, the parsed
    /// exchange, a rendition) with it, if that item is still insertion `stamp` (it may have been replaced or
    /// removed while that was built outside the lock).
    mutating func attach(at memoryKey: MemoryKey, stamp: UInt64, _ keep: (inout Item) -> Void) {
        guard let slot = index[memoryKey], nodes[slot]!.item.stamp == stamp else { return }
        keep(&nodes[slot]!.item)
    }

    /// Removes the item at `memoryKey`, if any.
    mutating func remove(_ memoryKey: MemoryKey) {
        guard let slot = index.removeValue(forKey: memoryKey) else { return }
        unlink(slot)
        usage -= nodes[slot]!.cost
        nodes[slot] = nil
        freeSlots.append(slot)
        if !memoryKey.variant.isEmpty, var memo = varyMemos[memoryKey.key] {
            memo.variants.remove(memoryKey.variant)
            varyMemos[memoryKey.key] = memo.variants.isEmpty ? nil : memo
        }
    }

    /// Removes the item at `memoryKey` only if it still mirrors `version` (a concurrent store
    /// may have replaced it with a newer one meanwhile).
    mutating func remove(_ memoryKey: MemoryKey, ifVersion version: UInt64?) {
        guard let slot = index[memoryKey], nodes[slot]!.item.version == version else { return }
        remove(memoryKey)
    }

    /// Removes every variant of `key`.
    mutating func removeAll(key: [UInt8]) {
        if let memo = varyMemos.removeValue(forKey: key) {
            for variant in memo.variants { remove(MemoryKey(key: key, variant: variant)) }
        }
        remove(MemoryKey(key: key, variant: []))
    }

    /// Removes every item for which `predicate` holds.
    mutating func removeAll(where predicate: (Item) -> Bool) {
        let doomed = index.compactMap { key, slot in predicate(nodes[slot]!.item) ? key : nil }
        for key in doomed { remove(key) }
    }

    mutating func removeAll() {
        let stamp = nextStamp
        self = MemoryTier(capacity: capacity)
        nextStamp = stamp
    }

    /// Changes the budget, evicting at once if it shrank.
    /// - Returns: how many items were evicted.
    mutating func setCapacity(_ newCapacity: Int) -> Int {
        capacity = max(newCapacity, 0)
        return evictToCapacity()
    }

    /// The keys from most to least recently used (for tests and diagnostics).
    var keysByRecency: [MemoryKey] {
        var keys: [MemoryKey] = []
        var slot = newest
        while slot >= 0, keys.count <= index.count {
            keys.append(nodes[slot]!.key)
            slot = links[slot].older
        }
        return keys
    }

    /// Whether the structure is self-consistent: the recency list holds exactly the indexed
    /// items, usage is the sum of their costs and within capacity, every memo'd variant exists.
    var isConsistent: Bool {
        let keys = keysByRecency
        guard keys.count == index.count, Set(keys) == Set(index.keys) else { return false }
        let total = index.values.reduce(0) { $0 + nodes[$1]!.cost }
        guard total == usage, usage <= capacity else { return false }
        for (key, memo) in varyMemos {
            guard !memo.variants.isEmpty else { return false }
            for variant in memo.variants where index[MemoryKey(key: key, variant: variant)] == nil { return false }
        }
        return true
    }

    // MARK: Internals

    /// A response without Vary at the empty variant ends any memo (and the variants it
    /// selected); a response with Vary sets the memo, dropping variants of a different Vary.
    private mutating func updateVaryMemo(for memoryKey: MemoryKey, vary: VaryFields?) {
        guard let vary, !vary.isEmpty else {
            if memoryKey.variant.isEmpty, let memo = varyMemos.removeValue(forKey: memoryKey.key) {
                for variant in memo.variants { remove(MemoryKey(key: memoryKey.key, variant: variant)) }
            }
            return
        }
        remove(MemoryKey(key: memoryKey.key, variant: []))
        if let memo = varyMemos[memoryKey.key], memo.vary == vary { return }
        if let old = varyMemos.removeValue(forKey: memoryKey.key) {
            for variant in old.variants { remove(MemoryKey(key: memoryKey.key, variant: variant)) }
        }
        varyMemos[memoryKey.key] = VaryMemo(vary: vary, variants: [])
    }

    private mutating func evictToCapacity() -> Int {
        var evicted = 0
        while usage > capacity, oldest >= 0 {
            remove(nodes[oldest]!.key)
            evicted += 1
        }
        return evicted
    }

    private mutating func linkAtFront(_ slot: Int) {
        links[slot] = Links(newer: -1, older: newest)
        if newest >= 0 { links[newest].newer = slot }
        newest = slot
        if oldest < 0 { oldest = slot }
    }

    private mutating func unlink(_ slot: Int) {
        let (newer, older) = (links[slot].newer, links[slot].older)
        if newer >= 0 { links[newer].older = older } else { newest = older }
        if older >= 0 { links[older].newer = newer } else { oldest = newer }
    }

    private mutating func moveToFront(_ slot: Int) {
        guard newest != slot else { return }
        unlink(slot)
        linkAtFront(slot)
    }
}
