import Foundation
import SharedURLCacheStore
import Testing
import SeededRandom

/// A fresh, uniquely named directory per test, removed afterwards. (Descriptor leaks are checked
/// in a separate process by `CacheWorker fdcheck`: tests here run in parallel, so a count of this
/// process's descriptors would see the other tests'.)
final class TestDirectory {
    let root: String
    var cache: String { root + "/cache" }

    init() {
        var template = Array((NSTemporaryDirectory() + "/suc-test-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "mkdtemp failed")
        root = String(decoding: template.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }
}

func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

/// Deterministic bytes: JSON-like records (compressible, roughly 4:1 at zlib level 1) or
/// uniformly random (incompressible). Built a word at a time so 64 MiB stays quick in debug.
func makeBody(size: Int, compressible: Bool, seed: UInt64 = 1) -> [UInt8] {
    var rng = SeededGenerator(seed: seed)
    if !compressible {
        return [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            var i = 0
            while i < size {
                var r = rng.next()
                for _ in 0..<8 where i < size {
                    buffer[i] = UInt8(truncatingIfNeeded: r)
                    r >>= 8
                    i += 1
                }
            }
            count = size
        }
    }
    var out = [UInt8]()
    out.reserveCapacity(size + 64)
    while out.count < size {
        out += Array("{\"id\":\(rng.next() % 100_000),\"name\":\"item\",\"tags\":[\"a\",\"b\"],\"ok\":true}\n".utf8)
    }
    out.removeLast(out.count - size)
    return out
}

typealias SeededGenerator = SplitMix64
