import Foundation
import Synchronization

/// Test support: a real child process (the CacheWorker helper, urlcache, or any program) with
/// stdin, stdout and stderr pipes. Every multi-process test target spawns children through this
/// one type, so the two ways a child can hang a whole test run are handled once:
/// - stdout and stderr are drained at the same time, so a child that fills one pipe while the
///   parent waits on the other never blocks;
/// - `finish` kills a child that outlives its deadline, so a stuck child fails its test instead
///   of stalling the run until CI's own limit.
public final class ChildProcess: @unchecked Sendable {
    public typealias Outcome = (status: Int32, out: String, err: String)

    /// How long `finish` waits before SIGKILL: 5 minutes, or an hour for soak runs (SUC_SOAK=1).
    public static let defaultDeadline: TimeInterval =
        ProcessInfo.processInfo.environment["SUC_SOAK"] == "1" ? 3600 : 300

    /// The child's process id.
    public let pid: pid_t
    /// The parent's ends of the child's stdin, stdout and stderr pipes.
    private var input: Int32
    private let output: Int32
    private let errors: Int32
    /// The raw wait status once the child has been reaped.
    private let reaped = Mutex<Int32?>(nil)
    /// Stdout already read by `waitForLine`, handed back by `finish`.
    private var buffered = ""

    /// An executable built next to the test bundle (`.build*/<config>/NAME`): CacheWorker, urlcache.
    public static func builtExecutable(_ name: String) -> URL {
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        while dir.path.contains(".xctest") { dir = dir.deletingLastPathComponent() }
        let candidate = dir.appendingPathComponent(name)
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        return Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent(name)
    }

    /// The CacheWorker helper's path.
    public static var worker: String { builtExecutable("CacheWorker").path }

    /// Starts `program` with `arguments`, with glibc's `posix_spawn`, not Foundation's `Process`:
    /// in a parallel run on two cores, `Process.run` crashed while starting a child, and the
    /// backtrace of the crash held every other test that started a process for five minutes.
    /// The child gets the test's environment, default signal handling (the tests ignore
    /// SIGPIPE), no signal mask and no file descriptor of the test process but its three pipes.
    public init(_ program: URL, _ arguments: [String]) throws {
        var pipes: [[Int32]] = []
        for _ in 0..<3 {
            var ends: [Int32] = [-1, -1]
            // Close-on-exec at once (Swift's Glibc has no pipe2); the child's closefrom covers
            // another thread spawning in between.
            guard pipe(&ends) == 0, fcntl(ends[0], F_SETFD, FD_CLOEXEC) == 0, fcntl(ends[1], F_SETFD, FD_CLOEXEC) == 0
            else {
                let error = errno
                for pair in pipes { pair.forEach { _ = close($0) } }
                throw POSIXError(POSIXErrorCode(rawValue: error) ?? .EIO)
            }
            pipes.append(ends)
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pipes[0][0], 0)
        posix_spawn_file_actions_adddup2(&actions, pipes[1][1], 1)
        posix_spawn_file_actions_adddup2(&actions, pipes[2][1], 2)
        Self.closeFrom(&actions, 3)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t(), empty = sigset_t()
        sigfillset(&defaults)
        sigemptyset(&empty)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        let argv = ([program.path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var child: pid_t = 0
        let rc = posix_spawn(&child, program.path, &actions, &attributes, argv, environ)
        // The child's ends are its own now (or nobody's, when the spawn failed).
        for fd in [pipes[0][0], pipes[1][1], pipes[2][1]] { close(fd) }
        guard rc == 0 else {
            for fd in [pipes[0][1], pipes[1][0], pipes[2][0]] { close(fd) }
            throw POSIXError(POSIXErrorCode(rawValue: rc) ?? .EIO)
        }
        pid = child
        input = pipes[0][1]
        output = pipes[1][0]
        errors = pipes[2][0]
    }

    /// Starts the program at `program` (a path) with `arguments`.
    public convenience init(program: String, _ arguments: [String]) throws {
        try self.init(URL(fileURLWithPath: program), arguments)
    }

    /// Starts CacheWorker with `arguments`.
    public convenience init(_ arguments: [String]) throws {
        try self.init(ChildProcess.builtExecutable("CacheWorker"), arguments)
    }

    deinit {
        for fd in [input, output, errors] where fd >= 0 { close(fd) }
        _ = waitStatus(blocking: false) // no zombie left when a test drops a finished child
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34+), which Swift's Glibc module
    /// does not declare: without it the child would inherit the test process's descriptors
    /// that lack close-on-exec.
    private static func closeFrom(_ actions: inout posix_spawn_file_actions_t, _ lowest: Int32) {
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np")
        else { return }
        _ = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, lowest)
    }

    /// The raw wait status once the child has ended (reaping it then), nil while it runs.
    @discardableResult
    private func waitStatus(blocking: Bool) -> Int32? {
        reaped.withLock { reaped in
            if let reaped { return reaped }
            var status: Int32 = 0
            while true {
                let rc = waitpid(pid, &status, blocking ? 0 : WNOHANG)
                if rc == pid { break }
                if rc < 0 && errno == EINTR { continue }
                return nil // still running (or not ours to wait for)
            }
            reaped = status
            return status
        }
    }

    /// Whether the child is still running.
    public var isRunning: Bool { waitStatus(blocking: false) == nil }

    /// Whether the child ended by a signal (a kill -9, a crash), once it has ended.
    public var wasSignalled: Bool {
        guard let status = waitStatus(blocking: false) else { return false }
        return status & 0x7F != 0 && status & 0x7F != 0x7F
    }

    public func kill9() { kill(pid, SIGKILL) }

    /// Writes one line to the child's stdin.
    public func send(_ line: String) {
        var bytes = Array((line + "\n").utf8)[...]
        while !bytes.isEmpty {
            let n = bytes.withUnsafeBytes { write(input, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return } // the child is gone
            bytes = bytes.dropFirst(n)
        }
    }

    /// Reads stdout until a line equal to `marker` (false at end of file).
    public func waitForLine(_ marker: String) -> Bool {
        waitForLine { $0 == marker }
    }

    /// Reads stdout until a whole line (one ended by a newline) satisfies `matches` (false at end
    /// of file). What was read stays in the output `finish` returns.
    public func waitForLine(where matches: (Substring) -> Bool) -> Bool {
        waitForLines { $0.contains(where: matches) }
    }

    /// Reads stdout until its whole lines so far satisfy `satisfied` (false at end of file). What
    /// was read stays in the output `finish` returns.
    public func waitForLines(where satisfied: (ArraySlice<Substring>) -> Bool) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let wholeLines = buffered.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            if satisfied(wholeLines) { return true }
            let n = read(output, &buffer, buffer.count)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            buffered += String(decoding: buffer[0..<n], as: UTF8.self)
        }
    }

