import Foundation
import SharedURLCacheStore
import Synchronization

/// A fresh, uniquely named directory per test (mkdtemp), removed afterwards.
final class TestDirectory {
    let root: String
    var cache: String { root + "/cache" }

    init() {
        var template = Array((NSTemporaryDirectory() + "/suc-maint-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "mkdtemp failed")
        root = String(decoding: template.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }
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

/// An executable built next to the test bundle (.build-*/<config>/NAME): CacheWorker, urlcache.
func builtExecutable(_ name: String) -> URL {
    var dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    if dir.pathExtension == "xctest" { dir = dir.deletingLastPathComponent() }
    let candidate = dir.appendingPathComponent(name)
    if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
    return Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent(name)
}

/// A real child process; stdout and stderr are drained on `finish()`.
final class ChildProcess {
    let process = Process()
    private let output = Pipe()
    private let errors = Pipe()

    init(_ executable: URL, _ arguments: [String]) throws {
        process.executableURL = executable
        process.arguments = arguments
        process.standardOutput = output
        process.standardError = errors
        try process.run()
    }

    func finish() -> (status: Int32, out: String, err: String) {
        let outData = output.fileHandleForReading.readDataToEndOfFile()
        let errData = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: outData, as: UTF8.self), String(decoding: errData, as: UTF8.self))
    }
}

/// A value shared with other threads (a class, so escaping closures can capture it).
final class Shared<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    func withLock<R>(_ body: (inout Value) -> R) -> R { mutex.withLock { body(&$0) } }
}
