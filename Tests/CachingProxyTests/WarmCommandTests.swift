import Foundation
import LoopbackOrigin
import SharedURLCacheStore
import Synchronization
import Testing
import TestProcess

/// The real `urlcache warm` process against a loopback origin: what it stores and skips, the
/// rate it holds, sitemaps over HTTP, and SIGINT. Serialized: the rate test measures time.
@Suite(.blockingWaits, .serialized, .timeLimit(.minutes(10)))
struct WarmCommandTests {
    /// The summary `urlcache warm --json` prints.
    struct Summary {
        let object: [String: Any]
        init(_ text: String) throws {
            let line = text.split(separator: "\n").last(where: { $0.hasPrefix("{") }) ?? ""
            object = try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        }
        func int(_ key: String) -> Int { object[key] as? Int ?? -1 }
        func reasons(_ key: String) -> [String: Int] { object[key] as? [String: Int] ?? [:] }
    }

    /// An origin that serves `/page/N` fresh for 10 minutes, `/nostore`, `/private` and `/gone`
    /// (404), and records when each request came.
    final class Origin: Sendable {
        /// When each request arrived (a class, so the origin's handler can share it).
        final class Arrivals: Sendable {
            let times = Mutex<[ContinuousClock.Instant]>([])
        }
        let server: LoopbackOrigin
        let arrivals = Arrivals()
        init(delay: Duration = .zero) throws {
            let arrivals = self.arrivals
            server = try LoopbackOrigin { request, _ in
                arrivals.times.withLock { $0.append(.now) }
                if delay > .zero { Thread.sleep(forTimeInterval: Double(delay.components.attoseconds) / 1e18) }
                switch request.target {
                case "/nostore": return .init(status: 200, headers: [("Cache-Control", "no-store")], body: "x")
                case "/private":
                    return .init(status: 200, headers: [("Cache-Control", "private, max-age=60")], body: "p")
                case "/gone": return .init(status: 404, headers: [("Cache-Control", "no-store")], body: "")
                default:
                    return .init(
                        status: 200, headers: [("Cache-Control", "max-age=600")], body: "body of \(request.target)")
                }
            }
        }
        deinit { server.stop() }
        var url: String { server.url }
        func count(_ target: String) -> Int { server.requests.filter { $0.target == target }.count }
    }

    private func warm(_ arguments: [String]) async throws -> ChildProcess.Outcome {
        try await runBlocking { try ChildProcess.run(ChildProcess.builtExecutable("urlcache"), ["warm"] + arguments) }
    }

    @Test(
        "warm stores fresh responses, reports no-store, private and a 404 by reason, and a rerun finds them fresh without asking the origin"
    )
    func storesThenSkips() async throws {
        let origin = try Origin()
        let directory = TemporaryDirectory(prefix: "suc-warm")
        let cache = directory.root + "/cache"
        let pages = (0..<12).map { "/page/\($0)" }
        let list = directory.root + "/urls.txt"
        try (["# warm list"] + pages + ["/nostore", "/private", "/gone", "/page/0"]).joined(separator: "\n")
            .write(toFile: list, atomically: true, encoding: .utf8)

        let first = try await warm([cache, "--urls", list, "--base", origin.url, "--json"])
        #expect(first.status == 1, "a 404 is a failure: \(first.err)") // exit 1: some URL failed
        let summary = try Summary(first.out)
        #expect(summary.int("urls") == 15)
        #expect(summary.int("stored") == 12)
        #expect(summary.int("already_fresh") == 0)
        #expect(summary.reasons("not_storable") == ["response-no-store": 1, "private": 1], "\(first.out)")
        #expect(summary.reasons("failed") == ["http-404": 1], "\(first.out)")
        #expect(origin.server.requestCount == 15)
        let store = try CacheStore(directory: cache)
        #expect(try store.statistics().entries == 12)

        // A rerun: the fresh pages cost no origin request; the others are asked again.
        let second = try await warm([cache, "--urls", list, "--base", origin.url, "--json"])
        let again = try Summary(second.out)
        #expect(again.int("already_fresh") == 12, "\(second.out)")
        #expect(again.int("stored") == 0)
        #expect(again.int("origin_requests") == 3)
        #expect(pages.allSatisfy { origin.count($0) == 1 })
        #expect(origin.server.requestCount == 18)
    }

