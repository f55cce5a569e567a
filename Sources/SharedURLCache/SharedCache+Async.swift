import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Async variants for server code: the blocking store calls run on the cache's own concurrent
/// dispatch queue and resume the caller's continuation, so no cooperative thread waits on disk.
extension SharedCache {
    /// The cached response for `request`, or `nil`; see ``cachedResponse(for:)``.
    public func cachedResponse(for request: URLRequest) async -> CachedURLResponse? {
        guard let lookup = engine.lookupKey(for: request) else { return nil }
        let url = request.url
        return await offloaded { self.engine.cachedResponse(for: lookup, requestURL: url).map(BuiltResponse.init) }?
            .value
    }

    /// Stores a response; see ``storeCachedResponse(_:for:)``.
    public func storeCachedResponse(_ cachedResponse: CachedURLResponse, for request: URLRequest) async {
        guard let plan = engine.storePlan(cachedResponse, for: request) else { return }
        let data = cachedResponse.data
        // Whether it committed is the engine's to count; URLCache's store returns nothing.
        _ = await offloaded { self.engine.commit(plan, .whole(data)) }
    }

    /// Removes every variant stored for `request`; see ``removeCachedResponse(for:)``.
    public func removeCachedResponse(for request: URLRequest) async {
        _ = await purgeCachedResponses(for: request)
    }

    /// Removes every variant stored for `request` and says how many entries the directory had
    /// for it (the proxy's `PURGE`); nothing stored, or a request that is never cached, is 0.
    package func purgeCachedResponses(for request: URLRequest) async -> Int {
        guard let lookup = engine.lookupKey(for: request) else { return 0 }
        return await offloaded { self.engine.remove(key: lookup.key) }
    }

    /// Removes what was stored with `tag`; see ``removeCachedResponses(taggedWith:)``.
    @discardableResult
    public func removeCachedResponses(taggedWith tag: String) async -> Int {
        await offloaded { self.engine.purge(tag: tag, soft: false) }
    }

    /// Marks what was stored with `tag` stale; see ``invalidateCachedResponses(taggedWith:)``.
    @discardableResult
    public func invalidateCachedResponses(taggedWith tag: String) async -> Int {
        await offloaded { self.engine.purge(tag: tag, soft: true) }
    }

    /// Marks every variant stored for `request` stale; see ``invalidateCachedResponse(for:)``.
    @discardableResult
    public func invalidateCachedResponse(for request: URLRequest) async -> Int {
        guard let lookup = engine.lookupKey(for: request) else { return 0 }
        return await offloaded { self.engine.invalidate(key: lookup.key) }
    }

    /// Removes what was stored at or after `date`; see ``removeCachedResponses(since:)``.
    public func removeCachedResponses(since date: Date) async {
        await offloaded { self.engine.removeStored(since: date) }
    }

    /// Removes everything; see ``removeAllCachedResponses()``.
    public func removeAllCachedResponses() async {
        await offloaded { self.engine.removeEverything() }
    }

    private func offloaded<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            ioQueue.async { continuation.resume(returning: work()) }
        }
    }
}
