import Foundation
import LoopbackOrigin
import Testing
import TestProcess

/// docs/Reliability.md §3.8 through a real `urlcache proxy` process: its cache directory on a
/// small tmpfs that other data mostly fills, with a disk capacity far above what the file system
/// has. A full file system is a capacity event: every answer is right, stores evict the least
/// recently used entries to make room, `Cache-Status` says `stored` only for an entry that is
/// there, and `urlcache compact` works on that file system while the proxy runs.
@Suite(.blockingWaits, .serialized, .timeLimit(.minutes(3)))
struct ProxyFullFileSystemTests {
    /// 512 KiB that do not compress, the same for the same target.
    static func body(for target: String) -> [UInt8] {
        var state = UInt64(truncatingIfNeeded: target.utf8.reduce(5381) { $0 &* 33 &+ Int($1) })
        return (0..<(512 << 10)).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: state >> 56)
        }
    }

    @Test("a proxy on a full 24 MiB tmpfs answers right, keeps storing, says stored only when it did; compact works")
    func fullFileSystem() async throws {
        // Other data takes most of the file system, as it does on a shared disk.
        guard let fileSystem = try SmallFileSystem.mount(megabytes: 24, filledMegabytes: 18) else { return }
        defer { withExtendedLifetime(fileSystem) {} } // mounted until the test ends
        let mount = fileSystem.path
        let origin = try LoopbackOrigin { request, _ in
            var response = LoopbackOrigin.Response(status: 200, headers: [("Cache-Control", "max-age=600")])
            response.body = Self.body(for: request.target)
            return response
        }
        defer { origin.stop() }
        let cache = mount + "/cache"
        let proxy = try await ProxyProcess.start(
            upstream: origin.url, ["--memory-capacity", "0", "--disk-capacity", "1GiB"], cacheDirectory: cache)

        // 30 responses of 512 KiB (15 MiB) into the ~6 MiB the file system has left, each asked twice.
        var wrong: [String] = [], saidStoredButMissed: [String] = [], notStored: [String] = []
        func fetchTwice(_ target: String) async throws {
            let first = try await proxy.send(target)
            let second = try await proxy.send(target)
            if first.status != 200 || first.body != Self.body(for: target) || second.body != Self.body(for: target) {
                wrong.append(target)
            }
            // A client has the whole body a moment before the store behind it commits (it cannot
            // wait for that: it knows the length): a second request in that moment waits for the
            // first's store and is answered from it ("collapsed"), which the origin's count confirms.
            let status = second.header("Cache-Status") ?? ""
            let hit = status.hasPrefix("urlcache;hit") || status.hasSuffix(";collapsed")
            if first.header("Cache-Status")?.hasSuffix(";stored") == true && !hit { saidStoredButMissed.append(target) }
            if !hit {
                notStored.append(
                    "\(target) [\(first.header("Cache-Status") ?? "-") | \(second.header("Cache-Status") ?? "-")]")
            }
        }
        for i in 0..<30 { try await fetchTwice("/full/\(i)") }
        #expect(wrong.isEmpty, "wrong answers on a full file system: \(wrong)")
        #expect(saidStoredButMissed.isEmpty, "Cache-Status said stored: \(saidStoredButMissed)")
        #expect(notStored.isEmpty, "not stored on the full file system (no eviction made room): \(notStored)")

        // Compaction on that file system, beside the running proxy; stores go on after it.
        let compact = try ChildProcess.run(
            ChildProcess.builtExecutable("urlcache"), ["compact", cache, "--max-size", "2MiB"])
        #expect(compact.status == 0, "\(compact.out) \(compact.err)")
        for i in 30..<35 { try await fetchTwice("/full/\(i)") }
        #expect(wrong.isEmpty && saidStoredButMissed.isEmpty && notStored.isEmpty, "after compaction: \(notStored)")
        #expect(origin.requestCount == 35, "each response fetched once, then a hit")
        let stopped = try await proxy.stop()
        #expect(stopped.status == 0, "\(stopped.err)")
    }
}
