import Foundation

/// Test support: waits for `condition`, checking every 10 ms, until it holds or `limit` passes;
/// returns whether it held. For work a test starts in the background (a revalidation, its store):
/// the wait ends as soon as the work is done, and the limit is generous because in a parallel
/// run under a sanitizer the background task may wait a minute for a thread.
public func eventually(
    within limit: Duration = .seconds(120), _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let deadline = ContinuousClock.now + limit
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return try await condition()
}

/// ``eventually(within:_:)`` for a synchronous test (its suite has `.blockingWaits`): the same
/// checks every 10 ms up to `limit`, waiting on this thread.
public func waitUntil(within limit: Duration = .seconds(120), _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = ContinuousClock.now + limit
    while ContinuousClock.now < deadline {
        if try condition() { return true }
        usleep(10_000)
    }
    return try condition()
}
