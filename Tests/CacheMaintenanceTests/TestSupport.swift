import Foundation
import SharedURLCacheStore
import Synchronization
import TestProcess

/// A fresh, uniquely named directory per test (Tests/TestProcess), removed afterwards.
final class TestDirectory {
    private let directory = TemporaryDirectory(prefix: "suc-maint")
    var root: String { directory.root }
    var cache: String { root + "/cache" }
}

func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

/// Every body in its own file (inline bodies would hide the body-file paths the damage tests use).
func fileConfiguration() -> CacheStoreConfiguration {
    var configuration = CacheStoreConfiguration()
    configuration.inlineBodyLimitBytes = nil
    configuration.touchInterval = .milliseconds(1)
    return configuration
}

/// Deterministic incompressible bytes.
func randomBody(size: Int, seed: UInt64) -> [UInt8] {
    var state = seed &+ 0x9E37_79B9_7F4A_7C15
    return (0..<size).map { _ in
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return UInt8(truncatingIfNeeded: state >> 33)
    }
}

/// An executable built next to the test bundle (.build*/<config>/NAME): CacheWorker, urlcache.
func builtExecutable(_ name: String) -> URL { ChildProcess.builtExecutable(name) }

/// A value shared with other threads (a class, so escaping closures can capture it).
final class Shared<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    func withLock<R>(_ body: (inout Value) -> R) -> R { mutex.withLock { body(&$0) } }
}
