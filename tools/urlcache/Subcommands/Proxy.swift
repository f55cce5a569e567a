#if canImport(CachingProxy)
import ArgumentParser
import CacheMaintenance
import CachingProxy
import Foundation

/// `urlcache proxy DIR --listen 127.0.0.1:8080 --upstream http://host:port`: an HTTP/1.1 caching
/// proxy on the directory, for services that are not written in Swift.
struct Proxy: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve an HTTP/1.1 caching proxy (reverse, or forward with --forward) on the cache directory.",
        discussion: """
            Every request goes through the library's caching flow in shared mode (RFC 9111: s-maxage, \
            private, Authorization, Vary, revalidation, stale-while-revalidate, stale-if-error), in the \
            cache's default partition unless --partition says otherwise, so Swift services using \
            SharedURLCache in shared mode on the same directory see the same entries. SIGTERM or SIGINT: \
            stop accepting, finish requests in flight, exit 0. Logs (one access line per request) go to stderr.
            """)

    @OptionGroup var options: CacheDirectoryOptions
    @Option(help: "host:port to listen on (port 0 picks a free one).") var listen = "127.0.0.1:8080"
    @Option(help: "The origin of a reverse proxy: http(s)://host[:port][/base-path].") var upstream: String?
    @Flag(help: "Forward proxy (HTTP_PROXY clients send absolute URLs) instead of a reverse proxy.") var forward = false
    @Option(help: "The response header carrying the cache status (\"\" for none).") var cacheStatusHeader = "X-Cache-Status"
    @Option(help: "The partition of the proxy's entries (default: the shared default partition).") var partition: String?
    @Option(help: "Memory tier size.") var memoryCapacity = "64MiB"
    @Option(help: "Disk capacity of the entries (a store past it evicts the least recently used, as URLCache does).") var diskCapacity = "1GiB"
    @Option(help: "The largest entry stored.") var maxEntrySize = "8MiB"
    @Option(help: "Seconds allowed for a request's exchanges with the origin (then 504).") var upstreamTimeout = 60
    @Option(help: "Event loop threads (default: one per core).") var threads: Int?
    @Option(help: "Targeted cache-control fields obeyed before Cache-Control, in order (RFC 9213; \"\" for none).")
    var targetedCacheControl = "CDN-Cache-Control"
    @Flag(help: "No access log lines.") var noAccessLog = false
    @Option(help: "trace, debug, info, notice, warning, error or critical.") var logLevel = "info"

    func validate() throws {
        if forward == (upstream != nil) { throw ValidationError("give either --upstream URL or --forward") }
        if let upstream {
            do { _ = try ProxyConfiguration.Upstream(upstream) } catch { throw ValidationError(error.description) }
        }
        do { _ = try ProxyConfiguration.listenAddress(listen) } catch { throw ValidationError(error.description) }
        do { _ = try ProxyConfiguration.fieldNames(targetedCacheControl) } catch { throw ValidationError(error.description) }
        guard upstreamTimeout > 0 else { throw ValidationError("--upstream-timeout must be positive") }
    }

    func run() throws {
        let (host, port) = try ProxyConfiguration.listenAddress(listen)
        let mode: ProxyConfiguration.Mode = try upstream.map { .reverse(try ProxyConfiguration.Upstream($0)) } ?? .forward
        var configuration = ProxyConfiguration(mode: mode, host: host, port: port)
        configuration.cacheStatusHeader = cacheStatusHeader.isEmpty ? nil : cacheStatusHeader
        configuration.client.partition = partition
        configuration.upstreamTimeout = .seconds(Int64(upstreamTimeout))
        if let threads { configuration.eventLoopThreads = threads }
        configuration.accessLog = !noAccessLog
        configuration.targetedCacheControl = try ProxyConfiguration.fieldNames(targetedCacheControl)
        let cache = ProxyCacheSettings(
            directory: options.resolved,
            memoryCapacityBytes: try SizeLimit(memoryCapacity).resolved(of: 0),
            diskCapacityBytes: try SizeLimit(diskCapacity).resolved(of: 0),
            maximumEntrySizeBytes: try SizeLimit(maxEntrySize).resolved(of: 0))
        try ProxyServer.runUntilSignalled(configuration: configuration, cache: cache, logLevel: logLevel) { server in
            // One line on stdout once the socket is bound, for scripts and tests to wait on.
            FileHandle.standardOutput.write(Data("listening on \(host):\(server.port)\n".utf8))
        }
    }
}
#endif
