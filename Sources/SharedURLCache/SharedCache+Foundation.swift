import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension SharedCache {
    /// Rebuilds Foundation's response objects from an entry (fresh objects on every hit: they
    /// are not Sendable, so the memory tier holds values, not them).
    func makeCachedResponse(_ entry: CacheEntry) -> CachedURLResponse? {
        guard let url = URL(string: entry.head.url) else { return nil }
        let response: URLResponse
        switch entry.head.kind {
        case .http:
            var fields: [String: String] = [:]
            for pair in entry.head.headerFields {
                // A dictionary cannot hold repeated names; combine them as RFC 9110 §5.3 allows.
                fields[pair.name] = fields[pair.name].map { $0 + ", " + pair.value } ?? pair.value
            }
            guard let http = HTTPURLResponse(url: url, statusCode: entry.head.statusCode, httpVersion: "HTTP/1.1", headerFields: fields)
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
