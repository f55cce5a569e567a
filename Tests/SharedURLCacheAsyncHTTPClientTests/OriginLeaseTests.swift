import Foundation
import HTTPTypes
import NIOCore
import SharedURLCache
@testable import SharedURLCacheAsyncHTTPClient
import SharedURLCacheStore
import Synchronization
import Testing
import TestProcess

/// `OriginLease` against a lease released between a request's lookup and its fetch. The other
/// owner here is a second `SharedCache` on the directory: in one process both share one store
/// handle, so their leases do not exclude each other (the real-process tests,
/// ProxyProcessTests+Collapsing, cover that); what these tests pin is the release note that a
/// finished owner leaves and that a later fetch reads, with the interleaving chosen by the test
/// instead of by chance.
@Suite(.blockingWaits, .timeLimit(.minutes(2)))
struct OriginLeaseTests {
    static func request() -> HTTPRequest {
        HTTPRequest(method: .get, scheme: "http", authority: "example.com", path: "/lease")
    }

    /// This request's cache and the other owner's, on one new directory.
    static func twoCaches() throws -> (here: SharedCache, elsewhere: SharedCache) {
        let root = AHCTest.makeDirectory("suc-origin-lease")
        return (try AHCTest.cache(root), try AHCTest.cache(root))
    }

    /// Runs `OriginLease.run` for `name`, counting the flow's runs and the fetches that reached the
    /// origin; `beforeFetch` runs in each flow run, between its "lookup" and its fetch.
    static func run(
        _ cache: SharedCache, _ name: String, beforeFetch: @escaping @Sendable (Int) -> Void
    ) async throws -> (flowRuns: Int, originRequests: Int) {
        let flowRuns = Atomic(0)
        let originRequests = Atomic(0)
        let fetch: HTTPCachingFlow.StreamingFetch = { _, _ in
            originRequests.add(1, ordering: .relaxed)
            return (HTTPResponse(status: .ok), OriginBody(Data("body".utf8)))
        }
        _ = try await OriginLease.run(cache: cache, name: name, deadline: .now() + .seconds(10), fetch: fetch) {
            fetch in
            let run = flowRuns.add(1, ordering: .relaxed).newValue
            beforeFetch(run)
            _ = try await fetch(request(), nil)
            return CachedHTTPStreamingResponse(response: HTTPResponse(status: .ok), body: .empty, cacheStatus: .miss)
        }
        return (flowRuns.load(ordering: .relaxed), originRequests.load(ordering: .relaxed))
    }

    @Test("a lease free because its owner finished after the lookup: the flow runs again instead of fetching")
    func ownerFinishedAfterTheLookup() async throws {
        let (here, elsewhere) = try Self.twoCaches()
        let outcome = try await Self.run(here, "/lease") { run in
            guard run == 1 else { return }
            // After this request's lookup, another process fetches the URL and finishes.
            #expect(elsewhere.takeOriginLease("/lease") == .acquired)
            elsewhere.releaseOriginLease("/lease")
        }
        // The first run's fetch found the lease just released and deferred; the second run
        // (which would read what the other process stored) fetched with the lease.
        #expect(outcome.flowRuns == 2)
        #expect(outcome.originRequests == 1)
        #expect(elsewhere.takeOriginLease("/lease") == .acquired, "the lease was released after the fetch")
        elsewhere.releaseOriginLease("/lease")
    }

    @Test("a lease released at or after a given time is not taken with unlessFinishedSince; an older release is")
    func finishedSinceIsNotTaken() async throws {
        let (here, elsewhere) = try Self.twoCaches()
        let before = Date()
        #expect(elsewhere.takeOriginLease("/x") == .acquired)
        elsewhere.releaseOriginLease("/x")
        #expect(here.takeOriginLease("/x", unlessFinishedSince: before) == .finishedSince)
        try await Task.sleep(for: .milliseconds(5)) // release notes have millisecond times
        #expect(here.takeOriginLease("/x", unlessFinishedSince: Date()) == .acquired)
        here.releaseOriginLease("/x")
        #expect(here.takeOriginLease("/y", unlessFinishedSince: before) == .acquired, "a name never released")
        here.releaseOriginLease("/y")
    }

    @Test("a lease released before the lookup, or never taken: one run, one fetch")
    func ownerFinishedBeforeTheLookup() async throws {
        let (here, elsewhere) = try Self.twoCaches()
        #expect(elsewhere.takeOriginLease("/lease") == .acquired)
        elsewhere.releaseOriginLease("/lease")
        try await Task.sleep(for: .milliseconds(5)) // release notes have millisecond times
        let outcome = try await Self.run(here, "/lease") { _ in }
        #expect(outcome.flowRuns == 1 && outcome.originRequests == 1)
        let fresh = try await Self.run(here, "/other") { _ in }
        #expect(fresh.flowRuns == 1 && fresh.originRequests == 1)
    }
}
