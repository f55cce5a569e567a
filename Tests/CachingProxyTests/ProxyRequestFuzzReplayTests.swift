import Foundation
import Testing
import TestProcess

/// docs/Reliability.md T12: the committed failures of the proxy's request-path fuzz target
/// (Fuzz/FailCases/proxy-request) and its seeds stay unit tests, through the very check the
/// target runs (ProxyRequestFuzzCheck.swift), one input at a time: the check's stand-in origin is
/// shared by the process.
@Suite(.blockingWaits, .serialized, .timeLimit(.minutes(5)))
struct ProxyRequestFuzzReplayTests {
    static let fuzz = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Fuzz").standardized

    @Test(
        "Fuzz/FailCases/proxy-request and Fuzz/Seeds/proxy-request replay without a failed check",
        arguments: [
            "FailCases/proxy-request", "Seeds/proxy-request",
        ])
    func replay(_ directory: String) async throws {
        let path = Self.fuzz.appendingPathComponent(directory).path
        let names = try FileManager.default.contentsOfDirectory(atPath: path).filter { !$0.hasPrefix(".") }.sorted()
        for name in names {
            let data = try #require(FileManager.default.contents(atPath: path + "/" + name), "\(name)")
            await ProxyRequestFuzzCheck.check([UInt8](data))
        }
        if directory.hasPrefix("Seeds") { #expect(names.count >= 7) }
        print("T12 replay: \(directory) \(names.count)")
    }
}
