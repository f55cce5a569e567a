import Foundation

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

    public let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let errors = Pipe()
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

    /// Starts `program` with `arguments`.
    public init(_ program: URL, _ arguments: [String]) throws {
        process.executableURL = program
        process.arguments = arguments
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
    }

    /// Starts the program at `program` (a path) with `arguments`.
    public convenience init(program: String, _ arguments: [String]) throws {
        try self.init(URL(fileURLWithPath: program), arguments)
    }

    /// Starts CacheWorker with `arguments`.
    public convenience init(_ arguments: [String]) throws {
        try self.init(ChildProcess.builtExecutable("CacheWorker"), arguments)
    }

    public var pid: Int32 { process.processIdentifier }

    public func kill9() { kill(process.processIdentifier, SIGKILL) }

    /// Writes one line to the child's stdin.
    public func send(_ line: String) { input.fileHandleForWriting.write(Data((line + "\n").utf8)) }

    /// Reads stdout until a line equal to `marker` (false at end of file).
    public func waitForLine(_ marker: String) -> Bool {
        while true {
            if buffered.split(separator: "\n").contains(where: { $0 == marker }) { return true }
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { return false }
            buffered += String(decoding: chunk, as: UTF8.self)
        }
    }

    /// Closes the child's stdin, drains stdout and stderr together, waits for the exit. A child
    /// still running after `deadline` seconds is killed (its status then says signal 9), and
    /// reading stops there too: a grandchild that inherited the pipes (swift-backtrace after a
    /// crash, a sanitizer's symbolizer) cannot keep the test waiting for an end of file.
    public func finish(deadline: TimeInterval = ChildProcess.defaultDeadline) -> Outcome {
        try? input.fileHandleForWriting.close()
        let end = Date().addingTimeInterval(deadline)
        var out = Data(), err = Data()
        var fds = [
            pollfd(fd: output.fileHandleForReading.fileDescriptor, events: Int16(POLLIN), revents: 0),
            pollfd(fd: errors.fileHandleForReading.fileDescriptor, events: Int16(POLLIN), revents: 0),
        ]
        var buffer = [UInt8](repeating: 0, count: 65536)
        var killed = false
        var exitedAt: Date?
        while fds.contains(where: { $0.fd >= 0 }) {
            // The child is gone but something it started still holds the pipes: what the child
            // wrote arrives within moments, so stop after a short grace.
            if exitedAt == nil && !process.isRunning { exitedAt = Date() }
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
        process.waitUntilExit()
        return (
            process.terminationStatus, buffered + String(decoding: out, as: UTF8.self),
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
