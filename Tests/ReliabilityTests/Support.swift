import Foundation
import SharedURLCacheStore
import Testing
import TestRandom

/// Every reliability suite nests in this one, so they run one at a time: they spawn real
/// processes and time kills, and two of them at once on a 2-core runner would only measure the
/// runner. Long variants run with SUC_SOAK=1 (see tools/soak).
@Suite(.serialized, .timeLimit(.minutes(10)))
enum Reliability {}

/// Whether the long (soak) variants are asked for.
let soak = ProcessInfo.processInfo.environment["SUC_SOAK"] == "1"

/// A child process: the CacheWorker helper, or any program, with stdin/stdout/stderr pipes.
final class Child {
    let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let errors = Pipe()
    private var buffered = ""

    static var worker: String {
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        if dir.pathExtension == "xctest" { dir = dir.deletingLastPathComponent() }
        let candidate = dir.appendingPathComponent("CacheWorker").path
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        return Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("CacheWorker").path
    }

    /// Runs CacheWorker with `arguments`.
    convenience init(_ arguments: [String]) throws {
        try self.init(program: Child.worker, arguments)
    }

    init(program: String, _ arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
    }

    var pid: Int32 { process.processIdentifier }
    func kill9() { kill(process.processIdentifier, SIGKILL) }
    func send(_ line: String) { input.fileHandleForWriting.write(Data((line + "\n").utf8)) }

    /// Reads stdout until a line equal to `marker` (false at end of file).
    func waitForLine(_ marker: String) -> Bool {
        while true {
            if buffered.split(separator: "\n").contains(where: { $0 == marker }) { return true }
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { return false }
            buffered += String(decoding: chunk, as: UTF8.self)
        }
    }

    func finish() -> (status: Int32, out: String, err: String) {
        try? input.fileHandleForWriting.close()
        let outData = output.fileHandleForReading.readDataToEndOfFile()
        let errData = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, buffered + String(decoding: outData, as: UTF8.self), String(decoding: errData, as: UTF8.self))
    }

    static func run(_ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
        try Child(arguments).finish()
    }

    /// Runs a shell command line (for unshare, setpriv, mknod, mdb_dump…).
    static func shell(_ command: String) throws -> (status: Int32, out: String, err: String) {
        try Child(program: "/bin/sh", ["-c", command]).finish()
    }
}

/// A fresh directory under the temp dir, removed on deinit.
final class Scratch {
    let root: String
    var cache: String { root + "/cache" }

    init() {
        var template = Array((NSTemporaryDirectory() + "/suc-rel-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "mkdtemp failed")
        root = String(decoding: template.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }
}

/// Appends the complete "ACK key seq" lines of a killed writer's output to `file`; returns how many.
@discardableResult
func appendAcks(_ out: String, to file: String) -> Int {
    let lines = out.split(separator: "\n", omittingEmptySubsequences: false).dropLast().filter { $0.hasPrefix("ACK ") }
    guard !lines.isEmpty else { return 0 }
    if !FileManager.default.fileExists(atPath: file) { FileManager.default.createFile(atPath: file, contents: nil) }
    let handle = FileHandle(forWritingAtPath: file)!
    handle.seekToEndOfFile()
    handle.write(Data(lines.map { $0 + "\n" }.joined().utf8))
    try? handle.close()
    return lines.count
}

/// The pids in the index's reader table (`mdb_stat -r`), or nil when mdb_stat is missing.
/// A listed pid that is not alive is a stale slot nobody reclaimed.
func readerTablePids(_ cache: String) -> [Int32]? {
    // mdb_stat exits 1 after printing only the reader table; the header says it ran.
    guard let result = try? Child.shell("command -v mdb_stat >/dev/null && mdb_stat -n -r '\(cache)/index.lmdb'"),
          result.out.contains("Reader Table Status") else { return nil }
    // Lines look like "    1234 7f00deadbeef 42" under a "    pid     thread     txnid" header.
    return result.out.split(separator: "\n").compactMap { line in
        let parts = line.split(separator: " ")
        guard parts.count == 3, let pid = Int32(parts[0]) else { return nil }
        return pid
    }
}

func isAlive(_ pid: Int32) -> Bool { kill(pid, 0) == 0 || errno == EPERM }

typealias Seeded = SplitMix64

/// The seed of a run: SUC_SEED to replay one, otherwise random; always printed.
func runSeed(_ name: String) -> UInt64 {
    let seed = ProcessInfo.processInfo.environment["SUC_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...1_000_000_000)
    print("\(name) seed \(seed) (replay: SUC_SEED=\(seed))")
    return seed
}

/// Files under `dir` (recursively, not following symlinks), relative paths.
func walk(_ dir: String) -> [String] {
    FileManager.default.enumerator(atPath: dir).map { $0.compactMap { $0 as? String } } ?? []
}
