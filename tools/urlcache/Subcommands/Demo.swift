import ArgumentParser
import Foundation
import SharedURLCacheStore

/// The README's main job until the benchmark driver lands: two real processes share one
/// directory — one stores, the other reads what the first stored — and each reports its rates.
struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Store and read across two processes on one cache directory; print rates and counters.")

    @OptionGroup var options: CacheDirectoryOptions
    @Option(help: "Entries per body size.") var count = 5000

    func run() throws {
        let directory = options.resolved
        try FileManager.default.createDirectory(atPath: (directory as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        _ = try CacheStore(directory: directory) // create it once, before the workers race
        print("cache directory: \(directory)")
        print(Demo.row("operation (process)", "ops/s", "median µs"))
        for size in [1024, 16 * 1024] {
            for phase in ["store", "hit", "miss"] {
                let result = try runWorker(phase: phase, size: size, directory: directory)
                print(result)
            }
        }
        print("")
        try Stats.parse([directory]).run()
    }

    static func row(_ a: String, _ b: String, _ c: String) -> String {
        a.padding(toLength: 30, withPad: " ", startingAt: 0)
            + String(repeating: " ", count: max(0, 10 - b.count)) + b
            + String(repeating: " ", count: max(0, 12 - c.count)) + c
    }

    /// Each phase runs in its own process: the reading process never stored anything itself.
    private func runWorker(phase: String, size: Int, directory: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL
        if !FileManager.default.isExecutableFile(atPath: process.executableURL!.path) {
            process.executableURL = Bundle.main.executableURL
        }
        process.arguments = ["demo-worker", directory, "--phase", phase, "--size", String(size), "--count", String(count)]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw ExitCode(process.terminationStatus) }
        return String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

struct DemoWorker: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "demo-worker", abstract: "One process of `urlcache demo`.", shouldDisplay: false)

    @OptionGroup var options: CacheDirectoryOptions
    @Option var phase: String
    @Option var size: Int
    @Option var count: Int

    func run() throws {
        let store = try CacheStore(directory: options.resolved)
        let body = Array(String(repeating: #"{"id":12345,"name":"item","tags":["a","b"],"price":9.99}"#, count: size / 56 + 1).utf8.prefix(size))
        func key(_ i: Int) -> [UInt8] { Array("GET https://api.example.com/items/\(i)?v=1&size=\(size)".utf8) }
        var latencies = [Double]()
        latencies.reserveCapacity(count)
        let start = DispatchTime.now().uptimeNanoseconds
        for i in 0..<count {
            let t0 = DispatchTime.now().uptimeNanoseconds
            switch phase {
            case "store": try store.store(RecordDescriptor(key: key(i), head: Array("HTTP/1.1 200 OK".utf8)), body: body)
            case "hit":
                guard let hit = try store.record(for: key(i)), hit.body?.count == size else {
                    throw ValidationError("entry \(i) stored by the other process is missing")
                }
            default:
                if try store.record(for: Array("GET https://api.example.com/absent/\(i)".utf8)) != nil { throw ValidationError("unexpected hit") }
            }
            latencies.append(Double(DispatchTime.now().uptimeNanoseconds - t0) / 1000)
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        latencies.sort()
        let label = "\(phase) \(size / 1024) KiB (pid \(getpid()))"
        print(Demo.row(label, String(format: "%.0f", Double(count) / seconds), String(format: "%.1f", latencies[latencies.count / 2])))
    }
}
