import Dispatch
import Synchronization

/// Holds an origin's answers until the test opens it, so that requests a test wants to overlap
/// (collapsed followers behind a leader) overlap on a loaded machine too: the test opens the gate
/// once it has seen them queue, instead of hoping a fixed sleep is long enough. A gate never
/// opened lets its requests through after two minutes, so a broken test fails instead of hanging.
public final class OriginGate: Sendable {
    private let closed = DispatchGroup()
    private let isOpen = Mutex(false)

    public init() { closed.enter() }

    // A dispatch group released while entered is a crash: a test that throws before it opens
    // its gate must fail as a test, not end the test process.
    deinit { open() }

    /// Called by the origin's handler (on the origin's thread): waits until the gate is open.
    public func pass() { _ = closed.wait(timeout: .now() + 120) }

    /// Lets every waiting and later request through.
    public func open() {
        let wasOpen = isOpen.withLock { open in
            defer { open = true }
            return open
        }
        if !wasOpen { closed.leave() }
    }

    /// Waits (polling, up to two minutes) until `condition` holds, then opens the gate; returns
    /// whether the condition was seen.
    @discardableResult
    public func open(when condition: @Sendable () -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(120)
        var seen = condition()
        while !seen && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
            seen = condition()
        }
        open()
        return seen
    }
}
