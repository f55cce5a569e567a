import Foundation

/// A real child process running the CacheWorker helper executable.
final class WorkerProcess {
    let process = Process()
    private let output = Pipe()
    private let errors = Pipe()

    static var executable: URL {
        // The helper is built next to the test bundle (.build/<config>/CacheWorker).
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        if dir.pathExtension == "xctest" { dir = dir.deletingLastPathComponent() }
        let candidate = dir.appendingPathComponent("CacheWorker")
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        return Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("CacheWorker")
    }

    init(_ arguments: [String]) throws {
        process.executableURL = WorkerProcess.executable
        process.arguments = arguments
        process.standardOutput = output
        process.standardError = errors
        try process.run()
    }

    var pid: Int32 { process.processIdentifier }

    func kill9() { kill(process.processIdentifier, SIGKILL) }

    /// Waits for exit and returns (status, stdout, stderr). Pipes are drained while waiting so a
    /// chatty child never blocks on a full pipe.
    func finish() -> (status: Int32, out: String, err: String) {
        let outData = output.fileHandleForReading.readDataToEndOfFile()
        let errData = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: outData, as: UTF8.self), String(decoding: errData, as: UTF8.self))
    }

    /// Reads stdout until a line equal to `marker` arrives.
    func waitForLine(_ marker: String) -> Bool {
        var buffer = ""
        while true {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { return false }
            buffer += String(decoding: chunk, as: UTF8.self)
            if buffer.split(separator: "\n").contains(where: { $0 == marker }) { return true }
        }
    }

    /// Runs a worker to completion.
    static func run(_ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
        try WorkerProcess(arguments).finish()
    }
}

func makeTemporaryDirectory() -> String {
    var template = Array((NSTemporaryDirectory() + "/suc-mp-XXXXXX").utf8CString)
    let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
    precondition(made != nil, "mkdtemp failed")
    return String(decoding: template.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
