import AsyncHTTPClient
import Foundation
import LoopbackOrigin
import SharedURLCache
import SharedURLCacheAsyncHTTPClient
import VarnishParent

/// A loopback origin with two real Varnish parents in front of it, and children: caching clients
/// with directories of their own, as separate hosts would have.
final class ParentTierFixture: Sendable {
    let origin: LoopbackOrigin
    let parents: [VarnishParent]
    let tier: ParentTier
    let root: String

    /// Starts the origin (answering with `handler`) and two parents in front of it.
    init(
        fallback: ParentTier.Fallback = .direct,
        _ handler: @escaping @Sendable (LoopbackOrigin.Request, Int) -> LoopbackOrigin.Response
    ) throws {
        root = AHCTest.makeDirectory("suc-parents")
        origin = try LoopbackOrigin(handler)
        parents = [
            try VarnishParent(name: "p1", originPort: origin.port),
            try VarnishParent(name: "p2", originPort: origin.port),
        ]
        tier = try ParentTier(parents.map(\.url), fallback: fallback)
    }

    deinit {
        parents.forEach { $0.stop() }
        origin.stop()
        try? FileManager.default.removeItem(atPath: root)
    }

    /// A new child: its own cache directory, the tier as its parents (or none), a clock `offset`
    /// seconds ahead when given.
    func child(
        _ name: String, parents withParents: Bool = true, now: (@Sendable () -> Date)? = nil
    ) throws -> CachingHTTPClient {
        var configuration = CachingHTTPClient.Configuration()
        if withParents { configuration.parents = tier }
        if let now { configuration.caching.now = now }
        return try CachingHTTPClient(
            cache: try cache(name), httpClient: AHCTest.httpClient, configuration: configuration)
    }

    /// A cache directory of its own for the host called `name`.
    func cache(_ name: String) throws -> SharedCache {
        try FileManager.default.createDirectory(atPath: root + "/" + name, withIntermediateDirectories: true)
        return try AHCTest.cache(root + "/" + name)
    }

    /// The name (`p1`, `p2`) of the parent that owns `url` by rendezvous hashing.
    func owner(of url: String) -> String {
        let owner = tier.parents(inOrderFor: url)[0]
        return parents.first { $0.url == owner.description }!.name
    }

    /// How many requests for `target` reached the origin.
    func originRequests(for target: String) -> Int { origin.requests.filter { $0.target == target }.count }
}
