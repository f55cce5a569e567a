import Foundation
import SharedURLCacheStore
import Testing
import TestProcess

extension Reliability {
    /// Processes follow the index to each new generation while another process rewrites it
    /// (docs/Capacity.md, "Index generations"). A rewrite retires the file of the generation before:
    /// a reader that read the generation number just before may find the file gone, or gone between
    /// its check and LMDB's open (which then makes an empty file). Either way it follows the newer
    /// generation; no read fails. (Seen once in the T3 kill loop under ASan: a reader's lookup failed
    /// with "the index generation lacks its tables".)
    @Suite struct GenerationFollow {
        @Test("readers in three processes never fail while a writer stores and a rewriter switches generations")
        func readersFollowWhileGenerationsSwitch() throws {
            let scratch = Scratch()
            let dir = scratch.cache
            _ = try CacheStore(directory: dir)
            let rewriter = try Child(["rel-rewriter", dir, "1", "1", "none"])
            let writer = try Child(["writer", dir, "5", "1", "200"])
            let readers = try (0..<3).map { _ in try Child(["reader", dir, "3", "200"]) }
            let results = readers.map { $0.finish() }
            let killed = Child.killed([rewriter, writer])
            let rewrites = killed[0].out.components(separatedBy: "REWRITTEN").count - 1
            for (i, result) in results.enumerated() {
                #expect(result.status == 0, "reader \(i): status \(result.status) \(result.err)")
                #expect(result.out.contains("DONE reads="), "reader \(i) read until its end")
            }
            #expect(rewrites >= 10, "the generation switched \(rewrites) times during the reads")
        }

        /// Sets the number in the generation file (16 bytes: magic, then the number, little
        /// endian), as a neighbour that writes the file, or a repair, would.
        func publish(_ generation: UInt64, in dir: String) {
            let fd = open(dir + "/generation", O_WRONLY)
            defer { close(fd) }
            var number = generation.littleEndian
            _ = withUnsafeBytes(of: &number) { pwrite(fd, $0.baseAddress, 8, 8) }
        }

        @Test("a generation file sent back and forth between two index files: readers in two processes never fail")
        func generationSentBack() throws {
            let scratch = Scratch()
            let dir = scratch.cache
            // Given: 200 keys in generation 0 (index.lmdb), and generation 1 a copy of it.
            let writer = try Child(["writer", dir, "5", "1", "200"])
            #expect(writer.waitForLine(where: { $0.hasPrefix("ACK ") }))
            usleep(500_000)
            _ = writer.killed()
            try FileManager.default.copyItem(atPath: dir + "/index.lmdb", toPath: dir + "/index.g1.lmdb")
            // When: the number flips between 1 and 0 every 2 ms while two processes read; each
            // flip back asks a reader for the files it just left, which it may still be closing.
            let readers = try (0..<2).map { _ in try Child(["reader", dir, "3", "200"]) }
            var flips = 0
            let until = Date().addingTimeInterval(3)
            while Date() < until {
                flips += 1
                publish(UInt64(flips % 2), in: dir)
                usleep(2_000)
            }
            publish(0, in: dir)
            // Then: every read of both processes succeeded, none got a wrong body.
            for (i, result) in readers.map({ $0.finish() }).enumerated() {
                #expect(result.status == 0, "reader \(i): status \(result.status) \(result.err)")
                let hits = result.out.components(separatedBy: "hits=").last.flatMap { Int($0.prefix { $0.isNumber }) }
                #expect((hits ?? 0) > 0, "reader \(i) read stored bodies until its end: \(result.out)")
            }
            #expect(flips > 100)
        }
    }
}
