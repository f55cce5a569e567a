import Foundation
import LoopbackOrigin
import Testing
import TestProcess

/// A real `urlcache proxy` process on a port the kernel picked (`--listen 127.0.0.1:0`, the port
/// read from the line it prints once bound), so that suites running side by side never share a
/// port. Its access log is off: a test that sends many requests must not fill the stderr pipe.
final class ProxyProcess: Sendable {
    let child: ChildProcess
    let port: Int
    let directory: TemporaryDirectory

    private init(child: ChildProcess, port: Int, directory: TemporaryDirectory) {
        self.child = child
        self.port = port
        self.directory = directory
    }

    /// Starts `urlcache proxy` in front of `upstream` (none when empty: `--forward` among the
    /// arguments) with `arguments` added, and waits until it listens. Its cache directory is
    /// `cacheDirectory`, or one in a temporary directory of its own.
    static func start(upstream: String, _ arguments: [String] = [], cacheDirectory: String? = nil) async throws
        -> ProxyProcess
    {
        signal(SIGPIPE, SIG_IGN)
        let directory = TemporaryDirectory(prefix: "suc-proxy-process")
        let child = try ChildProcess(
            ChildProcess.builtExecutable("urlcache"),
            [
                "proxy", cacheDirectory ?? directory.root + "/cache", "--listen", "127.0.0.1:0", "--threads", "1",
                "--x-cache-status",
                "--no-access-log",
            ] + (upstream.isEmpty ? [] : ["--upstream", upstream]) + arguments)
        let port = try await runBlocking { () -> Int? in
            var port: Int?
            _ = child.waitForLine { line in
                guard line.hasPrefix("listening on 127.0.0.1:") else { return false }
                port = Int(line.dropFirst("listening on 127.0.0.1:".count))
                return port != nil
            }
            return port
        }
        guard let port else {
            let outcome = try await runBlocking { child.finish(deadline: 10) }
            throw RawConnectionError(description: "urlcache proxy did not start: \(outcome.err)")
        }
        return ProxyProcess(child: child, port: port, directory: directory)
    }

    /// A new connection to the proxy.
    func connect() async throws -> RawConnection { try await RawConnection.open(port: port) }

    /// One request on a fresh connection.
    func send(_ target: String, method: String = "GET", headers: [(String, String)] = [], body: [UInt8]? = nil)
        async throws -> RawResponse
    {
        let connection = try await connect()
        defer { connection.close() }
        return try await connection.exchange(method, target, headers: headers, body: body)
    }

    /// SIGTERM, then the process's exit: its status and output.
    @discardableResult
    func stop() async throws -> ChildProcess.Outcome {
        kill(child.pid, SIGTERM)
        return try await runBlocking { [child] in child.finish(deadline: 60) }
    }
}
