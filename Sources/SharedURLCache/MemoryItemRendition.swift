/// What a layer above the cache derives once from a memory-tier item and keeps with it, so that
/// the item's later hits reuse it: the proxy keeps the stored head serialised for the wire and the
/// body in the buffer it writes (docs/Proxy.md, "A hit from memory"). It is the same pattern as
/// the tier's own derived objects (Foundation's built response, the parsed exchange): immutable,
/// and dropped with its item. An item replaced by a newer store in this process, found replaced by
/// another process (the tier checks the index version on every hit) or evicted takes its
/// rendition with it, so a rendition never outlives or mismatches the entry it was made from.
///
/// The core never looks inside one, so the proxy's type (NIO's buffers) stays out of these layers.
package protocol MemoryItemRendition: AnyObject, Sendable {}

/// The memory-tier item that answered a lookup: the rendition kept with it at that moment, and the
/// way to keep one with that same item.
package struct MemoryItemSlot: Sendable {
    private let engine: CacheEngine
    private let memoryKey: MemoryKey
    /// The item's insertion stamp: a rendition is kept only with the very item it was made from.
    private let stamp: UInt64
    /// What a layer kept with the item before this lookup, if anything.
    package let rendition: (any MemoryItemRendition)?

    init(engine: CacheEngine, memoryKey: MemoryKey, stamp: UInt64, rendition: (any MemoryItemRendition)?) {
        self.engine = engine
        self.memoryKey = memoryKey
        self.stamp = stamp
        self.rendition = rendition
    }

    /// Keeps `rendition` with the item, if the tier still holds that item (it may have been
    /// replaced or removed since the lookup: then the rendition is not kept at all).
    package func keep(_ rendition: any MemoryItemRendition) {
        engine.memory.withLock { $0.attach(at: memoryKey, stamp: stamp) { $0.rendition = rendition } }
    }
}
