import Foundation

/// A value behind a lock: `withLock` gives exclusive access to it.
///
/// Used instead of `Synchronization.Mutex` in the layers the thread sanitizer checks
/// (scripts/sanitize.sh tsan): on Linux `Mutex` locks with atomics and futex calls inside the
/// uninstrumented standard library, so TSan sees no ordering and reports every access it guards
/// as a race. `NSLock` is a pthread mutex, which TSan understands, so a report is a real one.
/// Uncontended, the difference is tens of nanoseconds, next to microseconds of work per lookup.
package final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    package init(_ value: Value) { self.value = value }

    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
