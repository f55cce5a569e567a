import Foundation

/// Test support: a small tmpfs mounted for one test, most of it already taken by a file of other
/// data, as a shared disk is (docs/Reliability.md §3.8). Unmounted, and its directory removed,
/// when the test drops it. Mounting needs root: `mount` is nil (with a note printed) otherwise.
public final class SmallFileSystem: Sendable {
    /// Where it is mounted.
    public let path: String
    private let directory: TemporaryDirectory

    private init(path: String, directory: TemporaryDirectory) {
        self.path = path
        self.directory = directory
    }

    public struct MountError: Error, CustomStringConvertible {
        public let description: String
    }

    /// A tmpfs of `megabytes`, `filledMegabytes` of which a file named `other` takes.
    public static func mount(megabytes: Int, filledMegabytes: Int) throws -> SmallFileSystem? {
        guard geteuid() == 0 else {
            print("skipped: mounting a tmpfs needs root")
            return nil
        }
        let directory = TemporaryDirectory(prefix: "suc-small-fs")
        let path = directory.root + "/mnt"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let mounted = try ChildProcess.shell("mount -t tmpfs -o size=\(megabytes)m tmpfs '\(path)'")
        guard mounted.status == 0 else { throw MountError(description: "cannot mount a tmpfs: \(mounted.err)") }
        let system = SmallFileSystem(path: path, directory: directory)
        let filler = try ChildProcess.shell(
            "dd if=/dev/zero of='\(path)/other' bs=1M count=\(filledMegabytes) 2>&1")
        guard filler.status == 0 else { throw MountError(description: "cannot fill it: \(filler.out)") }
        return system
    }

    deinit { _ = try? ChildProcess.shell("umount -l '\(path)'") }
}
