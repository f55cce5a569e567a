import Foundation
import SharedURLCacheStore
import Testing
import TestProcess

extension Reliability {
    /// docs/Reliability.md T5 (disk full) and T9 (two users in one group).
    @Suite struct Environment {
        /// Runs a CacheWorker command in a private mount namespace with a fresh 16 MiB tmpfs: the
        /// file system exists only for the worker and dies with it. `arguments` get the mount
        /// point prefixed to each one that starts with "/".
        static func onSmallTmpfs(_ command: String, _ arguments: [String]) throws -> Child.Outcome {
            let scratch = Scratch()
            let mount = scratch.root + "/mnt"
            try FileManager.default.createDirectory(atPath: mount, withIntermediateDirectories: true)
            let unshare = geteuid() == 0 ? "unshare -m" : "unshare -rm"
            let probe = try Child.shell("\(unshare) true")
            try #require(probe.status == 0, "no mount namespace available here: \(probe.err)")
            let args = arguments.map { $0.hasPrefix("/") ? mount + $0 : $0 }.joined(separator: " ")
            return try Child.shell(
                "\(unshare) sh -c 'mount -t tmpfs -o size=16m tmpfs \(mount) && exec \(Child.worker) \(command) \(args)'"
            )
        }

        @Test(
            "T5 a full 16 MiB tmpfs is a capacity event: stores evict to make room, compaction works, nothing wrong is read"
        )
        func diskFull() throws {
            let result = try Self.onSmallTmpfs("rel-diskfull", ["/cache", "/filler"])
            #expect(result.status == 0, "\(result.out)\n\(result.err)")
            #expect(
                result.out.contains("A full: 160 stores ok") && result.out.contains("B diskFull")
                    && result.out.contains("D ok"))
            print("T5: " + result.out.split(separator: "\n").joined(separator: "; "))
        }

        @Test("T5 compaction on a 16 MiB tmpfs the cache's bodies filled: succeeds, and stores work after it")
        func compactionOnAFullFileSystem() throws {
            let result = try Self.onSmallTmpfs("rel-fullcompact", ["/cache", "/filler"])
            #expect(result.status == 0, "\(result.out)\n\(result.err)")
            #expect(result.out.contains("COMPACTED on a full file system"))
            print("T5 compaction: " + result.out.trimmingCharacters(in: .whitespacesAndNewlines))
        }

        @Test("T5 a free-space floor on a 16 MiB tmpfs: stores evict first and never leave less than the floor free")
        func freeSpaceFloor() throws {
            let result = try Self.onSmallTmpfs("rel-freefloor", ["/cache", "6291456"])
            #expect(result.status == 0, "\(result.out)\n\(result.err)")
            #expect(result.out.contains("FLOOR ok"))
            print("T5 floor: " + result.out.trimmingCharacters(in: .whitespacesAndNewlines))
        }

        @Test("T5 RLIMIT_FSIZE with SIGXFSZ ignored: .diskFull (EFBIG), nothing lost, stores resume when lifted")
        func fileSizeLimit() throws {
            let scratch = Scratch()
            let result = try Child.run(["rel-fsize", scratch.cache])
            #expect(result.status == 0, "\(result.out)\n\(result.err)")
            #expect(result.out.contains("FSIZE diskFull=yes"))
            print("T5 RLIMIT_FSIZE: " + result.out.trimmingCharacters(in: .whitespacesAndNewlines))
        }

        @Test("T9 two uids in one gid with umask 077 and 022, plus a compactor uid: no EACCES, modes as intended")
        func twoUsersOneGroup() throws {
            guard geteuid() == 0 else {
                print("T9 skipped: needs root to switch uids (setpriv)")
                return
            }
            let setprivProbe = try Child.shell("command -v setpriv")
            try #require(setprivProbe.status == 0, "setpriv missing")
            let scratch = Scratch()
            let gid = 47100, uidA = 47101, uidB = 47102, uidC = 47103
            let shared = scratch.root + "/shared"
            // The parent: traversable, writable by the group only.
            #expect(chmod(scratch.root, 0o755) == 0)
            #expect(mkdir(shared, 0o770) == 0 && chown(shared, 0, gid_t(gid)) == 0 && chmod(shared, 0o2770) == 0)
            let dir = shared + "/cache"
            func run(_ uid: Int, umask: String, _ args: [String]) throws -> Child {
                try Child(
                    program: "/usr/bin/setpriv",
                    [
                        "--reuid=\(uid)", "--regid=\(gid)", "--clear-groups", "--",
                        "/bin/sh", "-c", "umask \(umask); HOME=/tmp exec \"$0\" \"$@\"", Child.worker,
                    ] + args)
            }
            // Alternating, then together, then with the compactor as a third uid.
            let seed = runSeed("T9")
            var statuses: [String] = []
            for (i, (uid, mask)) in [(uidA, "077"), (uidB, "022"), (uidA, "077"), (uidB, "022")].enumerated() {
                let r = try run(
                    uid, umask: mask, ["mixed", dir, String(seed &+ UInt64(i)), "1.5", "200", String(i), "65536"]
                ).finish()
                #expect(r.status == 0, "uid \(uid) umask \(mask): \(r.err)")
                statuses.append("\(uid)/\(mask)=\(r.status)")
            }
            let together = [
                try run(uidA, umask: "077", ["mixed", dir, String(seed &+ 10), "3", "200", "4", "65536"]),
                try run(uidB, umask: "022", ["mixed", dir, String(seed &+ 11), "3", "200", "5", "65536"]),
            ]
            let compactor = try run(uidC, umask: "077", ["rel-compactor", dir, "200", "5000", "200000"])
            for child in together {
                let r = child.finish()
                #expect(r.status == 0, "\(r.err)")
                #expect(!r.err.contains("permissionDenied"))
            }
            let c = compactor.killed()
            #expect(c.out.contains("COMPACTED"), "the compactor uid ran: \(c.err)")
            #expect(!c.err.contains("permissionDenied"), "\(c.err)")
            // Every file and directory: group gid, group-writable as intended, nothing for others.
            var checked = 0, bad: [String] = []
            for path in [""] + walk(dir) {
                var st = stat()
                guard lstat(dir + "/" + path, &st) == 0 else { continue } // removed meanwhile
                checked += 1
                let mode = st.st_mode & 0o7777
                let isDir = st.st_mode & S_IFMT == S_IFDIR
                if st.st_gid != gid_t(gid) { bad.append("\(path) gid \(st.st_gid)") }
                if mode & 0o007 != 0 { bad.append("\(path) world bits \(String(mode, radix: 8))") }
                if isDir && mode != 0o2770 { bad.append("\(path) dir mode \(String(mode, radix: 8))") }
                if !isDir && mode != 0o660 { bad.append("\(path) file mode \(String(mode, radix: 8))") }
            }
            #expect(bad.isEmpty, "\(bad.prefix(20))")
            print(
                "T9: uids=\(uidA),\(uidB),\(uidC) gid=\(gid) runs=\(statuses) compactions=\(c.out.split(separator: "\n").count) pathsChecked=\(checked) badModes=\(bad.count)"
            )
        }
    }
}
