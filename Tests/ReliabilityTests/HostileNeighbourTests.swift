import Foundation
import Testing
import TestProcess

extension Reliability {
    /// docs/Reliability.md, "Hostile neighbours": another member of the cache's group damages one
    /// file of the layout while two real client processes store, read and lease. No client ever
    /// gets a wrong body or hangs; damage to a file of our own format (`generation`, `leases`, `handoff`)
    /// never ends a client by a signal (a signal is tolerated only for the LMDB files, which a
    /// live process maps); and a client started afterwards, as a supervisor would restart one,
    /// works again or is refused with a clear error.
    @Suite struct HostileNeighbours {
        enum Damage: String, CaseIterable, CustomStringConvertible {
            case truncate, garbage, symlinkToDevZero, lockHeld
            var description: String { rawValue }
        }

        static let files = ["generation", "leases", "handoff", "index.lmdb", "index.lmdb-lock"]
        static let seconds = soak ? 20.0 : 2.0

        /// What a finished client said: its summary line, or why there is none.
        struct Run {
            let outcome: ChildProcess.Outcome
            let elapsed: TimeInterval
            var summary: Substring? { outcome.out.split(separator: "\n").last { $0.hasPrefix("NEIGHBOUR ") } }
            var wrongBody: Bool { outcome.err.contains("WRONG BODY") }
            var stores: Int { Int(field("stores") ?? "") ?? 0 }
            func field(_ name: String) -> Substring? {
                summary?.split(separator: " ").first { $0.hasPrefix(name + "=") }?.dropFirst(name.count + 1)
            }
        }

        static func client(_ cache: String, seconds: Double, seed: Int) throws -> (ChildProcess, Date) {
            (try ChildProcess(["rel-neighbour", cache, String(seconds), String(seed)]), Date())
        }

        static func finish(_ started: (ChildProcess, Date), seconds: Double) -> Run {
            // A bound well past the client's own deadline: a client still running then hangs.
            let outcome = started.0.finish(deadline: seconds + 20)
            return Run(outcome: outcome, elapsed: Date().timeIntervalSince(started.1))
        }

        /// Damages `path` as a group member could; returns the process holding a lock, if any.
        static func apply(_ damage: Damage, to path: String) throws -> ChildProcess? {
            switch damage {
            case .truncate:
                #expect(truncate(path, 0) == 0 || errno == ENOENT)
            case .garbage:
                let fd = open(path, O_WRONLY | O_CREAT, 0o660)
                #expect(fd >= 0)
                var rng = Seeded(seed: 7)
                let bytes = (0..<512).flatMap { _ in withUnsafeBytes(of: rng.next()) { Array($0) } }
                _ = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, 4096, 0) }
                close(fd)
            case .symlinkToDevZero:
                // Made beside it and renamed over it: a live client creating the file between an
                // unlink and a symlink would make the symlink fail (EEXIST).
                let beside = path + ".symlink"
                unlink(beside)
                #expect(symlink("/dev/zero", beside) == 0)
                #expect(rename(beside, path) == 0)
            case .lockHeld:
                // Both kinds of lock, on the whole file, for longer than any client runs.
                let holder = try ChildProcess(
                    program: "/usr/bin/env",
                    [
                        "python3", "-c",
                        "import fcntl,os,sys,time\nfd=os.open(sys.argv[1],os.O_RDWR|os.O_CREAT,0o660)\n"
                            + "fcntl.flock(fd,fcntl.LOCK_EX)\nfcntl.lockf(fd,fcntl.LOCK_EX)\n"
                            + "print('HELD',flush=True)\ntime.sleep(120)",
                        path,
                    ])
                #expect(holder.waitForLine("HELD"))
                return holder
            }
            return nil
        }

        @Test(
            "a group member damages one file of the layout under live clients: no wrong body, no hang, a restart comes back",
            arguments: files, Damage.allCases)
        func damageUnderLiveClients(file: String, damage: Damage) throws {
            let scratch = Scratch()
            let warm = Self.finish(try Self.client(scratch.cache, seconds: 0.5, seed: 1), seconds: 0.5)
            try #require(warm.summary != nil && warm.stores > 0, "\(warm.outcome)")
            let path = scratch.cache + "/" + file

            let live = try (0..<2).map { try Self.client(scratch.cache, seconds: Self.seconds, seed: 10 + $0) }
            for (client, _) in live { #expect(client.waitForLine("RUNNING"), "a client got going") }
            let holder = try Self.apply(damage, to: path)
            let runs = live.map { Self.finish($0, seconds: Self.seconds) }
            // LMDB keeps its writer mutex in the lock file: a process waiting for it while a
            // neighbour truncates or overwrites that file can wait forever (the dead owner's
            // mutex can no longer be marked), a limit docs/Reliability.md §3.7 states. Those
            // clients are killed at the bound below; the restart must still come back.
            let lmdbLockDamage = file == "index.lmdb-lock" && (damage == .truncate || damage == .garbage)
            for run in runs {
                #expect(!run.wrongBody, "\(file) \(damage): \(run.outcome.err)")
                if lmdbLockDamage && run.elapsed >= Self.seconds + 15 {
                    print("hostile \(file) \(damage): a client hung")
                }
                #expect(lmdbLockDamage || run.elapsed < Self.seconds + 15, "\(file) \(damage): a client hung")
                if file == "generation" || file == "leases" || file == "handoff" {
                    #expect(
                        run.summary != nil,
                        "\(file) \(damage) ended a client: status \(run.outcome.status) \(run.outcome.err)")
                }
            }

            // A restart while the neighbour still holds its locks: each wait is bounded (2 s), an
            // open refused meanwhile says why (.busy), and the client is in business once the
            // neighbour lets go halfway through.
            let restartSeconds = damage == .lockHeld ? Self.seconds + 4 : Self.seconds
            let restarted = try Self.client(scratch.cache, seconds: restartSeconds, seed: 20)
            if let holder {
                // The lock held for half the restarted client's run is the case under test.
                usleep(UInt32(restartSeconds * 500_000))
                holder.killed()
            }
            let restart = Self.finish(restarted, seconds: restartSeconds)
            #expect(!restart.wrongBody, "\(restart.outcome.err)")
            #expect(
                restart.summary != nil,
                "restart after \(file) \(damage): status \(restart.outcome.status) \(restart.outcome.err)")
            #expect(restart.elapsed < restartSeconds + 15, "the restarted client hung")
            if file == "index.lmdb-lock" && damage == .symlinkToDevZero {
                // LMDB's lock file cannot be replaced while live processes may use it: refused, said why.
                #expect(restart.field("errors")?.contains("unsafeDirectory") == true, "\(restart.outcome)")
            } else {
                #expect(
                    restart.stores > 0,
                    "restart after \(file) \(damage): \(restart.summary ?? "") \(restart.outcome.err)")
            }
            print(
                "hostile \(file) \(damage): live=\(runs.map { $0.summary.map(String.init) ?? "status \($0.outcome.status)" }) restart=\(restart.summary ?? "")"
            )
        }
    }
}
