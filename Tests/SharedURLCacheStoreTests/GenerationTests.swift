import Foundation
import SharedURLCacheStore
import Synchronization
import Testing
import TestProcess

/// Index generations inside one process (docs/Capacity.md): threads that store and read while
/// another thread rewrites the index follow it without an error, a lost store or a wrong body.
/// Also run under ThreadSanitizer (scripts/sanitize.sh tsan).
@Suite(.blockingWaits) struct GenerationTests {
    @Test("concurrentRewrite: 4 threads store and read while a fifth rewrites the index 15 times")
    func concurrentRewrite() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        let failures = Mutex<[String]>([])
        let done = Atomic<Int>(0)
        let rewriter = Thread {
            for _ in 0..<15 {
                do { try store.rewriteIndex() } catch { failures.withLock { $0.append("rewrite: \(error)") } }
            }
            done.store(1, ordering: .releasing)
        }
        rewriter.start()
        onOwnThreads(4) { lane in
            var i = 0
            while done.load(ordering: .acquiring) == 0 || i < 200 {
                let key = bytes("k\(lane)-\(i)")
                let body = makeBody(
                    size: i % 3 == 0 ? 6000 : 300, compressible: i % 2 == 0, seed: UInt64(lane * 100_000 + i))
                do {
                    try store.store(RecordDescriptor(key: key), body: body)
                    guard try store.record(for: key)?.body == body else {
                        failures.withLock { $0.append("k\(lane)-\(i): not read back") }
                        return
                    }
                    if i > 0, try store.record(for: bytes("k\(lane)-\(i - 1)")) == nil {
                        failures.withLock { $0.append("k\(lane)-\(i - 1): lost") }
                        return
                    }
                } catch {
                    failures.withLock { $0.append("k\(lane)-\(i): \(error)") }
                    return
                }
                i += 1
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0.prefix(3) })")
        let generations = try FileManager.default.contentsOfDirectory(atPath: dir.cache).filter {
            $0.hasPrefix("index.g") && $0.hasSuffix(".lmdb")
        }
        #expect(generations == ["index.g15.lmdb"], "\(generations)")
        #expect(try !store.verify(checkBodies: true).isDamaged)
    }
}
