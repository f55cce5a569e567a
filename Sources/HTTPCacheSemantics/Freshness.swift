#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HTTPTypes

/// Status codes that are heuristically cacheable (RFC 9110 §15.1: 200, 203, 204, 206, 300, 301,
/// 308, 404, 405, 410, 414, 501).
private let heuristicallyCacheableStatuses: Set<Int> = [200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501]

/// The freshness of a stored response at an instant (RFC 9111 §4.2).
public struct Freshness: Sendable, Hashable {
    /// The heuristically cacheable status codes (RFC 9110 §15.1).
    public static var heuristicallyCacheableStatusCodes: Set<Int> { heuristicallyCacheableStatuses }

    /// Where the freshness lifetime came from (RFC 9111 §4.2.1 order).
    public enum Source: Sendable, Hashable {
        /// `s-maxage` (shared caches only).
        case sharedMaxAge
        /// `max-age`.
        case maxAge
        /// `Expires` − `Date` (an invalid `Expires` gives 0, RFC 9111 §5.3).
        case expires
        /// 10 % of (`Date` − `Last-Modified`), capped (RFC 9111 §4.2.2).
        case heuristic
        /// No explicit or heuristic freshness: lifetime 0.
        case none
        /// `Cache-Control` was malformed: treated as stale (docs/Reliability.md §3.6).
        case invalid
    }

    /// The freshness lifetime in seconds (0…2^31).
    public var lifetimeSeconds: Int
    /// Where the lifetime came from.
    public var source: Source
    /// The current age in seconds per RFC 9111 §4.2.3 (0…2^31, never negative).
    public var currentAgeSeconds: Int

    /// RFC 9111 §4.2: fresh when the lifetime is greater than the current age.
    public var isFresh: Bool { lifetimeSeconds > currentAgeSeconds }
    /// Seconds past the lifetime (0 while fresh).
    public var stalenessSeconds: Int { max(0, currentAgeSeconds - lifetimeSeconds) }
    /// Seconds of freshness left (0 when stale).
    public var remainingSeconds: Int { max(0, lifetimeSeconds - currentAgeSeconds) }
    /// Seconds of freshness left, negative when stale: `ttl` of `Cache-Status` (RFC 9211 §2.4).
    public var ttlSeconds: Int { lifetimeSeconds - currentAgeSeconds }
    /// True when the lifetime comes from the origin (s-maxage, max-age, Expires).
    public var isExplicit: Bool { source == .sharedMaxAge || source == .maxAge || source == .expires }

    /// Computes the freshness of a stored response at `now`.
    ///
    /// - Parameters:
    ///   - stored: The stored response with its request and response times.
    ///   - now: The current time (never read from a clock here).
    ///   - configuration: Shared or private mode and heuristic settings.
    public init(stored: StoredResponse, now: Date, configuration: CachePolicyConfiguration) {
        self.init(basis: Basis(stored: stored, configuration: configuration), now: now)
    }

    /// The freshness at `now` of the stored response `basis` was computed from: the lifetime as
    /// it is, the current age as the age on arrival plus the time resident since (RFC 9111 §4.2.3).
    ///
    /// - Parameters:
    ///   - basis: What does not change with time, computed once per stored response.
    ///   - now: The current time (never read from a clock here).
    public init(basis: Basis, now: Date) {
        self.lifetimeSeconds = basis.lifetimeSeconds
        self.source = basis.source
        self.currentAgeSeconds = Self.currentAge(
            correctedInitialAge: basis.correctedInitialAgeSeconds, responseTime: basis.responseTimeSeconds,
            now: HTTPDate(now).secondsSince1970)
    }

