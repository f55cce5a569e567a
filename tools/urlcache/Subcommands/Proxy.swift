#if canImport(CachingProxy)
import ArgumentParser
import CacheMaintenance
import CachingProxy
import Foundation
import HTTPCacheSemantics
import SharedURLCacheAsyncHTTPClient

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
    @Option(help: "The proxy's name in the Cache-Status response field (RFC 9211; \"\" for no Cache-Status).")
    var cacheStatusName = CacheStatusMember.defaultCacheName
    @Flag(help: "Also send nginx's X-Cache-Status (HIT, MISS, REVALIDATED, STALE, UPDATING, EXPIRED, BYPASS).")
    var xCacheStatus = false
    @Option(help: "Send that status under this header name (implies --x-cache-status; \"\" for none).")
    var cacheStatusHeader: String?
    @Option(help: "The partition of the proxy's entries (default: the shared default partition).") var partition:
        String?
    @Option(help: "Memory tier size.") var memoryCapacity = "64MiB"
    @Option(help: "Disk capacity of the entries (a store past it evicts the least recently used, as URLCache does).")
    var diskCapacity = "1GiB"
    @Option(help: "The largest entry stored (default: what the store takes, a 64 MiB body and its head).")
    var maxEntrySize: String?
    @Option(help: "Seconds allowed for a request's exchanges with the origin (then 504).") var upstreamTimeout = 60
    @Option(
        help:
            "Seconds allowed to connect to the origin; a refused connect is answered at once (stale where allowed, else 504/502)."
    )
    var connectTimeout = 3
    @Option(help: "Seconds SIGTERM/SIGINT wait for requests in flight before the process exits anyway.")
    var shutdownGrace = 30
    @Option(help: "Seconds from a request head's first byte to its end before the connection is closed.")
    var requestHeadTimeout = 60.0
    @Option(help: "Seconds a client may leave between two reads of a request body before the connection is closed.")
    var requestBodyTimeout = 60.0
    @Option(help: "Seconds a client may leave an answer untaken before the connection is closed.")
    var sendTimeout = 60.0
    @Option(help: "Seconds a keep-alive connection may wait for its next request.") var idleTimeout = 75.0
    @Option(help: "Client connections served at once; past it new ones get 503 and are closed (0: no bound).")
    var maxConnections = 1024
    @Option(help: "The largest request body (a larger one gets 413).") var maxRequestBody = "64MiB"
    @Option(help: "Seconds a request waits for another's fetch of the same URL before it goes to the origin itself.")
    var lockTimeout = 5.0
    @Option(help: "Event loop threads (default: one per core).") var threads: Int?
    @Flag(
        help:
            "SO_REUSEPORT on the listening socket: several proxy processes (one cache directory) may listen on one port."
    )
    var reusePort = false
    @Option(help: "Targeted cache-control fields obeyed before Cache-Control, in order (RFC 9213; \"\" for none).")
    var targetedCacheControl = "CDN-Cache-Control"
    @Flag(help: "No access log lines.") var noAccessLog = false
    @Flag(
        help:
            "Send stored compressed bodies over 8 KiB as they are (Content-Encoding gzip or deflate) to clients that accept it, without inflating them."
    )
    var compressedPassthrough = false
    @Option(
        help: "host:port to serve GET /metrics on, in Prometheus' text format (e.g. 127.0.0.1:9145; none by default).")
    var metricsListen: String?
    @Flag(help: "Answer PURGE <target> from loopback clients by removing the proxy's entries for it.")
    var allowPurge = false
    @Option(help: "Also answer PURGE from any client that sends Authorization: Bearer <token>.")
    var purgeToken: String?
    @Option(
        help:
            "Answer PURGE from clients in these IP ranges (CIDR or address; repeatable), loopback or not: behind a local TLS terminator every client is loopback."
    )
    var purgeFrom: [String] = []
    @Option(
        help: "Answer GET /metrics only to clients in these IP ranges (CIDR or address; repeatable); others get 403.")
    var metricsFrom: [String] = []
    @Option(
        help: ArgumentHelp(
            "A parent cache (http://host:port; repeat for a tier) asked before the origin.",
            discussion: "Each URL goes to one parent by rendezvous hashing; a failed parent is skipped with a back-off."
        ))
    var parent: [String] = []
    @Option(help: "When every parent is down: direct (go to the origin) or fail.") var parentFallback = "direct"
    @Option(help: "Seconds a parent has to send its response head (longer than the origin's slowest answer).")
    var parentTimeout = 30
    @Option(help: "Check a parent that is down with HEAD <target> every 2 s, instead of retrying it with requests.")
    var parentProbe: String?
    @Flag(help: "Send an allowed PURGE on to every parent too (with --allow-purge or --purge-token).")
    var purgeParents = false
    @Option(
        help:
            "Let this request field reach the origin although the proxy drops it by default (X-Forwarded-Host, X-Original-URL, X-Rewrite-URL, X-HTTP-Method-Override, X-HTTP-Method, X-Method-Override); repeat for several."
    )
    var passHeader: [String] = []
    @Option(
        help: "Add this request field to every stored response's key, as if the origin named it in Vary; repeatable.")
    var keyHeader: [String] = []
    @Option(
        help:
            "With --forward: let clients reach these internal IP ranges (loopback, private, link-local are refused otherwise); repeatable."
    )
    var forwardAllow: [String] = []
    @Flag(
        help:
            "Decide reuse without the client's Cache-Control and Pragma (no-cache, max-age=0), as nginx and Varnish do."
    )
    var ignoreRequestCacheControl = false
    @Flag(help: "Keep stored responses when a POST, PUT, DELETE or PATCH to their URL succeeds.")
    var noInvalidateOnUnsafe = false
    @Option(help: "trace, debug, info, notice, warning, error or critical.") var logLevel = "info"

    func validate() throws {
        if forward == (upstream != nil) { throw ValidationError("give either --upstream URL or --forward") }
        if let upstream {
            do { _ = try ProxyConfiguration.Upstream(upstream) } catch { throw ValidationError(error.description) }
        }
        do { _ = try ProxyConfiguration.listenAddress(listen) } catch { throw ValidationError(error.description) }
        if let metricsListen {
            do { _ = try ProxyConfiguration.listenAddress(metricsListen) } catch {
                throw ValidationError("--metrics-listen: \(error.description)")
            }
        }
        do { _ = try ProxyConfiguration.fieldNames(targetedCacheControl) } catch {
            throw ValidationError(error.description)
        }
        if let cacheStatusHeader, !cacheStatusHeader.isEmpty,
            (try? ProxyConfiguration.fieldNames(cacheStatusHeader))?.count != 1
        {
            throw ValidationError("--cache-status-header: not a field name: \(cacheStatusHeader)")
        }
        if !cacheStatusName.isEmpty, !CacheStatusMember.isValidCacheName(cacheStatusName) {
            throw ValidationError("--cache-status-name: printable ASCII only: \(cacheStatusName)")
        }
        if let purgeToken, purgeToken.isEmpty { throw ValidationError("--purge-token: empty") }
        do {
            _ = try AddressRanges(purgeFrom)
            _ = try AddressRanges(metricsFrom)
            _ = try AddressRanges(forwardAllow)
        } catch { throw ValidationError(error.description) }
        if !metricsFrom.isEmpty && metricsListen == nil {
            throw ValidationError("--metrics-from needs --metrics-listen")
        }
        do { _ = try parentTier() } catch { throw ValidationError("--parent: \(error.description)") }
        guard ["direct", "fail"].contains(parentFallback) else {
            throw ValidationError("--parent-fallback: direct or fail, not \(parentFallback)")
        }
        guard parentTimeout > 0 else { throw ValidationError("--parent-timeout must be positive") }
        if purgeParents && (parent.isEmpty || !(allowPurge || purgeToken != nil || !purgeFrom.isEmpty)) {
            throw ValidationError("--purge-parents needs --parent and --allow-purge, --purge-from or --purge-token")
        }
        guard upstreamTimeout > 0 else { throw ValidationError("--upstream-timeout must be positive") }
        guard connectTimeout > 0 else { throw ValidationError("--connect-timeout must be positive") }
        guard shutdownGrace >= 0 else { throw ValidationError("--shutdown-grace must not be negative") }
        for (name, value) in [
            ("--request-head-timeout", requestHeadTimeout), ("--request-body-timeout", requestBodyTimeout),
            ("--send-timeout", sendTimeout), ("--idle-timeout", idleTimeout), ("--lock-timeout", lockTimeout),
        ] where !(value > 0) {
            throw ValidationError("\(name) must be positive")
        }
        for name in passHeader + keyHeader {
            do { _ = try ProxyConfiguration.fieldNames(name) } catch { throw ValidationError(error.description) }
        }
        guard maxConnections >= 0 else { throw ValidationError("--max-connections must not be negative") }
        do { _ = try SizeLimit(maxRequestBody).resolved(of: 0) } catch {
            throw ValidationError("--max-request-body: \(error)")
        }
    }

    /// The tier the `--parent` options describe, nil without any.
    private func parentTier() throws(ParentTierError) -> ParentTier? {
        guard !parent.isEmpty else { return nil }
        var tier = try ParentTier(parent, fallback: parentFallback == "fail" ? .fail : .direct)
        tier.timeout = .seconds(Int64(parentTimeout))
        tier.probe = parentProbe.map { ParentTier.Probe(target: $0) }
        return tier
    }

    func run() throws {
        let (host, port) = try ProxyConfiguration.listenAddress(listen)
        let mode: ProxyConfiguration.Mode =
            try upstream.map { .reverse(try ProxyConfiguration.Upstream($0)) } ?? .forward
        var configuration = ProxyConfiguration(mode: mode, host: host, port: port)
        configuration.cacheStatusName = cacheStatusName.isEmpty ? nil : cacheStatusName
        if let cacheStatusHeader {
            configuration.cacheStatusHeader = cacheStatusHeader.isEmpty ? nil : cacheStatusHeader
        } else {
            configuration.cacheStatusHeader = xCacheStatus ? "X-Cache-Status" : nil
        }
        configuration.client.partition = partition
        configuration.upstreamTimeout = .seconds(Int64(upstreamTimeout))
        configuration.connectTimeout = .seconds(Int64(connectTimeout))
        configuration.shutdownGracePeriod = .seconds(Int64(shutdownGrace))
        configuration.requestHeadTimeout = .nanoseconds(Int64(requestHeadTimeout * 1e9))
        configuration.requestBodyTimeout = .nanoseconds(Int64(requestBodyTimeout * 1e9))
        configuration.sendTimeout = .nanoseconds(Int64(sendTimeout * 1e9))
        configuration.idleTimeout = .nanoseconds(Int64(idleTimeout * 1e9))
        configuration.maximumConnections = maxConnections == 0 ? nil : maxConnections
        configuration.passedHeaders = passHeader
        configuration.keyHeaders = try keyHeader.flatMap { try ProxyConfiguration.fieldNames($0) }
        configuration.maximumRequestBodyBytes = try SizeLimit(maxRequestBody).resolved(of: 0)
        configuration.client.lockTimeout = .milliseconds(Int64(lockTimeout * 1000))
        if let threads { configuration.eventLoopThreads = threads }
        configuration.reusePort = reusePort
        configuration.accessLog = !noAccessLog
        configuration.client.caching.compressedPassthrough = compressedPassthrough
        if allowPurge || purgeToken != nil || !purgeFrom.isEmpty {
            var purge = PurgeAccess(loopback: allowPurge, token: purgeToken, sendsToParents: purgeParents)
            if !purgeFrom.isEmpty { purge.from = try AddressRanges(purgeFrom) }
            configuration.purge = purge
        }
        if !metricsFrom.isEmpty { configuration.metricsFrom = try AddressRanges(metricsFrom) }
        if !forwardAllow.isEmpty { configuration.forwardAllowed = try AddressRanges(forwardAllow) }
        configuration.client.caching.honoursRequestCacheControl = !ignoreRequestCacheControl
        configuration.client.caching.invalidatesOnUnsafeMethods = !noInvalidateOnUnsafe
        configuration.parents = try parentTier()
        configuration.metricsAddress = try metricsListen.map { try ProxyConfiguration.listenAddress($0) }
        configuration.targetedCacheControl = try ProxyConfiguration.fieldNames(targetedCacheControl)
        let cache = ProxyCacheSettings(
            directory: options.resolved,
            memoryCapacityBytes: try SizeLimit(memoryCapacity).resolved(of: 0),
            diskCapacityBytes: try SizeLimit(diskCapacity).resolved(of: 0),
            maximumEntrySizeBytes: try maxEntrySize.map { try SizeLimit($0).resolved(of: 0) }
                ?? ProxyCacheSettings.storeLimitBytes)
        try ProxyServer.runUntilSignalled(configuration: configuration, cache: cache, logLevel: logLevel) { server in
            // One line on stdout once the socket is bound, for scripts and tests to wait on.
            FileHandle.standardOutput.write(Data("listening on \(host):\(server.port)\n".utf8))
        }
    }
}
#endif
