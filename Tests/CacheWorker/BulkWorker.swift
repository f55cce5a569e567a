import Foundation
@_spi(Testing) import SharedURLCacheStore

/// `CacheWorker bulk DIR OPERATION … FILES`: one bulk operation over a directory the test
/// filled, in a process of its own so that the unlink calls it makes can be counted (fault
/// injection is process-wide; the tests' own process runs other tests beside). Call FILES + 1
/// of unlink is made to fail with ENOENT, as for a file already gone: `extra_unlinks=1` says
/// the operation made more unlink calls than there were body files to remove.
///
///   bulk DIR purge-tag TAG FILES
///   bulk DIR purge-prefix PARTITION METHOD URL-PREFIX FILES
///   bulk DIR quota PARTITION BYTES FILES
///
/// Prints one line of `name=value` fields: removed, invalidated, indexed, evicted, extra_unlinks.
enum BulkWorker {
    static func run(_ args: [String]) -> Int32 {
        guard args.count >= 5, let files = Int(args[args.count - 1]), files >= 0 else {
            Worker.fail(1, "usage: CacheWorker bulk DIR OPERATION … FILES")
        }
        do {
            let store = try CacheStore(directory: args[2])
            InjectedFault.unlink.inject(nth: files + 1, errno: ENOENT)
            var fields: [(String, Int)] = []
            switch (args[3], args.count) {
            case ("purge-tag", 6):
                let report = try store.purge(tag: args[4])
                fields = [("removed", report.removedEntries), ("invalidated", report.invalidatedEntries)]
            case ("purge-prefix", 8):
                let report = try store.purge(urlPrefix: args[6], partition: args[4], method: args[5], soft: false)
                fields = [("removed", report.removedEntries), ("invalidated", report.invalidatedEntries)]
            case ("quota", 7):
                guard let bytes = Int(args[5]) else { Worker.fail(1, "quota: BYTES is a number") }
                let report = try store.setPartitionQuota(Array(args[4].utf8), maxBytes: bytes)
                fields = [("indexed", report.indexedEntries), ("evicted", report.evictedEntries)]
            default: Worker.fail(1, "unknown bulk operation \(args[3...].joined(separator: " "))")
            }
            fields.append(("extra_unlinks", InjectedFault.unlink.tripped ? 1 : 0))
            InjectedFault.clearAll()
            print(fields.map { "\($0.0)=\($0.1)" }.joined(separator: " "))
            fflush(nil)
            return 0
        } catch {
            Worker.fail(2, "cache error: \(error.detailedDescription())")
        }
    }
}