    /// The parts of a stored response's freshness that do not change with time: its lifetime
    /// (RFC 9111 §4.2.1) and its age when it arrived (§4.2.3 `corrected_initial_age`). Parsing
    /// them (`Cache-Control`, `Date`, `Age`, `Expires`, `Last-Modified`) is most of the cost of a
    /// freshness; a cache that answers many requests from one stored response computes them
    /// once (``ParsedStoredResponse``).
    public struct Basis: Sendable, Hashable {
        /// The freshness lifetime in seconds (0…2^31).
        public var lifetimeSeconds: Int
        /// Where the lifetime came from.
        public var source: Source
        /// `corrected_initial_age` (RFC 9111 §4.2.3), never negative.
        public var correctedInitialAgeSeconds: Int64
        /// `response_time`, in seconds since 1970.
        public var responseTimeSeconds: Int64

        /// Computes the basis of a stored response.
        ///
        /// - Parameters:
        ///   - stored: The stored response with its request and response times.
        ///   - configuration: Shared or private mode and heuristic settings.
        public init(stored: StoredResponse, configuration: CachePolicyConfiguration) {
            let responseTime = HTTPDate(stored.responseTime)
            let lifetime = Freshness.lifetime(
                status: stored.status, headerFields: stored.headerFields, responseTime: responseTime,
                configuration: configuration)
            self.lifetimeSeconds = lifetime.seconds
            self.source = lifetime.source
            self.correctedInitialAgeSeconds = Freshness.correctedInitialAge(
                headerFields: stored.headerFields, requestTime: HTTPDate(stored.requestTime), responseTime: responseTime
            )
            self.responseTimeSeconds = responseTime.secondsSince1970
            if let invalidatedAt = stored.invalidatedAt {
                // A soft purge ends the lifetime at the age the response had then, so staleness
                // counts from the purge (the stale-while-revalidate window starts there).
                let ageThen = Freshness.currentAge(
                    correctedInitialAge: correctedInitialAgeSeconds, responseTime: responseTimeSeconds,
                    now: HTTPDate(invalidatedAt).secondsSince1970)
                self.lifetimeSeconds = min(lifetimeSeconds, ageThen)
            }
        }
    }

    /// The freshness lifetime (RFC 9111 §4.2.1): `s-maxage` (shared), then `max-age`, then
    /// `Expires` − `Date`, then a heuristic for heuristically cacheable statuses (§4.2.2).
    ///
    /// - Parameters:
    ///   - status: The response status.
    ///   - headerFields: The response header fields.
    ///   - responseTime: When the response was received (stands in for a missing `Date`).
    ///   - configuration: Shared or private mode and heuristic settings.
    public static func lifetime(
        status: HTTPResponse.Status,
        headerFields: HTTPFields,
        responseTime: HTTPDate,
        configuration: CachePolicyConfiguration
    ) -> (seconds: Int, source: Source) {
        // RFC 9213 §2.1: a targeted field in effect replaces Cache-Control and Expires.
        let targeted = TargetedCacheControl.directives(in: headerFields, targets: configuration.targetedFields)
        let cacheControl = targeted ?? CacheControl(responseFields: headerFields)
        // docs/Reliability.md §3.6: an unbalanced quote or an oversized list → stale.
        if cacheControl.isMalformed { return (0, .invalid) }
        // RFC 9111 §4.2.1 / §5.2.2.10: s-maxage overrides max-age and Expires in a shared cache.
        if configuration.isShared, let sharedMaxAge = cacheControl.sharedMaxAge {
            return (sharedMaxAge, .sharedMaxAge)
        }
        // RFC 9111 §5.2.2.1: max-age overrides Expires.
        if let maxAge = cacheControl.maxAge { return (maxAge, .maxAge) }
        let date = dateValue(headerFields: headerFields, responseTime: responseTime)
        let expiresLines = targeted == nil ? headerFields[values: .expires] : []
        if let first = expiresLines.first {
            // RFC 9111 §4.2.1: several different Expires values → stale;
            // RFC 9111 §5.3: an invalid date (notably "0") is in the past.
            guard expiresLines.allSatisfy({ $0 == first }), let expires = HTTPDate(first, relativeTo: responseTime)
            else { return (0, .expires) }
            return (clampedDelta(expires.secondsSince1970 - date.secondsSince1970), .expires)
        }
        // RFC 9111 §4.2.2: heuristic freshness only without explicit expiry, for a heuristically
        // cacheable status or a response marked `public`, and only from Last-Modified.
        guard heuristicallyCacheableStatuses.contains(status.code) || cacheControl.isPublic,
            let lastModifiedText = headerFields[values: .lastModified].first,
            let lastModified = HTTPDate(lastModifiedText, relativeTo: responseTime)
        else { return (0, .none) }
        let interval = clampedDelta(date.secondsSince1970 - lastModified.secondsSince1970)
        // interval ≤ 2^31 and percent ≤ 100, so this cannot overflow.
        let heuristic = interval * configuration.heuristicPercent / 100
        return (min(heuristic, configuration.heuristicMaximumSeconds), .heuristic)
    }

