#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HTTPTypes

/// A stored response with what every reuse decision reads from it, parsed once.
///
/// ``ReuseDecision/decide(request:stored:now:configuration:)`` parses the stored
/// `Cache-Control`, `Vary`, `Date`, `Age` and `Expires` each time it is asked. A cache that
/// answers many requests from one stored response (a memory tier) keeps one of these with the
/// response instead and decides with ``ReuseDecision/decide(request:parsed:now:)``: a hit then
/// costs the request's own fields and the arithmetic of RFC 9111 §4.2, and the decision is the
/// same.
public struct ParsedStoredResponse: Sendable {
    /// The stored response.
    public let stored: StoredResponse
    /// The configuration the parts below were computed under (targeted fields, shared or private,
    /// heuristics).
    public let configuration: CachePolicyConfiguration
    /// The response's directives as the configuration reads them (RFC 9213 targeted fields first).
    public let cacheControl: CacheControl
    /// The response's `Vary`.
    public let vary: VaryFields
    /// The response's freshness lifetime and age on arrival.
    public let freshness: Freshness.Basis

    /// Parses `stored` under `configuration`.
    ///
    /// - Parameters:
    ///   - stored: The stored response.
    ///   - configuration: The cache's policy configuration.
    public init(_ stored: StoredResponse, configuration: CachePolicyConfiguration = CachePolicyConfiguration()) {
        self.stored = stored
        self.configuration = configuration
        self.cacheControl = CacheControl(responseFields: stored.headerFields, configuration: configuration)
        self.vary = stored.vary
        self.freshness = Freshness.Basis(stored: stored, configuration: configuration)
    }

    /// The freshness at `now`.
    public func freshness(at now: Date) -> Freshness { Freshness(basis: freshness, now: now) }
}
