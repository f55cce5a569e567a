#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HTTPTypes

/// What the caching flow keeps with an entry so that the policy can decide later: the response
/// head as stored, the request facts that matter, and the two times of RFC 9111 §4.2.3.
public struct StoredResponse: Sendable, Hashable {
    /// The stored status.
    public var status: HTTPResponse.Status
    /// The stored header fields (hop-by-hop fields already removed).
    public var headerFields: HTTPFields
    /// The method of the request that produced the response (GET or HEAD).
    public var requestMethod: HTTPRequest.Method
    /// The request header fields named by `Vary`, as received (RFC 9111 §4.1).
    public var varyRequestFields: HTTPFields
    /// Whether that request carried `Authorization` (RFC 9111 §3.5 applies again at reuse).
    public var requestHadAuthorization: Bool
    /// When the request was sent (`request_time` of RFC 9111 §4.2.3).
    public var requestTime: Date
    /// When the response was received (`response_time` of RFC 9111 §4.2.3).
    public var responseTime: Date
    /// When the cache was told the response is no longer fresh (a soft purge), or `nil`: its
    /// freshness lifetime ends there, so it is stale from then on and may still be served where
    /// stale responses are allowed (`stale-while-revalidate`, `stale-if-error`).
    public var invalidatedAt: Date?

    /// Creates a stored response.
    ///
    /// - Parameters:
    ///   - status: The stored status.
    ///   - headerFields: The stored header fields.
    ///   - requestMethod: The method of the original request.
    ///   - varyRequestFields: The request fields named by `Vary`.
    ///   - requestHadAuthorization: Whether the original request carried `Authorization`.
    ///   - requestTime: When the request was sent.
    ///   - responseTime: When the response was received.
    public init(
        status: HTTPResponse.Status,
        headerFields: HTTPFields,
        requestMethod: HTTPRequest.Method = .get,
        varyRequestFields: HTTPFields = [:],
        requestHadAuthorization: Bool = false,
        requestTime: Date,
        responseTime: Date
    ) {
        self.status = status
        self.headerFields = headerFields
        self.requestMethod = requestMethod
        self.varyRequestFields = varyRequestFields
        self.requestHadAuthorization = requestHadAuthorization
        self.requestTime = requestTime
        self.responseTime = responseTime
    }

    /// Builds the entry to store from a request and its response, as the storage decision
    /// allowed: hop-by-hop fields removed (RFC 9111 §3.1), selecting request fields kept (§4.1).
    ///
    /// - Parameters:
    ///   - request: The request sent.
    ///   - response: The response received.
    ///   - requestTime: When the request was sent.
    ///   - responseTime: When the response was received.
    public init(request: HTTPRequest, response: HTTPResponse, requestTime: Date, responseTime: Date) {
        let vary = VaryFields(responseFields: response.headerFields)
        self.init(
            status: response.status,
            headerFields: HopByHopFields.removing(from: response.headerFields),
            requestMethod: request.method,
            varyRequestFields: VaryKey.selectingFields(vary: vary, requestFields: request.headerFields),
            requestHadAuthorization: request.headerFields.contains(.authorization),
            requestTime: requestTime,
            responseTime: responseTime
        )
    }

    /// The response's parsed `Cache-Control`.
    public var cacheControl: CacheControl { CacheControl(responseFields: headerFields) }

    /// The response's parsed `Vary`.
    public var vary: VaryFields { VaryFields(responseFields: headerFields) }

    /// The secondary (variant) key of this entry.
    public var varyKey: VaryKey { VaryKey(vary: vary, requestFields: varyRequestFields) }

    /// The stored `ETag`, if valid.
    public var entityTag: EntityTag? { headerFields[.eTag].flatMap { EntityTag($0) } }

    /// The stored `Last-Modified`, if a valid HTTP-date.
    public var lastModified: HTTPDate? {
        headerFields[values: .lastModified].first.flatMap { HTTPDate($0, relativeTo: HTTPDate(responseTime)) }
    }
}
