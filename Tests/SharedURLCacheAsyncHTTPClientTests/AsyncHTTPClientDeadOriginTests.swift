import AsyncHTTPClient
import Foundation
import LoopbackOrigin
import SharedURLCache
import SharedURLCacheAsyncHTTPClient
import Synchronization
import Testing
import TestProcess

/// A dead origin for `CachingHTTPClient` with its default `HTTPClient`: an origin that refuses
/// the connection, closes it or resets it without a response is answered at once, from a stale
/// entry where `stale-if-error` allows (RFC 5861 §4), 504 where `must-revalidate` forbids it
/// (RFC 9111 §5.2.2.2), the connection error on a miss. With `HTTPClient.shared` a refused
/// connect was retried until the request's deadline (30 s here); the bound is generous for a
/// loaded machine.
@Suite(.blockingWaits, .timeLimit(.minutes(5)))
struct AsyncHTTPClientDeadOriginTests {
    enum Failure: String, CaseIterable, Sendable {
        case refused, closed, reset
    }

    @Test(
        "a dead origin: stale-if-error served, must-revalidate 504, a miss fails, at once", arguments: Failure.allCases)
    func deadOrigin(failure: Failure) async throws {
        let root = AHCTest.makeDirectory("suc-ahc-dead")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let down = Atomic(false)
        let origin = try LoopbackOrigin { request, _ in
            let control =
                request.target == "/sie"
                ? "max-age=10, stale-if-error=600" : "max-age=10, must-revalidate, stale-if-error=600"
            var response = LoopbackOrigin.Response(
                status: 200, headers: [("Cache-Control", control)], body: "stored \(request.target)")
            if down.load(ordering: .relaxed) {
                response.closesWithoutResponse = failure == .closed
                response.resetsWithoutResponse = failure == .reset
            }
            return response
        }
        defer { origin.stop() }
        let offset = Atomic<Int>(0) // seconds added to the flow's clock
        var configuration = CachingHTTPClient.Configuration()
        configuration.caching.now = { Date().addingTimeInterval(TimeInterval(offset.load(ordering: .relaxed))) }
        // the default HTTPClient
        let client = try CachingHTTPClient(cache: try AHCTest.cache(root), configuration: configuration)
        _ = try await AHCTest.get(client, origin.url + "/sie")
        _ = try await AHCTest.get(client, origin.url + "/must-revalidate")
        offset.store(60, ordering: .relaxed) // both stale by 50 s
        if failure == .refused { origin.stop() } else { down.store(true, ordering: .relaxed) }

        var started = ContinuousClock.now
        let stale = try await AHCTest.get(client, origin.url + "/sie")
        #expect(stale.status == 200 && stale.text == "stored /sie" && stale.response.cacheStatus == .stale)
        #expect(ContinuousClock.now - started < .seconds(3))
        started = ContinuousClock.now
        let forbidden = try await AHCTest.get(client, origin.url + "/must-revalidate")
        #expect(forbidden.status == 504)
        #expect(ContinuousClock.now - started < .seconds(3))
        started = ContinuousClock.now
        await #expect(throws: (any Error).self) { _ = try await AHCTest.get(client, origin.url + "/never-stored") }
        #expect(ContinuousClock.now - started < .seconds(3))
    }
}
