/// Why a snapshot file is refused by `urlcache import` (or `export` could not write it). Every
/// case names the byte offset where reading stopped, so an operator can tell a truncated copy
/// (the offset is the file's length) from damage in the middle.
package enum SnapshotError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Not a snapshot: the file does not start with the snapshot magic.
    case foreign
    /// A snapshot of a format version this release does not read.
    case unsupportedVersion(UInt32)
    /// The file ends before its trailer: a copy cut short.
    case truncated(offset: Int)
    /// A checksum or a length does not match at `offset`: the file was changed after export.
    case damaged(offset: Int, reason: String)
    /// Reading or writing the file failed.
    case io(String)

    package var description: String {
        switch self {
        case .foreign: "not a urlcache snapshot (wrong magic)"
        case .unsupportedVersion(let version):
            "snapshot format version \(version) is not supported (this release reads version \(SnapshotFormat.version))"
        case .truncated(let offset): "snapshot truncated: it ends at byte \(offset), before its trailer"
        case .damaged(let offset, let reason): "snapshot damaged at byte \(offset): \(reason)"
        case .io(let message): "snapshot file: \(message)"
        }
    }
}
