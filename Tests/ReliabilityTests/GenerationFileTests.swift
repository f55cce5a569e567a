import Foundation
import Testing
import TestProcess

extension Reliability {
    /// The `generation` file and the files of a new generation, as other members of the group
    /// meet them (docs/Capacity.md, "Index generations"; docs/Reliability.md, "Hostile neighbours").
    @Suite struct GenerationFile {
        /// The published generation, read from the file as any process reads it.
        static func published(_ cache: String) -> UInt64? {
            guard let data = FileManager.default.contents(atPath: cache + "/generation"), data.count == 16 else {
                return nil
            }
            return data.suffix(8).reversed().reduce(0) { $0 << 8 | UInt64($1) }
        }

        @Test("a new generation's lock file is 0660 whatever the compactor's umask, before anyone else opens it")
        func newGenerationLockFileMode() throws {
            let scratch = Scratch()
            let warm = try Child.run(["rel-openclose", scratch.cache, "3"])
            try #require(warm.status == 0, "\(warm.err)")
            // The rewriter dies right after the copy of a new generation, before publishing it:
            // that generation's files are as the compactor made them, opened by no one since
            // (a process that follows a generation would set the mode on the way).
            let rewriter = try Child(
                program: "/bin/sh",
                [
                    "-c", "umask 077; exec \"$0\" \"$@\"", Child.worker, "rel-rewriter", scratch.cache, "50", "1",
                    "copied",
                ])
            let ended = rewriter.finish()
            #expect(ended.status == 77, "the rewriter should die at its kill point: \(ended)")
            let generations = try FileManager.default.contentsOfDirectory(atPath: scratch.cache).compactMap {
                name -> (Int, String)? in
                guard name.hasPrefix("index.g"), name.hasSuffix(".lmdb-lock") else { return nil }
                return Int(name.dropFirst(7).prefix { $0.isNumber }).map { ($0, name) }
            }
            let unpublished = try #require(generations.max { $0.0 < $1.0 }, "no generation was written")
            var st = stat()
            #expect(lstat(scratch.cache + "/" + unpublished.1, &st) == 0)
            #expect(st.st_mode & 0o777 == 0o660, "\(unpublished.1) is \(String(st.st_mode & 0o777, radix: 8))")
        }

        @Test("an unreadable generation file is an error, never a new layout over a live directory")
        func unreadableGenerationIsNotMissing() throws {
            guard geteuid() == 0 else {
                print("skipped: needs root to run a process as another uid (setpriv)")
                return
            }
            try #require(try Child.shell("command -v setpriv").status == 0, "setpriv missing")
            let scratch = Scratch()
            let gid = 47_200, uid = 47_201
            #expect(chmod(scratch.root, 0o755) == 0)
            let warm = try Child.run(["rel-openclose", scratch.cache, "3"])
            try #require(warm.status == 0, "\(warm.err)")
            // Generation 1, so that a new layout (generation 0) would be visible.
            let rewriter = try Child(["rel-rewriter", scratch.cache, "1000", "1", "none"])
            #expect(rewriter.waitForLine("REWRITTEN run=1"))
            rewriter.killed()
            #expect(Self.published(scratch.cache) == 1)
            #expect(
                try Child.shell("chgrp -R \(gid) '\(scratch.cache)' && chmod -R g+rwX '\(scratch.cache)'").status == 0)
            #expect(chmod(scratch.cache + "/generation", 0o000) == 0)
            var before = stat()
            #expect(lstat(scratch.cache + "/generation", &before) == 0)

            let other = try Child(
                program: "/usr/bin/setpriv",
                [
                    "--reuid=\(uid)", "--regid=\(gid)", "--clear-groups", "--", Child.worker, "rel-openclose",
                    scratch.cache, "1",
                ]
            ).finish()
            #expect(other.status == 2 && other.err.contains("permissionDenied"), "\(other)")
            var after = stat()
            #expect(lstat(scratch.cache + "/generation", &after) == 0)
            #expect(after.st_ino == before.st_ino, "the generation file was replaced")
            #expect(chmod(scratch.cache + "/generation", 0o660) == 0)
            #expect(Self.published(scratch.cache) == 1, "the published generation changed")
        }

        @Test(
            "in a pid namespace of its own, where /proc/locks hides other processes' locks, index.lmdb is not rewritten"
        )
        func rewriteRefusedWhereEarlierReleasesCannotBeSeen() throws {
            guard geteuid() == 0 else {
                print("skipped: needs root for a pid namespace (unshare -p)")
                return
            }
            let scratch = Scratch()
            let warm = try Child.run(["rel-openclose", scratch.cache, "3"])
            try #require(warm.status == 0, "\(warm.err)")
            let earlier = try earlierReleaseLookalike(scratch.cache)
            defer { earlier.killed() }
            // Seen from the same namespace, the rewrite names it and waits for it (as before).
            let seen = try Child.run(["rel-rewriter", scratch.cache, "1000", "1", "none"])
            #expect(seen.err.contains("of an earlier release uses index.lmdb"), "\(seen)")
            // From a namespace of its own the lock is not listed at all: refused all the same.
            let contained = try Child.shell(
                "unshare -p -f --mount-proc \(Child.worker) rel-rewriter '\(scratch.cache)' 1000 1 none")
            #expect(!contained.out.contains("REWRITTEN"), "rewritten from a pid namespace: \(contained)")
            #expect(contained.err.contains("busy") && contained.err.contains("pid namespace"), "\(contained)")
            #expect(FileManager.default.fileExists(atPath: scratch.cache + "/index.lmdb"))
        }

        @Test("a damaged generation file is repaired in place at the next open, to the newest index file")
        func damagedGenerationIsRepaired() throws {
            let scratch = Scratch()
            let warm = try Child.run(["rel-openclose", scratch.cache, "3"])
            try #require(warm.status == 0, "\(warm.err)")
            let rewriter = try Child(["rel-rewriter", scratch.cache, "1000", "1", "none"])
            #expect(rewriter.waitForLine("REWRITTEN run=1"))
            rewriter.killed()
            var before = stat()
            #expect(lstat(scratch.cache + "/generation", &before) == 0)
            #expect(truncate(scratch.cache + "/generation", 3) == 0)
            let reopened = try Child.run(["rel-openclose", scratch.cache, "2"])
            #expect(reopened.status == 0, "\(reopened.err)")
            var after = stat()
            #expect(lstat(scratch.cache + "/generation", &after) == 0)
            #expect(after.st_ino == before.st_ino, "repaired in place: running processes read this inode")
            #expect(Self.published(scratch.cache) == 1)
        }
    }
}