    /// Closes the child's stdin, drains stdout and stderr together, waits for the exit. A child
    /// still running after `deadline` seconds is killed (its status then says signal 9), and
    /// reading stops there too: a grandchild that inherited the pipes (swift-backtrace after a
    /// crash, a sanitizer's symbolizer) cannot keep the test waiting for an end of file.
    /// The status is the exit code, or the signal's number when a signal ended the child.
    public func finish(deadline: TimeInterval = ChildProcess.defaultDeadline) -> Outcome {
        if input >= 0 {
            close(input)
            input = -1
        }
        let end = Date().addingTimeInterval(deadline)
        var out = Data(), err = Data()
        var fds = [
            pollfd(fd: output, events: Int16(POLLIN), revents: 0),
            pollfd(fd: errors, events: Int16(POLLIN), revents: 0),
        ]
        var buffer = [UInt8](repeating: 0, count: 65536)
        var killed = false
        var exitedAt: Date?
        while fds.contains(where: { $0.fd >= 0 }) {
            // The child is gone but something it started still holds the pipes: what the child
            // wrote arrives within moments, so stop after a short grace.
            if exitedAt == nil && !isRunning { exitedAt = Date() }
            if let exitedAt, Date().timeIntervalSince(exitedAt) > 3 { break }
            let left = end.timeIntervalSinceNow
            if left <= 0 {
                if !killed {
                    FileHandle.standardError.write(
                        Data("ChildProcess: pid \(pid) outlived \(Int(deadline)) s; killed\n".utf8))
                    kill9()
                    killed = true
                }
                break
            }
            let ready = poll(&fds, nfds_t(fds.count), Int32(min(left, 1) * 1000))
            if ready < 0 && errno != EINTR { break }
            for i in fds.indices where fds[i].fd >= 0 && fds[i].revents != 0 {
                let n = read(fds[i].fd, &buffer, buffer.count)
                if n > 0 {
                    if i == 0 { out.append(contentsOf: buffer[0..<n]) } else { err.append(contentsOf: buffer[0..<n]) }
                } else if n == 0 || errno != EINTR {
                    fds[i].fd = -1 // end of file (or a broken pipe): this stream is done
                }
            }
        }
        let status = waitStatus(blocking: true) ?? 0
        let signal = status & 0x7F
        return (
            signal == 0 ? (status >> 8) & 0xFF : signal, buffered + String(decoding: out, as: UTF8.self),
            String(decoding: err, as: UTF8.self)
        )
    }

    /// Runs CacheWorker with `arguments` to completion.
    public static func run(_ arguments: [String]) throws -> Outcome {
        try ChildProcess(arguments).finish()
    }

    /// Runs `program` with `arguments` to completion.
    public static func run(_ program: URL, _ arguments: [String]) throws -> Outcome {
        try ChildProcess(program, arguments).finish()
    }

    /// Runs a shell command line (for unshare, setpriv, mknod, mdb_dump…).
    public static func shell(_ command: String) throws -> Outcome {
        try ChildProcess(program: "/bin/sh", ["-c", command]).finish()
    }
}

/// Test support: a fresh, uniquely named directory under the temp dir (mkdtemp), removed with
/// everything in it when the test drops it.
public final class TemporaryDirectory: Sendable {
    public let root: String

    public init(prefix: String = "suc") {
        var template = Array((NSTemporaryDirectory() + "/\(prefix)-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "mkdtemp failed: \(errno)")
        root = String(decoding: template.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }
}
