import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import SharedURLCache
import SharedURLCacheStore
import Testing

/// A fresh, uniquely named directory per test (mkdtemp), removed when the test drops it.
final class TestDirectory: Sendable {
    let root: String
    var cache: URL { URL(fileURLWithPath: root + "/cache") }

    init() {
        var template = Array((NSTemporaryDirectory() + "/suc-api-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "mkdtemp failed")
        root = String(decoding: template.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    func makeCache(
        memory: Int = 1 << 20, disk: Int = 64 << 20, partition: String = "", maximumEntry: Int = 8 << 20
    ) throws -> SharedCache {
        try SharedCache(configuration: SharedCacheConfiguration(
            memoryCapacity: memory, diskCapacity: disk, directory: cache, partition: partition,
            maximumEntrySizeBytes: maximumEntry))
    }
}

func request(_ url: String, method: String = "GET", headers: [String: String] = [:]) -> URLRequest {
    var request = URLRequest(url: URL(string: url)!)
    request.httpMethod = method
    for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
    return request
}

func response(
    _ url: String, body: String, status: Int = 200, headers: [String: String] = ["Content-Type": "application/json"],
    userInfo: [AnyHashable: Any]? = nil, policy: URLCache.StoragePolicy = .allowed
) -> CachedURLResponse {
    let http = HTTPURLResponse(url: URL(string: url)!, statusCode: status, httpVersion: "HTTP/1.1", headerFields: headers)!
    return CachedURLResponse(response: http, data: Data(body.utf8), userInfo: userInfo, storagePolicy: policy)
}

/// The body of a cached response as text, or nil for a miss.
func body(_ cached: CachedURLResponse?) -> String? {
    cached.map { String(decoding: $0.data, as: UTF8.self) }
}

extension SharedCache {
    /// Stores `body` for `url` with the given policy and headers.
    func put(
        _ url: String, _ body: String, policy: URLCache.StoragePolicy = .allowed,
        responseHeaders: [String: String] = ["Content-Type": "application/json"], requestHeaders: [String: String] = [:]
    ) {
        storeCachedResponse(
            response(url, body: body, headers: responseHeaders, policy: policy),
            for: request(url, headers: requestHeaders))
    }

    /// The body stored for `url`, or nil.
    func get(_ url: String, headers: [String: String] = [:]) -> String? {
        body(cachedResponse(for: request(url, headers: headers)))
    }

    /// The primary key bytes the cache uses for a GET of `url`.
    func storeKey(_ url: String) -> [UInt8] {
        lookupKey(for: request(url))!.key
    }
}

// MARK: - The second process

enum Worker {
    /// `<dir of this test binary>/CacheWorker`.
    static var path: String {
        let binary = Bundle.main.executablePath ?? CommandLine.arguments[0]
        var directory = URL(fileURLWithPath: binary).deletingLastPathComponent()
        // On Darwin the test binary sits inside a .xctest bundle.
        while directory.path.contains(".xctest") { directory.deleteLastPathComponent() }
        return directory.appendingPathComponent("CacheWorker").path
    }

    struct Outcome {
        var status: Int32
        var output: String
        var error: String
    }

    /// Runs `CacheWorker ARGS…` to completion.
    static func run(_ arguments: [String]) throws -> Outcome {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let output = out.fileHandleForReading.readDataToEndOfFile()
        let error = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Outcome(
            status: process.terminationStatus,
            output: String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines),
            error: String(decoding: error, as: UTF8.self))
    }

    static func hex(_ bytes: [UInt8]) -> String {
        bytes.isEmpty ? "-" : bytes.map { String(format: "%02x", $0) }.joined()
    }
}
