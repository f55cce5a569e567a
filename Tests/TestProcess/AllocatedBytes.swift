import Foundation

/// What `du -s --block-size=1 PATH` prints: allocated blocks (`st_blocks` × 512) of every file
/// and directory under `path`, `path` itself included, symlinks not followed. Written out here
/// so that a cache's own disk-usage figures are checked against an independent count.
public func allocatedBytes(under path: String) -> Int {
    var info = stat()
    guard lstat(path, &info) == 0 else { return 0 }
    var total = Int(info.st_blocks) * 512
    if (info.st_mode & S_IFMT) == S_IFDIR {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] {
            total += allocatedBytes(under: path + "/" + name)
        }
    }
    return total
}
