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
