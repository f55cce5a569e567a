import Logging
import NIOHTTP1
import SharedURLCache

/// The proxy's access log through swift-log: one `info` line per request on the
/// `urlcache.proxy.access` logger, in the order nginx's combined format would put them:
///
///     GET /items?page=2 200 HIT 1024 0.21ms
///
/// (method, target as received, status, cache status or `-` for an answer the proxy made
/// itself, body bytes sent, time from the end of the request to the end of the response).
struct AccessLog: Sendable {
    let logger: Logger

    init(logger: Logger) {
        self.logger = logger
    }

    func record(
        method: HTTPMethod, target: String, status: Int, cacheStatus: CacheStatus?, bytes: Int, duration: Duration
    ) {
        guard logger.logLevel <= .info else { return }
        let (seconds, attoseconds) = duration.components
        let milliseconds = Double(seconds) * 1000 + Double(attoseconds) / 1e15
        let cache = cacheStatus?.rawValue ?? "-"
        let rounded = (milliseconds * 100).rounded() / 100
        logger.info("\(method.rawValue) \(target) \(status) \(cache) \(bytes) \(rounded)ms")
    }
}
