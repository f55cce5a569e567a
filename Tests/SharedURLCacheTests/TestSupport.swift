import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import SharedURLCache
import SharedURLCacheStore
import Testing
import TestProcess
import SeededRandom

/// A fresh, uniquely named directory per test (Tests/TestProcess), removed when the test drops it.
final class TestDirectory: Sendable {
    private let directory = TemporaryDirectory(prefix: "suc-api")
    var root: String { directory.root }
    var cache: URL { URL(fileURLWithPath: root + "/cache") }

    func makeCache(
        memory: Int = 1 << 20, disk: Int = 64 << 20, partition: String = "", maximumEntry: Int = 8 << 20
    ) throws -> SharedCache {
        try SharedCache(
            configuration: SharedCacheConfiguration(
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
    let http = HTTPURLResponse(
        url: URL(string: url)!, statusCode: status, httpVersion: "HTTP/1.1", headerFields: headers)!
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

    /// Stores a binary body (`put` stores text, which compresses).
    func put(_ url: String, data: Data, policy: URLCache.StoragePolicy = .allowed) {
        let http = HTTPURLResponse(url: URL(string: url)!, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: [:])!
        storeCachedResponse(
            CachedURLResponse(response: http, data: data, userInfo: nil, storagePolicy: policy), for: request(url))
    }

    /// The binary body stored for `url`, or nil.
    func getData(_ url: String) -> Data? {
        cachedResponse(for: request(url))?.data
    }

    /// The primary key bytes the cache uses for a GET of `url`.
    func storeKey(_ url: String) -> [UInt8] {
        engine.lookupKey(for: request(url))!.key
    }
}

/// Deterministic random bytes: incompressible, so stored raw at their full size.
func randomData(size: Int, seed: UInt64) -> Data {
    var generator = SplitMix64(seed: seed)
    var data = Data(count: size)
    data.withUnsafeMutableBytes { buffer in
        for i in buffer.indices { buffer[i] = UInt8(truncatingIfNeeded: generator.next()) }
    }
    return data
}

// MARK: - The second process

enum Worker {
    /// `<dir of this test binary>/CacheWorker`.
    struct Outcome {
        var status: Int32
        var output: String
        var error: String
    }

    /// Runs `CacheWorker ARGS…` to completion (Tests/TestProcess); stdout comes back trimmed.
    static func run(_ arguments: [String]) throws -> Outcome {
        let result = try ChildProcess.run(arguments)
        return Outcome(
            status: result.status, output: result.out.trimmingCharacters(in: .whitespacesAndNewlines), error: result.err
        )
    }

    static func hex(_ bytes: [UInt8]) -> String {
        bytes.isEmpty ? "-" : bytes.map { String(format: "%02x", $0) }.joined()
    }
}
