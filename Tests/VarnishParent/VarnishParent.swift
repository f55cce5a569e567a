import Foundation
import LoopbackOrigin
import TestProcess

/// Test support: a real Varnish (Debian's `varnishd`) on 127.0.0.1, a parent cache in front of a
/// loopback origin, as a tier of Varnish servers stands in front of an API for several hosts.
///
/// Its VCL (written per instance) keeps Varnish's built-in rules (`private`, `no-store`,
/// `s-maxage`, `Set-Cookie`), caps every object's ttl at `ttl` seconds with `grace` seconds of
/// grace, answers `PURGE` from loopback, and names itself in `X-Parent: <name>` on every answer,
/// so a test sees which parent a response came through. The manager runs in the foreground
/// (`-F`) with no jail (`-j none`: as root the default jail would run the worker as a user that
/// cannot read the test's private temporary directory), 16 MiB of malloc storage and its work
/// directory in a temporary directory (varnishd compiles the VCL into a shared object there and
/// loads it, so that directory must not be on a `noexec` mount). ``stop()`` (or deinit) kills the
/// manager and its worker and waits until the port refuses connections.
public final class VarnishParent: @unchecked Sendable {
    /// varnishd is missing: CI installs it (tools/install-dependencies); locally, `apt-get install varnish`.
    public struct NotInstalled: Error, CustomStringConvertible {
        public var description: String {
            "varnishd not found (looked in PATH, /usr/sbin, /usr/local/sbin): install Debian's varnish package (tools/install-dependencies does)"
        }
    }

    /// varnishd did not start listening; its log says why.
    public struct DidNotStart: Error, CustomStringConvertible {
        public var log: String
        public var description: String { "varnishd did not start:\n\(log)" }
    }

    /// The name in `X-Parent`.
    public let name: String
    /// The port it listens on.
    public let port: Int
    private let directory = TemporaryDirectory(prefix: "varnish")
    private let manager: ChildProcess
    private var stopped = false

    /// `http://127.0.0.1:<port>`, as a `--parent` option takes it.
    public var url: String { "http://127.0.0.1:\(port)" }

    /// Starts varnishd in front of `127.0.0.1:<originPort>` and waits until it accepts connections.
    /// - Throws: ``NotInstalled``; ``DidNotStart`` (with varnishd's output) after 60 s.
    public init(name: String, originPort: Int, ttl: Int = 30, grace: Int = 5) throws {
        guard let varnishd = Self.varnishd() else { throw NotInstalled() }
        self.name = name
        self.port = LoopbackSocket.freePort()
        let vcl = directory.root + "/parent.vcl"
        try Self.vcl(name: name, originPort: originPort, ttl: ttl, grace: grace)
            .write(toFile: vcl, atomically: true, encoding: .utf8)
        let log = directory.root + "/varnishd.log"
        // `exec`: the shell becomes varnishd, so the pid is the manager's; its output goes to a
        // file, not to a pipe nobody reads while it runs.
        let command = [
            "exec", varnishd, "-F", "-j", "none", "-n", directory.root + "/work", "-a", "127.0.0.1:\(port)",
            "-f", vcl, "-s", "malloc,16m", ">", log, "2>&1",
        ].map(Self.quoted).joined(separator: " ")
        let manager = try ChildProcess(program: "/bin/sh", ["-c", command])
        self.manager = manager
        let listening = waitUntil(within: .seconds(60)) {
            (try? LoopbackSocket.connected(to: port)).map { close($0) } != nil || !manager.isRunning
        }
        guard listening, manager.isRunning else {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            stop()
            throw DidNotStart(log: text)
        }
    }

    deinit { stop() }

    /// Kills varnishd (manager, then its worker, so the manager cannot start a new one) at once,
    /// as a crash or a pulled cable would, and waits until its port refuses connections. Safe to
    /// call more than once.
    public func stop() {
        guard !stopped else { return }
        stopped = true
        manager.killed(deadline: 10)
        if let worker = workerPID() { ChildProcess.kill9(pid: worker) }
        _ = waitUntil(within: .seconds(10)) {
            guard let fd = try? LoopbackSocket.connected(to: port) else { return true }
            close(fd)
            return false
        }
    }

    /// The worker's pid from the manager's log (`Child (1234) Started`), when it is still one of
    /// this instance's processes (its command line names this instance's work directory).
    private func workerPID() -> pid_t? {
        guard let log = try? String(contentsOfFile: directory.root + "/varnishd.log", encoding: .utf8) else {
            return nil
        }
        let pids = log.components(separatedBy: "Child (").dropFirst().compactMap {
            Int32($0.prefix { $0.isNumber })
        }
        guard let pid = pids.last,
            let commandLine = try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8),
            commandLine.contains(directory.root)
        else { return nil }
        return pid
    }

    private static func varnishd() -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let directories = path.split(separator: ":").map(String.init) + ["/usr/sbin", "/usr/local/sbin"]
        return directories.map { $0 + "/varnishd" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    private static func quoted(_ word: String) -> String {
        [">", "2>&1", "exec"].contains(word) ? word : "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    /// The parent's VCL: built-in rules, a short ttl and grace, PURGE from loopback, `X-Parent`.
    private static func vcl(name: String, originPort: Int, ttl: Int, grace: Int) -> String {
        """
        vcl 4.1;
        backend origin { .host = "127.0.0.1"; .port = "\(originPort)"; .connect_timeout = 1s; }
        acl purgers { "127.0.0.1"; }
        sub vcl_recv {
            if (req.method == "PURGE") {
                if (client.ip !~ purgers) { return (synth(405, "PURGE from loopback only")); }
                return (purge);
            }
        }
        sub vcl_backend_response {
            if (beresp.ttl > \(ttl)s) { set beresp.ttl = \(ttl)s; }
            set beresp.grace = \(grace)s;
        }
        sub vcl_deliver {
            set resp.http.X-Parent = "\(name)";
        }
        sub vcl_synth {
            set resp.http.X-Parent = "\(name)";
        }
        """
    }
}
