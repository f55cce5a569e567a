import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The six URLRequest cache policies, all implemented (Apple left two unimplemented for years).
public enum RequestCachePolicy: Sendable, Hashable, CaseIterable {
    /// RFC 9111: fresh → served; stale → revalidated; none → fetched.
    case useProtocolCachePolicy
    /// Fetch from the origin without consulting stored data (the response may still be stored).
    case reloadIgnoringLocalCacheData
    /// As above, and tell caches on the way not to answer from storage either
    /// (`Cache-Control: no-cache`, `Pragma: no-cache`).
    case reloadIgnoringLocalAndRemoteCacheData
    /// Any stored response, whatever its age; the origin only on a miss.
    case returnCacheDataElseLoad
    /// Any stored response, whatever its age; never the network (offline). A miss fails.
    case returnCacheDataDontLoad
    /// Always revalidate a stored response with the origin before using it.
    case reloadRevalidatingCacheData

    /// The policy of a Foundation request.
    public init(_ policy: URLRequest.CachePolicy) {
        switch policy {
        case .useProtocolCachePolicy: self = .useProtocolCachePolicy
        case .reloadIgnoringLocalCacheData: self = .reloadIgnoringLocalCacheData
        case .reloadIgnoringLocalAndRemoteCacheData: self = .reloadIgnoringLocalAndRemoteCacheData
        case .returnCacheDataElseLoad: self = .returnCacheDataElseLoad
        case .returnCacheDataDontLoad: self = .returnCacheDataDontLoad
        case .reloadRevalidatingCacheData: self = .reloadRevalidatingCacheData
        @unknown default: self = .useProtocolCachePolicy
        }
    }
}
