import AsyncHTTPClient
import Foundation
import NIOCore

extension CachingHTTPClient {
    /// What one parent answered to a `PURGE` sent up by ``purgeParents(of:timeout:)``.
    public struct ParentPurge: Sendable, Hashable {
        /// The parent asked.
        public var parent: ParentTier.Parent
        /// Its status (Varnish answers 200 whether or not it held the object), or `nil` when it
        /// could not be reached in time.
        public var status: Int?
    }

    /// Sends `PURGE` for `url` to every parent of ``Configuration/parents``, at once, and returns
    /// what each answered (in the tier's order; empty without parents). The local cache is not
    /// touched: remove its entries yourself (`SharedCache`) after this returns, so that a miss
    /// in between cannot fetch the parent's old copy and store it here again.
    ///
    /// Every parent, not only the URL's owner by rendezvous order: while its owner was down
    /// the object may have been stored by the next parent in its order, and a purge sent to the
    /// wrong one costs one small request. Each parent must allow `PURGE` from this host (in
    /// Varnish, a `vcl_recv` that answers it with `return (purge)` for an ACL); the request carries
    /// the origin's `Host` and the origin-form target, as the parent's cached object was asked for.
    /// - Parameters:
    ///   - url: the absolute http(s) URL whose stored responses the parents should drop.
    ///   - timeout: the time allowed for each parent's answer.
    /// - Throws: ``CachingHTTPClientError/invalidRequest(_:)`` for a URL that is not absolute http(s).
    public func purgeParents(of url: String, timeout: TimeAmount = .seconds(5)) async throws -> [ParentPurge] {
        guard let tier = configuration.parents else { return [] }
        let request = try Self.httpRequest(from: HTTPClientRequest(url: url))
        guard let authority = request.authority else { throw CachingHTTPClientError.invalidRequest(url) }
        let target = request.path ?? "/"
        let httpClient = self.httpClient
        let deadline = NIODeadline.now() + timeout
        return await withTaskGroup(of: (Int, Int?).self) { group in
            for (index, parent) in tier.parents.enumerated() {
                group.addTask {
                    var purge = HTTPClientRequest(url: parent.description + target)
                    purge.method = .RAW(value: "PURGE")
                    purge.headers.replaceOrAdd(name: "Host", value: authority)
                    guard let response = try? await httpClient.execute(purge, deadline: deadline) else {
                        return (index, nil)
                    }
                    _ = try? await response.body.collect(upTo: 64 << 10) // frees the connection for reuse
                    return (index, Int(response.status.code))
                }
            }
            var statuses = [Int?](repeating: nil, count: tier.parents.count)
            for await (index, status) in group { statuses[index] = status }
            return zip(tier.parents, statuses).map { ParentPurge(parent: $0, status: $1) }
        }
    }
}
