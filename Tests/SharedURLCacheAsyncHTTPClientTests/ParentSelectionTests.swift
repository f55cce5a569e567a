import NIOCore
import Testing

@testable import SharedURLCacheAsyncHTTPClient

/// The parts of the parent tier that need no network: parsing, rendezvous order, back-off.
struct ParentSelectionTests {
    @Test("a parent is http(s)://host[:port]; anything else is a typed error")
    func parsing() throws {
        let tier = try ParentTier(["http://10.0.0.5:6081", "HTTP://cache.internal", "https://[::1]:8443/"])
        #expect(
            tier.parents.map(\.description) == ["http://10.0.0.5:6081", "http://cache.internal", "https://[::1]:8443"])
        #expect(tier.fallback == .direct)
        for bad in ["10.0.0.5:6081", "ftp://h:1", "http://h:1/path", "http://h:1?q=1", "http://u@h:1", "http://", ""] {
            #expect(throws: ParentTierError.invalidParent(bad)) { try ParentTier([bad]) }
        }
        #expect(throws: ParentTierError.noParents) { try ParentTier([]) }
    }

    @Test("rendezvous: the same order everywhere, a fair spread, and removing a parent moves only its keys")
    func rendezvous() throws {
        let three = try ParentTier(["http://h1:6081", "http://h2:6081", "http://h3:6081"])
        let two = try ParentTier(["http://h1:6081", "http://h3:6081"])
        let reversed = try ParentTier(["http://h3:6081", "http://h2:6081", "http://h1:6081"])
        var owners: [String: Int] = [:]
        for n in 0..<3000 {
            let url = "https://api.example.com/items/\(n)?v=1"
            let order = three.parents(inOrderFor: url)
            #expect(order == reversed.parents(inOrderFor: url)) // the list's order does not matter
            owners[order[0].description, default: 0] += 1
            // Without h2, h2's keys go to their second choice; the others stay where they were.
            let expected = order.first { $0.description != "http://h2:6081" }
            #expect(two.parents(inOrderFor: url)[0] == expected)
        }
        for (_, count) in owners { #expect((800...1200).contains(count), "\(owners)") }
        // Fixed across processes and releases (Swift's Hasher would differ per process).
        #expect(three.parents(inOrderFor: "http://127.0.0.1/a").map(\.description) == Self.pinnedOrder)
    }

    static let pinnedOrder = ["http://h3:6081", "http://h2:6081", "http://h1:6081"]

    @Test("passive health: a failure marks a parent down with a doubling back-off; a success clears it")
    func backOff() throws {
        var tier = try ParentTier(["http://h1:1", "http://h2:1"])
        tier.retryAfter = .seconds(1)
        tier.maximumRetryAfter = .seconds(4)
        let health = ParentHealth(tier: tier)
        let start = NIODeadline.now()
        health.failed(0, now: start)
        #expect(health.isDown(0, now: start) && !health.isDown(1, now: start))
        #expect(health.candidates(for: "k", now: start) == [1])
        health.failed(0, now: start + .milliseconds(500)) // the same outage: no longer back-off
        #expect(!health.isDown(0, now: start + .milliseconds(1001)))
        health.failed(0, now: start + .seconds(2)) // failed its retry: 2 s
        #expect(
            health.isDown(0, now: start + .milliseconds(3900)) && !health.isDown(0, now: start + .milliseconds(4001)))
        health.failed(0, now: start + .seconds(5)) // 4 s
        health.failed(0, now: start + .seconds(10)) // capped at 4 s
        #expect(!health.isDown(0, now: start + .milliseconds(14001)))
        health.succeeded(0)
        health.failed(0, now: start + .seconds(20)) // back to 1 s
        #expect(!health.isDown(0, now: start + .milliseconds(21001)))

        // With a probe, down until the probe says otherwise; only the first failure starts one.
        tier.probe = .init()
        let probed = ParentHealth(tier: tier)
        #expect(probed.failed(1, now: start))
        #expect(!probed.failed(1, now: start + .seconds(1)))
        #expect(probed.isDown(1, now: start + .seconds(3600)))
        probed.succeeded(1)
        #expect(!probed.isDown(1) && probed.candidates(for: "k").count == 2)
    }
}
