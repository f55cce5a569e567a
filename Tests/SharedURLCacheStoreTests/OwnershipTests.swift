import Foundation
import SharedURLCacheStore
import Testing
import TestProcess

/// Cron as root (`sudo crontab` running `urlcache compact`) must not lock a service out of its
/// own directory: what the core creates there takes the directory's owner and group.
@Suite(.blockingWaits, .enabled(if: geteuid() == 0, "needs root to act for another user"))
struct OwnershipTests {
    static let owner: uid_t = 4242, group: gid_t = 4343

    @Test("root opening, compacting and rewriting a foreign, empty directory leaves only files of its owner")
    func rootLeavesOwnersFiles() throws {
        let dir = TestDirectory()
        // Given: an empty cache directory that belongs to another user and group, 2770.
        #expect(mkdir(dir.cache, 0o2770) == 0)
        #expect(chown(dir.cache, Self.owner, Self.group) == 0)
        // When: root creates the cache, stores, compacts (a new index generation) and verifies.
        let store = try CacheStore(directory: dir.cache)
        try store.store(RecordDescriptor(key: bytes("k")), body: makeBody(size: 64 << 10, compressible: false))
        try store.rewriteIndex()
        _ = try store.compact(CompactionPolicy())
        // Then: every file and directory the core made is the owner's, in the owner's group.
        var paths = [dir.cache]
        let walker = FileManager.default.enumerator(atPath: dir.cache)
        while let name = walker?.nextObject() as? String {
            if name.hasPrefix("tmp/") || (name.hasPrefix("bodies/") && name.count > "bodies/xx".count) { continue }
            paths.append(dir.cache + "/" + name)
        }
        #expect(paths.contains(dir.cache + "/index.g1.lmdb"), "the rewrite made a new generation")
        for path in paths {
            var info = stat()
            #expect(lstat(path, &info) == 0)
            #expect(info.st_uid == Self.owner && info.st_gid == Self.group, "\(path) is \(info.st_uid):\(info.st_gid)")
        }
    }
}
