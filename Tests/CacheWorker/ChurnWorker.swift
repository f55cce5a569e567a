import Foundation
import SharedURLCacheStore

/// `rel-churn DIR ID SECONDS`: stores and removes its own keys (c<ID>-<n>) for SECONDS, one
/// operation at a time, and prints each once the call has returned: `PUT key seq` or `DEL key`.
/// A key's last printed line is what the directory must hold afterwards: the body "key seq", or
/// nothing.
/// Every third store removes the key stored just before it, so removals land in every table
/// (the record, both time orders, the counters) while a rewrite copies the index.
enum ChurnWorker {
    static func run(_ args: [String]) -> Int32 {
        let dir = args[2], id = args[3]
        let seconds = Double(args[4])!
        do {
            let store = try CacheStore(directory: dir)
            let end = Date().addingTimeInterval(seconds)
            var n: UInt64 = 0
            while Date() < end {
                let key = "c\(id)-\(n % 500)"
                try store.store(RecordDescriptor(key: Array(key.utf8)), body: Array("\(key) \(n + 1)".utf8))
                print("PUT \(key) \(n + 1)")
                if n % 3 == 2 {
                    let previous = "c\(id)-\((n - 1) % 500)"
                    _ = try store.remove(key: Array(previous.utf8))
                    print("DEL \(previous)")
                }
                fflush(nil)
                n += 1
            }
            return 0
        } catch {
            FileHandle.standardError.write(Data("rel-churn: \(error)\n".utf8))
            return 1
        }
    }
}
