import Foundation
import SharedURLCacheStore
import Testing
import TestProcess

extension Reliability.Upgrade {
    @Test(
        "an earlier release on a directory under S3-FIFO: it opens and stores, ignoring the queues; verify reports its entries, --fix rebuilds the queues, eviction goes on"
    )
    func earlierReleaseOnS3FIFO() throws {
        let scratch = Scratch()
        let dir = scratch.cache
        let earlier = try Self.earlierWorker(in: scratch)
        // Incompressible 9 KB bodies, one per key: body files, and the capacity reached.
        func body(_ i: Int) -> [UInt8] {
            var x = UInt32(truncatingIfNeeded: i) &+ 7
            return (0..<9000).map { _ in
                x = x &* 1_103_515_245 &+ 12_345
                return UInt8(x >> 24)
            }
        }
        var configuration = CacheStoreConfiguration()
        configuration.hardCapacityBytes = 400_000
        // The earlier release creates the directory (format 1, which it can open; one this
        // release creates is format 2, which it refuses).
        let created = try ChildProcess.run(earlier, [dir, "open"])
        #expect(created.status == 0, "the earlier release creates the directory: \(created.err)")
        do {
            let store = try CacheStore(directory: dir, configuration: configuration)
            try store.setEvictionPolicy(.s3fifo)
            for i in 0..<60 {
                try store.store(
                    RecordDescriptor(key: Array("new-\(i)".utf8)), body: body(i))
            }
            #expect(try store.statistics().evictions > 0)
        }
        // The earlier release stores into it, knowing nothing of the policy.
        let fill = try ChildProcess.run(earlier, [dir, "fill", "30"])
        #expect(fill.status == 0, "the earlier release stores: \(fill.err)")
        let store = try CacheStore(directory: dir, configuration: configuration)
        #expect(try store.evictionPolicy() == .s3fifo)
        for i in 0..<30 { #expect(try EarlierReleaseEntry(i: i).isServed(by: store), "old-\(i)") }
        // Its entries are in no queue: reported, and rebuilt by --fix.
        let before = try store.verify()
        #expect(before.strayIndexKeys > 0, "\(before)")
        _ = try store.verify(fix: true)
        let after = try store.verify(checkBodies: true)
        #expect(!after.isDamaged && after.strayIndexKeys == 0, "\(after)")
        // Eviction under the cap goes on, and leaves the queues consistent.
        for i in 60..<120 {
            try store.store(
                RecordDescriptor(key: Array("new-\(i)".utf8)), body: body(i))
        }
        #expect(try store.diskUsage(measure: false).entryBytes <= 400_000)
        let end = try store.verify(checkBodies: true)
        #expect(!end.isDamaged && end.strayIndexKeys == 0, "\(end)")
    }
}