    @Test("warm holds --rate across its concurrent fetches: 20 URLs at 10/s take at least 1.5 s")
    func holdsTheRate() async throws {
        let origin = try Origin()
        let directory = TemporaryDirectory(prefix: "suc-warm-rate")
        let list = directory.root + "/urls.txt"
        try (0..<20).map { "/page/\($0)" }.joined(separator: "\n").write(
            toFile: list, atomically: true, encoding: .utf8)

        let outcome = try await warm([
            directory.root + "/cache", "--urls", list, "--base", origin.url, "--rate", "10", "--concurrency", "8",
            "--json",
        ])
        #expect(outcome.status == 0, "\(outcome.err)")
        #expect(try Summary(outcome.out).int("stored") == 20)
        let times = origin.arrivals.times.withLock { $0 }.sorted()
        #expect(times.count == 20)
        // With a burst of 1 the 20th request may start 1.9 s after the first; without the
        // limit, 8 fetches at a time on loopback take milliseconds.
        let span = times.last! - times.first!
        #expect(span >= .milliseconds(1500), "\(span)")
        // And no window held more than rate × window + burst (+1 for timer slack).
        for (index, start) in times.enumerated() {
            let window = Duration.milliseconds(500)
            let inWindow = times[index...].prefix { $0 - start < window }.count
            #expect(inWindow <= 5 + 1 + 1, "\(inWindow) requests within 500 ms")
        }
    }

    @Test("warm follows a sitemap index served over HTTP one level, into a partition")
    func sitemapOverHTTP() async throws {
        let origin = try LoopbackOrigin { request, _ in
            switch request.target {
            case "/sitemap.xml":
                return .init(
                    status: 200, headers: [("Content-Type", "application/xml")],
                    body: "<sitemapindex><sitemap><loc>/sitemap-1.xml</loc></sitemap></sitemapindex>")
            case "/sitemap-1.xml":
                return .init(status: 200, body: "<urlset><url><loc>/a</loc></url><url><loc>/b</loc></url></urlset>")
            default:
                return .init(status: 200, headers: [("Cache-Control", "max-age=600")], body: "page \(request.target)")
            }
        }
        defer { origin.stop() }
        // A local sitemap with absolute URLs, then an index over HTTP whose <loc>s are relative:
        // they resolve against the sitemap's own origin.
        let directory = TemporaryDirectory(prefix: "suc-warm-sitemap")
        let local = directory.root + "/sitemap.xml"
        try "<urlset><url><loc>\(origin.url)/a</loc></url><url><loc>\(origin.url)/b</loc></url></urlset>"
            .write(toFile: local, atomically: true, encoding: .utf8)
        let fromFile = try await warm([
            directory.root + "/cache", "--sitemap", local, "--partition", "site", "--json",
        ])
        #expect(fromFile.status == 0, "\(fromFile.err)")
        #expect(try Summary(fromFile.out).int("stored") == 2)

        let overHTTP = try await warm([
            directory.root + "/cache", "--sitemap", origin.url + "/sitemap.xml", "--partition", "site", "--json",
        ])
        #expect(try Summary(overHTTP.out).int("already_fresh") == 2, "\(overHTTP.out) \(overHTTP.err)")
        #expect(origin.requests.map(\.target).sorted() == ["/a", "/b", "/sitemap-1.xml", "/sitemap.xml"])
        let store = try CacheStore(directory: directory.root + "/cache")
        var partitions = Set<String>()
        try store.forEachRecord {
            partitions.insert(String(decoding: $0.partition, as: UTF8.self)); return true
        }
        #expect(partitions == ["site"])
    }

    @Test("SIGINT stops warm: it prints the summary and exits 130, and a rerun finishes the rest")
    func sigintThenResume() async throws {
        let origin = try Origin(delay: .milliseconds(200))
        let directory = TemporaryDirectory(prefix: "suc-warm-sigint")
        let cache = directory.root + "/cache"
        let list = directory.root + "/urls.txt"
        try (0..<40).map { "/page/\($0)" }.joined(separator: "\n").write(
            toFile: list, atomically: true, encoding: .utf8)

        let child = try ChildProcess(
            ChildProcess.builtExecutable("urlcache"),
            ["warm", cache, "--urls", list, "--base", origin.url, "--concurrency", "2", "--json"])
        let started = try await runBlocking { waitUntil(within: .seconds(60)) { origin.server.requestCount >= 4 } }
        #expect(started)
        kill(child.pid, SIGINT)
        let outcome = try await runBlocking { child.finish(deadline: 60) }
        #expect(outcome.status == 130, "\(outcome.err)")
        let stopped = try Summary(outcome.out)
        #expect(stopped.object["stopped_by_signal"] as? Bool == true)
        let storedFirst = stopped.int("stored")
        #expect(storedFirst >= 1 && storedFirst < 40, "\(outcome.out)")
        #expect(stopped.int("not_started") > 0)

        let rerun = try await warm([cache, "--urls", list, "--base", origin.url, "--concurrency", "8", "--json"])
        #expect(rerun.status == 0, "\(rerun.err)")
        let resumed = try Summary(rerun.out)
        #expect(resumed.int("already_fresh") == storedFirst, "\(rerun.out)")
        #expect(resumed.int("stored") == 40 - storedFirst)
    }
}
