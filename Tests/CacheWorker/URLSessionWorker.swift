import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SharedURLCache
import SharedURLCacheFoundation

/// A second process with its own caching URLSession on the same directory.
enum URLSessionWorker {
    /// Prints `STATUS <code> <cache status> <body bytes>`; exit 0, or 2 on failure.
    static func get(directory: String, url: String) -> Int32 {
        do {
            let configuration = URLSessionConfiguration.default
            configuration.useSharedURLCache(
                try SharedCache(
                    memoryCapacity: 1 << 20, diskCapacity: 64 << 20, directory: URL(fileURLWithPath: directory)))
            let session = URLSession(configuration: configuration)
            let done = DispatchSemaphore(value: 0)
            nonisolated(unsafe) var line = ""
            session.dataTask(with: URL(string: url)!) { data, response, error in
                if let http = response as? HTTPURLResponse {
                    line =
                        "STATUS \(http.statusCode) \(http.value(forHTTPHeaderField: "X-Cache-Status") ?? "-") \(data?.count ?? 0)"
                } else {
                    line = "ERROR \(error.map { "\($0)" } ?? "none")"
                }
                done.signal()
            }.resume()
            done.wait()
            print(line)
            return line.hasPrefix("STATUS") ? 0 : 2
        } catch {
            print("ERROR \(error)")
            return 2
        }
    }
}
