import Foundation
import SharedURLCacheStore
import Synchronization
import Testing
import TestProcess

/// Set once by another thread.
final class OpenedFlag: Sendable {
    private let value = Atomic(false)
    var isSet: Bool { value.load(ordering: .relaxed) }
    func set() { value.store(true, ordering: .relaxed) }
}

/// One handle per directory per process, and opening one directory never waits for another.
@Suite(.blockingWaits, .timeLimit(.minutes(2)))
struct OpeningTests {
    /// Holds an exclusive `flock` on `path` in a real second process (util-linux `flock`) until
    /// it is killed; returns once the lock is taken.
    func holdLock(on path: String) throws -> ChildProcess {
        let holder = try ChildProcess(program: "/usr/bin/flock", ["--exclusive", "--no-fork", path, "sleep", "60"])
        let fd = open(path, O_RDONLY | O_DIRECTORY)
        defer { close(fd) }
        // Taken once this process can no longer take it.
        _ = waitUntil {
            guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { return true }
            flock(fd, LOCK_UN)
            return false
        }
        return holder
    }

    @Test("a directory whose first open waits for another process does not hold up opening another")
    func slowDirectoryDoesNotBlockOthers() async throws {
        let slow = TestDirectory()
        let other = TestDirectory()
        try FileManager.default.createDirectory(atPath: slow.cache, withIntermediateDirectories: false)
        let holder = try holdLock(on: slow.cache) // a new directory is created under this lock
        let slowOpened = OpenedFlag()
        let slowPath = slow.cache
        let waiting = Thread {
            if (try? CacheStore(directory: slowPath)) != nil { slowOpened.set() }
        }
        waiting.start()
        // Nothing says the open has reached its wait for the flock: 300 ms is the window in which
        // it must not complete (kept as a sleep; the check that follows is of nothing happening).
        try await Task.sleep(for: .milliseconds(300))
        #expect(!slowOpened.isSet, "the open waits while the other process holds the lock")
        let started = ContinuousClock.now
        let store = try CacheStore(directory: other.cache)
        try store.store(RecordDescriptor(key: bytes("k")), body: bytes("v"))
        // An open that waited for the other directory's lock would finish only after the holder's
        // 60 s (and after the slow open): 30 s leaves a loaded machine its slow fsyncs.
        #expect(ContinuousClock.now - started < .seconds(30), "opening another directory did not wait")
        #expect(!slowOpened.isSet)
        _ = try await runBlocking { holder.killed() }
        #expect(await eventually { slowOpened.isSet }, "the waiting open completes once the lock is released")
    }

    @Test("threads opening one directory at once all get a working handle (one per process underneath)")
    func concurrentOpensShareOneHandle() async throws {
        let dir = TestDirectory()
        let path = dir.cache
        let stores = try await withThrowingTaskGroup(of: CacheStore.self) { group in
            for _ in 0..<8 { group.addTask { try CacheStore(directory: path) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        try stores[0].store(RecordDescriptor(key: bytes("shared")), body: bytes("one"))
        for store in stores { #expect(try store.record(for: bytes("shared"), includeBody: true)?.body == bytes("one")) }
        #expect(try stores[0].verify().countersMatch)
    }
}

/// A handle closed on one thread while another thread opens the same directory: the close must
/// be over (its index environment closed) before the open makes a new one. Two environments on
/// one index file in one process break LMDB's locking: closing the old one clears every reader
/// slot of the process (the new handle's too) and drops the process's locks on the lock file, so
/// other processes take this one for dead and hand its reader slots to others.
@Suite(.blockingWaits, .timeLimit(.minutes(3)))
struct CloseWhileOpeningTests {
    /// Whether this process holds a POSIX (LMDB) lock on the file with inode `inode`, as
    /// /proc/locks lists it.
    func holdsLMDBLock(onInode inode: UInt64) throws -> Bool {
        let listing = try String(contentsOfFile: "/proc/locks", encoding: .utf8)
        let me = "\(getpid())"
        return listing.split(separator: "\n").contains { line in
            let fields = line.split(separator: " ")
            guard fields.count >= 6, fields[1] == "POSIX", fields[4] == me else { return false }
            return fields[5].split(separator: ":").last.flatMap { UInt64($0) } == inode
        }
    }

    @Test("handles closed and opened on two threads at once: every read succeeds and every handle keeps its locks")
    func closeRacesOpen() throws {
        let dir = TestDirectory()
        let path = dir.cache
        var configuration = CacheStoreConfiguration()
        configuration.touchInterval = .milliseconds(1) // a close then has touches to commit: it takes a while
        do {
            let store = try CacheStore(directory: path, configuration: configuration)
            try store.store(RecordDescriptor(key: bytes("k")), body: bytes("v"))
        }
        var lockFile = stat()
        #expect(stat(path + "/index.lmdb-lock", &lockFile) == 0)
        let inode = UInt64(lockFile.st_ino)
        let failures = Mutex<[String]>([])
        let slowClose = configuration
        onOwnThreads(2) { _ in
            for _ in 0..<100 {
                do {
                    let store = try CacheStore(directory: path, configuration: slowClose)
                    for _ in 0..<10 {
                        if try store.record(for: bytes("k"), includeBody: true)?.body != bytes("v") {
                            failures.withLock { $0.append("miss") }
                        }
                        usleep(1000)
                    }
                    // Open and read: LMDB's locks on the lock file say this process is alive.
                    if try !holdsLMDBLock(onInode: inode) { failures.withLock { $0.append("no lock held") } }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        let seen = failures.withLock { $0 }
        #expect(seen.isEmpty, "\(seen.count) failures, the first: \(seen.prefix(3))")
        let store = try CacheStore(directory: path)
        #expect(try store.record(for: bytes("k"), includeBody: true)?.body == bytes("v"))
        #expect(try store.verify().countersMatch)
    }
}
