import AsyncHTTPClient
import Foundation
import HTTPCacheSemantics
import NIOCore
import NIOPosix
import SharedURLCache
import SharedURLCacheAsyncHTTPClient
import Synchronization

/// `urlcache warm`: fetches URLs into a cache directory through the proxy's own caching client
/// (``CachingHTTPClient`` with ``ProxyConfiguration``'s client settings, in the same directory
/// and partition), so what it stores is what the proxy would have stored for those URLs: the
/// same keys, freshness, Vary, storage rules, size limits and request collapsing (across
/// processes too, so a warm beside a running proxy sends the origin one request per URL).
///
/// Each URL is first looked up (`returnCacheDataDontLoad`): a fresh entry is counted as
/// already fresh and costs no origin request and no rate token. Otherwise the warmer takes a
/// token of the rate limit and asks with `Cache-Control: no-cache`, so a stale entry is
/// revalidated now (a 304 refreshes it) instead of being served stale while a background
/// revalidation that this short-lived process might not wait for runs.
package final class CacheWarmer: Sendable {
    /// What a warm run uses besides its URLs.
    package struct Settings: Sendable {
        /// The cache directory and its capacities, as `urlcache proxy` opens them.
        package var cache: ProxyCacheSettings
        /// The caching client's settings: the proxy's defaults (``ProxyConfiguration/client``)
        /// with the partition, targeted cache-control fields and key fields the options name.
        package var client: CachingHTTPClient.Configuration
        /// Fetches at once.
        package var concurrency = 8
        /// Origin requests per second across every fetch (`nil`: no limit).
        package var rate: Double?
        /// Requests the rate limit lets through at once after an idle spell.
        package var burst = 1
        /// The time one URL's answer may take, body included.
        package var timeout: TimeAmount = .seconds(60)
        /// The time allowed to connect to the origin.
        package var connectTimeout: TimeAmount = CachingHTTPClient.defaultConnectTimeout
        /// Request fields sent with every fetch (they select `Vary` variants as a client's would).
        package var headers: [(name: String, value: String)] = []

        /// Settings for `cache` with the proxy's client defaults.
        package init(cache: ProxyCacheSettings) {
            self.cache = cache
            self.client = ProxyConfiguration(mode: .forward).client
        }
    }

    private let settings: Settings
    private let group: MultiThreadedEventLoopGroup
    private let httpClient: HTTPClient
    private let client: CachingHTTPClient
    private let limit: WarmRateLimit?
    private let totals = Mutex(WarmSummary())

    /// Opens the cache (creating the directory when missing) and the origin client.
    /// - Throws: `CacheError` when the directory cannot be opened.
    package init(settings: Settings) throws {
        self.settings = settings
        try FileManager.default.createDirectory(atPath: settings.cache.directory, withIntermediateDirectories: true)
        let cache = try SharedCache(configuration: settings.cache.sharedCacheConfiguration)
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        // As the proxy's origin client: no redirects followed (a redirect is itself the answer
        // stored or not), bodies byte for byte, a refused connect fails at once.
        httpClient = HTTPClient(
            eventLoopGroupProvider: .shared(group),
            configuration: CachingHTTPClient.originConfiguration(
                HTTPClient.Configuration(
                    redirectConfiguration: .disallow, timeout: .init(read: settings.timeout),
                    connectionPool: .init(
                        idleTimeout: .seconds(60),
                        concurrentHTTP1ConnectionsPerHostSoftLimit: max(settings.concurrency, 1)),
                    decompression: .disabled),
                connectTimeout: settings.connectTimeout))
        var clientSettings = settings.client
        // The answer is waited for in the foreground (see the type's comment).
        clientSettings.caching.revalidatesInBackground = false
        do {
            client = try CachingHTTPClient(cache: cache, httpClient: httpClient, configuration: clientSettings)
        } catch {
            try? httpClient.syncShutdown()
            try? group.syncShutdownGracefully()
            throw error
        }
        limit = settings.rate.map { WarmRateLimit(rate: $0, burst: settings.burst) }
    }

    /// Closes the origin client; call once the run is over.
    package func shutdown() async {
        try? await httpClient.shutdown()
        try? await group.shutdownGracefully()
    }

    /// The totals so far (for a progress line while ``run(urls:)`` runs).
    package var progress: WarmSummary { totals.withLock { $0 } }

    /// Warms `urls` (duplicates dropped), `concurrency` at a time, and returns the totals.
    /// Cancelling the calling task stops it: no URL is started after that, the fetches in
    /// flight are abandoned (a store commits only after a body's last byte, so nothing partial
    /// is kept), and the totals say how many were interrupted and not started.
    package func run(urls: [String]) async -> WarmSummary {
        var seen = Set<String>()
        let unique = urls.filter { seen.insert($0).inserted }
        totals.withLock { $0.urls = unique.count }
        let started = ContinuousClock.now
        await withTaskGroup(of: Void.self) { group in
            var next = 0
            func startNext() -> Bool {
                guard next < unique.count, !Task.isCancelled else { return false }
                let url = unique[next]
                next += 1
                group.addTask { [self] in
                    let outcome = await warm(url)
                    totals.withLock { $0.count(outcome) }
                }
                return true
            }
            for _ in 0..<max(settings.concurrency, 1) {
                if !startNext() { break }
            }
            while await group.next() != nil { _ = startNext() }
            let notStarted = unique.count - next
            totals.withLock {
                $0.notStarted = notStarted
                $0.stoppedBySignal = Task.isCancelled
            }
        }
        let elapsed = ContinuousClock.now - started
        return totals.withLock { totals in
            totals.seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            return totals
        }
    }

    /// One URL: look up, take a token, fetch through the caching client, read the body to its
    /// end (a miss is stored only then) and wait for its store to settle.
    private func warm(_ url: String) async -> WarmOutcome {
        if Task.isCancelled { return .interrupted }
        var request = HTTPClientRequest(url: url)
        for header in settings.headers { request.headers.add(name: header.name, value: header.value) }
        if let cached = try? await client.execute(request, timeout: settings.timeout, policy: .returnCacheDataDontLoad),
            cached.cacheStatus == .hit
        {
            return .alreadyFresh
        }
        if let limit {
            do { try await limit.acquire() } catch { return .interrupted }
        }
        request.headers.replaceOrAdd(name: "Cache-Control", value: "no-cache")
        totals.withLock { $0.originRequests += 1 }
        do {
            let response = try await client.execute(request, timeout: settings.timeout)
            var bytes = 0
            for try await chunk in response.body { bytes += chunk.readableBytes }
            await response.storeSettlement.wait()
            totals.withLock { $0.bodyBytes += bytes }
            if response.cacheStatus == .hit { return .alreadyFresh } // another process stored it meanwhile
            if response.cacheStatusMember.stored || response.storeSettlement.isCommitted
                || response.cacheStatus == .revalidated
            {
                return .stored
            }
            let status = Int(response.status.code)
            if status >= 400 { return .failed("http-\(status)") }
            if let detail = response.cacheStatusMember.detail { return .notStorable(detail) }
            if bytes > settings.cache.maximumEntrySizeBytes || bytes > settings.client.maximumBodyBytes {
                return .notStorable("too-large")
            }
            return .notStorable(status == 200 ? "not-stored" : "status-\(status)")
        } catch {
            if Task.isCancelled { return .interrupted }
            return .failed(Self.reason(for: error))
        }
    }

    /// A short name for why a fetch failed.
    static func reason(for error: any Error) -> String {
        if let error = error as? HTTPClientError {
            switch error {
            case .connectTimeout: return "connect-timeout"
            case .deadlineExceeded, .readTimeout: return "timeout"
            case .remoteConnectionClosed: return "connection-closed"
            case .cancelled: return "cancelled"
            default: break
            }
        }
        if error is CachingHTTPClientError { return "invalid-url" }
        if error is NIOConnectionError || error is ChannelError { return "connect" }
        let text = String(describing: error).lowercased()
        if text.contains("connect") || text.contains("refused") { return "connect" }
        if text.contains("timeout") || text.contains("timed out") { return "timeout" }
        return "error"
    }

    /// A sitemap's text, read from a file or fetched (not cached) from an http(s) URL.
    /// - Throws: what reading the file or the fetch throws; ``WarmInputError`` for a status
    ///   other than 200.
    package func sitemapText(_ location: String) async throws -> String {
        let lowered = location.lowercased()
        guard lowered.hasPrefix("http://") || lowered.hasPrefix("https://") else {
            return try String(contentsOfFile: location, encoding: .utf8)
        }
        let response = try await httpClient.execute(HTTPClientRequest(url: location), timeout: settings.timeout)
        guard response.status == .ok else {
            throw WarmInputError.sitemapStatus(location, Int(response.status.code))
        }
        var body = try await response.body.collect(upTo: 64 << 20)
        return body.readString(length: body.readableBytes) ?? ""
    }

    /// The page URLs of the sitemap at `location`; a sitemap index is followed one level (its
    /// sitemaps' own `<sitemapindex>` entries are not followed further). Origin-form locations
    /// (`/page`) are resolved against `base`, or else against the origin of a sitemap fetched
    /// over http(s); others without a scheme are left out.
    package func sitemapURLs(_ location: String, base: String?) async throws -> [String] {
        func resolved(_ locations: [String], from sitemap: String) -> [String] {
            locations.compactMap { WarmURLList.resolve($0, against: base ?? Self.origin(of: sitemap)) }
        }
        let top = WarmSitemap(parsing: try await sitemapText(location))
        guard top.isIndex else { return resolved(top.locations, from: location) }
        var urls: [String] = []
        for child in resolved(top.locations, from: location) {
            let sitemap = WarmSitemap(parsing: try await sitemapText(child))
            if !sitemap.isIndex { urls += resolved(sitemap.locations, from: child) }
        }
        return urls
    }

    /// `scheme://authority` of an http(s) URL; `nil` for a file path.
    static func origin(of location: String) -> String? {
        guard let components = URLComponents(string: location), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = components.percentEncodedHost
        else { return nil }
        return "\(scheme)://\(host)" + (components.port.map { ":\($0)" } ?? "")
    }
}

/// Why `urlcache warm` could not read an input.
package enum WarmInputError: Error, CustomStringConvertible {
    /// A sitemap URL answered with another status than 200.
    case sitemapStatus(String, Int)

    package var description: String {
        switch self {
        case .sitemapStatus(let url, let status): "sitemap \(url) answered \(status)"
        }
    }
}
