import CacheEntryFormat
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A built `CachedURLResponse` kept with a memory tier item. `CachedURLResponse` and the
/// `URLResponse` inside it have no mutating members, so one instance may be handed to any number
/// of callers on any thread (Foundation's own URLCache hands out its stored object the same way).
final class BuiltResponse: @unchecked Sendable {
    let value: CachedURLResponse
    init(_ value: CachedURLResponse) { self.value = value }
}

extension CacheEngine {
    /// The response for `lookup`: a memory item's kept response (after the item's version is
    /// checked against the index, docs/Design.md invariant 3), else one built from the memory
    /// item or from the store, kept with the memory item for the next hit.
    /// `requestURL` is reused for the response when it spells the stored URL (parsing it again
    /// was a noticeable part of a small hit).
    func cachedResponse(for lookup: LookupKey, requestURL: URL? = nil) -> CachedURLResponse? {
        guard let found = find(lookup) else { return nil }
        if let built = found.built { return built.value }
        guard let made = makeCachedResponse(found.entry, requestURL: requestURL) else { return nil }
        if let stamp = found.stamp {
            memory.withLock { $0.attach(at: found.memoryKey, stamp: stamp) { $0.response = BuiltResponse(made) } }
        }
        return made
    }

    /// Builds Foundation's response objects from an entry (once per memory item: see
    /// ``cachedResponse(for:)-(LookupKey)``).
    func makeCachedResponse(_ entry: CacheEntry, requestURL: URL? = nil) -> CachedURLResponse? {
        let reused = requestURL.flatMap { $0.baseURL == nil && $0.absoluteString == entry.head.url ? $0 : nil }
        guard let url = reused ?? URL(string: entry.head.url) else { return nil }
        let response: URLResponse
        switch entry.head.kind {
        case .http:
            var fields = [String: String](minimumCapacity: entry.head.headerFields.count)
            for pair in entry.head.headerFields {
                // A dictionary cannot hold repeated names; combine them as RFC 9110 §5.3 allows.
                // One hash per name that is not repeated (the usual case), and no regrowth.
                if let earlier = fields.updateValue(pair.value, forKey: pair.name) {
                    fields[pair.name] = earlier + ", " + pair.value
                }
            }
            guard
                let http = HTTPURLResponse(
                    url: url, statusCode: entry.head.statusCode, httpVersion: "HTTP/1.1", headerFields: fields)
            else { return nil }
            response = http
        case .plain:
            response = URLResponse(
                url: url, mimeType: entry.head.mimeType,
                expectedContentLength: Int(clamping: entry.head.expectedContentLength),
                textEncodingName: entry.head.textEncodingName)
        }
        return CachedURLResponse(
            response: response, data: entry.body, userInfo: UserInfoCodec.decode(entry.userInfo),
            storagePolicy: entry.inMemoryOnly ? .allowedInMemoryOnly : .allowed)
    }
}
