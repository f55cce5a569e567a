#if canImport(CachingProxy)
import ArgumentParser
import CacheMaintenance
import CachingProxy
import Dispatch
import Foundation
import Synchronization

/// `urlcache warm DIR --urls FILE | --access-log FILE | --sitemap FILE-OR-URL`: fetches URLs
/// into the directory through the proxy's caching flow, so a new host or a fresh deploy starts
/// with the entries its clients will ask for.
struct Warm: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Fetch a list of URLs into the cache through the proxy's caching flow.",
        discussion: """
            URLs come from a file (one per line), an access log in the common or combined format \
            (GETs answered 200) or a sitemap (a file or an http(s) URL; a sitemap index is followed \
            one level); origin-form targets (/path) are resolved against --base, the proxy's upstream. \
            Each URL is stored as `urlcache proxy` would store it (same directory, partition, keys, \
            freshness, Vary and storage rules; concurrent fetches of one URL are collapsed across \
            processes). Entries already fresh are skipped, so a rerun resumes. SIGINT or SIGTERM: \
            abandon the fetches in flight, print the summary, exit 130. Exit 1 when some URL failed.
            """)

    @OptionGroup var options: CacheDirectoryOptions
    @Option(help: "A file of URLs, one per line (# comments); repeatable.") var urls: [String] = []
    @Option(help: "An access log (common or combined format): its GETs answered 200; repeatable.")
    var accessLog: [String] = []
    @Option(help: "A sitemap.xml file or http(s) URL (<loc> elements; an index is followed one level); repeatable.")
    var sitemap: [String] = []
    @Option(help: "The origin that origin-form targets (/path?query) are resolved against: the proxy's --upstream.")
    var base: String?
    @Option(help: "The partition of the entries (default: the shared default partition, as the proxy's).")
    var partition: String?
    @Option(help: "Fetches at once.") var concurrency = 8
    @Option(help: "Origin requests per second, held across every fetch (default: no limit).") var rate: Double?
    @Option(help: "Requests the rate limit lets through at once after a pause.") var burst = 1
    @Option(help: "Seconds allowed for each URL's answer, body included.") var timeout = 60
    @Option(help: "Seconds allowed to connect to the origin.") var connectTimeout = 3
    @Option(help: "A request field sent with every fetch, \"Name: value\" (selects Vary variants); repeatable.")
    var header: [String] = []
    @Option(help: "Disk capacity of the entries (a store past it evicts the least recently used).")
    var diskCapacity = "1GiB"
    @Option(help: "The largest entry stored (default: what the store takes, as the proxy's).") var maxEntrySize: String?
    @Option(help: "Targeted cache-control fields obeyed before Cache-Control, in order (\"\" for none).")
    var targetedCacheControl = "CDN-Cache-Control"
    @Option(help: "Add this request field to every stored response's key, as the proxy's --key-header.")
    var keyHeader: [String] = []
    @Flag(help: "Print the summary as one JSON object.") var json = false

    func validate() throws {
        if urls.isEmpty && accessLog.isEmpty && sitemap.isEmpty {
            throw ValidationError("give at least one of --urls, --access-log or --sitemap")
        }
        guard concurrency > 0 else { throw ValidationError("--concurrency must be positive") }
        if let rate, !(rate > 0) { throw ValidationError("--rate must be positive") }
        guard burst > 0 else { throw ValidationError("--burst must be positive") }
        guard timeout > 0, connectTimeout > 0 else { throw ValidationError("timeouts must be positive") }
        for line in header where Self.field(line) == nil {
            throw ValidationError("--header: not \"Name: value\": \(line)")
        }
        do { _ = try ProxyConfiguration.fieldNames(targetedCacheControl) } catch {
            throw ValidationError(error.description)
        }
        for name in keyHeader {
            do { _ = try ProxyConfiguration.fieldNames(name) } catch { throw ValidationError(error.description) }
        }
        if let base, WarmURLList.resolve("/", against: base) == nil || !base.contains("://") {
            throw ValidationError("--base: not an http(s) URL: \(base)")
        }
    }

    private static func field(_ line: String) -> (name: String, value: String)? {
        guard let colon = line.firstIndex(of: ":") else { return nil }
        let name = line[..<colon].trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty, (try? ProxyConfiguration.fieldNames(name))?.count == 1 else { return nil }
        return (name, line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
    }

    func run() throws {
        var proxy = ProxyConfiguration(mode: .forward)
        proxy.client.partition = partition
        proxy.targetedCacheControl = try ProxyConfiguration.fieldNames(targetedCacheControl)
        proxy.keyHeaders = try keyHeader.flatMap { try ProxyConfiguration.fieldNames($0) }
        var settings = CacheWarmer.Settings(
            cache: ProxyCacheSettings(
                directory: options.resolved, memoryCapacityBytes: 0,
                diskCapacityBytes: try SizeLimit(diskCapacity).resolved(of: 0),
                maximumEntrySizeBytes: try maxEntrySize.map { try SizeLimit($0).resolved(of: 0) }
                    ?? ProxyCacheSettings.storeLimitBytes))
        settings.client = proxy.client
        settings.concurrency = concurrency
        settings.rate = rate
        settings.burst = burst
        settings.timeout = .seconds(Int64(timeout))
        settings.connectTimeout = .seconds(Int64(connectTimeout))
        settings.headers = header.compactMap(Self.field)
        let warmer = try CacheWarmer(settings: settings)

        let inputs = (urls: urls, accessLog: accessLog, sitemap: sitemap, base: base)
        let json = json
        let outcome = Mutex<Result<WarmSummary, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let work = Task {
            defer { done.signal() }
            do {
                let list = try await Self.readURLs(inputs, warmer: warmer)
                let progress = Task { await Self.showProgress(of: warmer, quiet: json) }
                let summary = await warmer.run(urls: list)
                progress.cancel()
                await progress.value
                outcome.withLock { $0 = .success(summary) }
            } catch {
                outcome.withLock { $0 = .failure(error) }
            }
            await warmer.shutdown()
        }
        // SIGINT (a terminal's ^C) and SIGTERM (a deploy script's timeout): stop and summarise.
        let sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { work.cancel() }
            source.resume()
            return source
        }
        done.wait()
        for source in sources { source.cancel() }
        let summary = try outcome.withLock { $0! }.get()
        print(json ? ReportEncoding.json(summary) : summary.text)
        if summary.stoppedBySignal { throw ExitCode(130) }
        if !summary.failed.isEmpty { throw ExitCode(ExitStatus.findings.rawValue) }
    }

    /// Every input's URLs, in the order the options list them.
    private static func readURLs(
        _ inputs: (urls: [String], accessLog: [String], sitemap: [String], base: String?), warmer: CacheWarmer
    ) async throws -> [String] {
        var list: [String] = []
        for file in inputs.urls {
            list += WarmURLList.urls(in: try String(contentsOfFile: file, encoding: .utf8), base: inputs.base)
        }
        for file in inputs.accessLog {
            list += WarmAccessLog.urls(in: try String(contentsOfFile: file, encoding: .utf8), base: inputs.base)
        }
        for location in inputs.sitemap {
            list += try await warmer.sitemapURLs(location, base: inputs.base)
        }
        return list
    }

    /// A progress line on a terminal (redrawn five times a second), a plain line every 5 s
    /// otherwise (a log file or a CI job); nothing with --json's quiet.
    private static func showProgress(of warmer: CacheWarmer, quiet: Bool) async {
        let terminal = isatty(STDERR_FILENO) != 0
        let line = ProgressLine(enabled: terminal && !quiet)
        let started = ContinuousClock.now
        var lastPlain = started
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(200))
            let totals = warmer.progress
            let elapsed = ContinuousClock.now - started
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            let rate = seconds > 0 ? Double(totals.done) / seconds : 0
            let left = totals.urls - totals.done
            let eta = rate > 0 ? "\(Int((Double(left) / rate).rounded()))s" : "?"
            let text =
                "warm: \(totals.done)/\(totals.urls) (\(totals.stored) stored, \(totals.alreadyFresh) fresh, "
                + "\(totals.failed.values.reduce(0, +)) failed), \(String(format: "%.1f", rate))/s, ETA \(eta)"
            if terminal {
                line.update(text)
            } else if !quiet, ContinuousClock.now - lastPlain >= .seconds(5) {
                lastPlain = ContinuousClock.now
                FileHandle.standardError.write(Data((text + "\n").utf8))
            }
        }
        line.finish()
    }
}
#endif
