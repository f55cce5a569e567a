import Foundation
import SharedURLCacheStore
import Testing
import TestProcess
import SeededRandom

/// Every reliability suite nests in this one, so they run one at a time: they spawn real
/// processes and time kills, and two of them at once on a 2-core runner would only measure the
/// runner. Long variants run with SUC_SOAK=1 (see tools/soak): 1,000 crash-loop rounds take
/// about 25 minutes here, so soak runs get two hours.
@Suite(.blockingWaits, .serialized, .timeLimit(soak ? .minutes(120) : .minutes(10)))
enum Reliability {}

/// Whether the long (soak) variants are asked for.
let soak = ProcessInfo.processInfo.environment["SUC_SOAK"] == "1"

/// Stretches the kill delays of the crash loops: sanitizer builds start and run processes several
/// times slower, and a kill after 5–200 ms would then mostly hit processes still starting up.
/// scripts/sanitize.sh sets SUC_TIME_SCALE.
let timeScale = Double(ProcessInfo.processInfo.environment["SUC_TIME_SCALE"] ?? "") ?? 1

/// The CacheWorker helper, or any program, as a real child process (Tests/TestProcess).
typealias Child = ChildProcess

/// A fresh directory under the temp dir, removed on deinit.
final class Scratch {
    private let directory = TemporaryDirectory(prefix: "suc-rel")
    var root: String { directory.root }
    var cache: String { root + "/cache" }
}

/// The pids in the index's reader table (`mdb_stat -r`), or nil when mdb_stat is missing.
/// A listed pid that is not alive is a stale slot nobody reclaimed.
func readerTablePids(_ cache: String) -> [Int32]? {
    // mdb_stat exits 1 after printing only the reader table; the header says it ran.
    guard let result = try? Child.shell("command -v mdb_stat >/dev/null && mdb_stat -n -r '\(cache)/index.lmdb'"),
        result.out.contains("Reader Table Status")
    else { return nil }
    // Lines look like "    1234 7f00deadbeef 42" under a "    pid     thread     txnid" header.
    return result.out.split(separator: "\n").compactMap { line in
        let parts = line.split(separator: " ")
        guard parts.count == 3, let pid = Int32(parts[0]) else { return nil }
        return pid
    }
}

typealias Seeded = SplitMix64

/// The seed of a run: SUC_SEED to replay one, otherwise random; always printed.
func runSeed(_ name: String) -> UInt64 {
    let seed =
        ProcessInfo.processInfo.environment["SUC_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...1_000_000_000)
    print("\(name) seed \(seed) (replay: SUC_SEED=\(seed))")
    return seed
}

/// Files under `dir` (recursively, not following symlinks), relative paths.
func walk(_ dir: String) -> [String] {
    FileManager.default.enumerator(atPath: dir).map { $0.compactMap { $0 as? String } } ?? []
}

/// A process that looks, in /proc/locks, exactly like one of an earlier release attached to
/// `cache`: it holds LMDB's lock on index.lmdb-lock but not the generation file's flock. Kill it
/// when done (it sleeps `seconds`).
func earlierReleaseLookalike(_ cache: String, seconds: Int = 60) throws -> Child {
    let holder = try Child(
        program: "/usr/bin/env",
        [
            "python3", "-c",
            "import fcntl,os,sys,time\nfd=os.open(sys.argv[1],os.O_RDWR)\n"
                + "fcntl.lockf(fd,fcntl.LOCK_SH,1,0)\nprint('HELD',flush=True)\ntime.sleep(\(seconds))",
            cache + "/index.lmdb-lock",
        ])
    #expect(holder.waitForLine("HELD"))
    return holder
}