    /// The current age (RFC 9111 §4.2.3), with every term clamped so that a clock jump or a
    /// `Date` in the future never yields a negative age.
    ///
    /// - Parameters:
    ///   - headerFields: The stored header fields (`Age`, `Date`).
    ///   - requestTime: When the request was sent.
    ///   - responseTime: When the response was received.
    ///   - now: The current time.
    public static func currentAge(
        headerFields: HTTPFields,
        requestTime: HTTPDate,
        responseTime: HTTPDate,
        now: HTTPDate
    ) -> Int {
        currentAge(
            correctedInitialAge: correctedInitialAge(
                headerFields: headerFields, requestTime: requestTime, responseTime: responseTime),
            responseTime: responseTime.secondsSince1970, now: now.secondsSince1970)
    }

    /// `current_age = corrected_initial_age + resident_time` (RFC 9111 §4.2.3), in seconds.
    private static func currentAge(correctedInitialAge: Int64, responseTime: Int64, now: Int64) -> Int {
        // resident_time = now - response_time (a clock that went backwards counts as 0)
        let residentTime = max(0, now - responseTime)
        return clampedDelta(correctedInitialAge + residentTime)
    }

    /// `corrected_initial_age` (RFC 9111 §4.2.3): the age of the response when it arrived.
    static func correctedInitialAge(headerFields: HTTPFields, requestTime: HTTPDate, responseTime: HTTPDate) -> Int64 {
        let ageValue = Int64(age(headerFields: headerFields) ?? 0)
        let dateValue = dateValue(headerFields: headerFields, responseTime: responseTime)
        // RFC 9111 §4.2.3: apparent_age = max(0, response_time - date_value)
        let apparentAge = max(0, responseTime.secondsSince1970 - dateValue.secondsSince1970)
        // response_delay = response_time - request_time (never negative here)
        let responseDelay = max(0, responseTime.secondsSince1970 - requestTime.secondsSince1970)
        // corrected_age_value = age_value + response_delay
        let correctedAgeValue = ageValue + responseDelay
        // corrected_initial_age = max(apparent_age, corrected_age_value)
        return max(apparentAge, correctedAgeValue)
    }

    /// The `Age` value (RFC 9111 §5.1): the first member of the first line; invalid → nil
    /// (the cache "SHOULD ignore the field"); overflow → 2^31.
    ///
    /// - Parameters:
    ///   - headerFields: The response header fields.
    public static func age(headerFields: HTTPFields) -> Int? {
        guard let line = headerFields[values: .age].first,
            let first = line.split(separator: ",", omittingEmptySubsequences: false).first
        else { return nil }
        return DeltaSeconds.parse(first.trimmingOWS())
    }

    /// `Date`, or the response time when `Date` is missing or invalid (RFC 9110 §6.6.1).
    static func dateValue(headerFields: HTTPFields, responseTime: HTTPDate) -> HTTPDate {
        headerFields[values: .date].first.flatMap { HTTPDate($0, relativeTo: responseTime) } ?? responseTime
    }

    /// A seconds difference clamped to 0…2^31 (RFC 9111 §1.2.2).
    static func clampedDelta(_ seconds: Int64) -> Int {
        Int(min(max(0, seconds), Int64(DeltaSeconds.maximum)))
    }
}
