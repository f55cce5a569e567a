import AsyncHTTPClient
import Foundation
import HTTPCacheSemantics
import LoopbackOrigin
import SharedURLCache
import SharedURLCacheAsyncHTTPClient
import Synchronization
import Testing
import TestProcess
import VarnishParent

/// `CachingHTTPClient` as a child of a tier of real Varnish parents on loopback (two
/// varnishd processes in front of the loopback origin). Children are clients with directories of
/// their own, as separate hosts would have. varnishd must be installed (CI installs it); without
/// it these tests fail with `VarnishParent.NotInstalled`, they are not skipped.
@Suite(.blockingWaits, .serialized, .timeLimit(.minutes(5)))
struct ParentTierTests {
    static func objects(_ origin: LoopbackOrigin.Request, _ index: Int) -> LoopbackOrigin.Response {
        LoopbackOrigin.Response(
            status: 200, headers: [("Cache-Control", "max-age=60")], body: "object \(origin.target)")
    }

    @Test("objects spread over both parents by hash; three children send each object to the origin once")
    func spreadAndOncePerObject() async throws {
        let objectCount = 40
        let fixture = try ParentTierFixture(Self.objects)
        let children = try (1...3).map { try fixture.child("child\($0)") }
        var byParent: [String: Int] = [:]
        for child in children {
            for n in 0..<objectCount {
                let url = fixture.origin.url + "/objects/\(n)"
                let answer = try await AHCTest.get(child, url)
                #expect(answer.status == 200 && answer.text == "object /objects/\(n)")
                let parent = answer.response.headers.first(name: "X-Parent") ?? "none"
                #expect(parent == fixture.owner(of: url), "\(url) came through \(parent)")
                byParent[parent, default: 0] += 1
            }
        }
        for n in 0..<objectCount { #expect(fixture.originRequests(for: "/objects/\(n)") == 1) }
        #expect(fixture.origin.requestCount == objectCount)
        #expect((byParent["p1"] ?? 0) > 0 && (byParent["p2"] ?? 0) > 0, "one parent took every object: \(byParent)")

        // The same workload on three children without parents, against a fresh origin.
        let direct = try LoopbackOrigin(Self.objects)
        defer { direct.stop() }
        let lone = try (1...3).map { try fixture.child("lone\($0)", parents: false) }
        for child in lone {
            for n in 0..<objectCount { _ = try await AHCTest.get(child, direct.url + "/objects/\(n)") }
        }
        #expect(direct.requestCount == 3 * objectCount)
        print(
            "origin requests, 3 children x \(objectCount) objects: with 2 Varnish parents \(fixture.origin.requestCount), without parents \(direct.requestCount); answers through p1 \(byParent["p1"] ?? 0), p2 \(byParent["p2"] ?? 0)"
        )
    }

    @Test("a killed parent: its keys go through the other one, no client error")
    func oneParentKilled() async throws {
        let fixture = try ParentTierFixture(Self.objects)
        let first = try fixture.child("first")
        let urls = (0..<16).map { fixture.origin.url + "/objects/\($0)" }
        for url in urls { _ = try await AHCTest.get(first, url) }
        let ownedByP1 = urls.filter { fixture.owner(of: $0) == "p1" }
        #expect(!ownedByP1.isEmpty && ownedByP1.count < urls.count)
        fixture.parents[0].stop() // p1

        let second = try fixture.child("second")
        for url in urls {
            let answer = try await AHCTest.get(second, url)
            #expect(answer.status == 200 && answer.text == "object " + URL(string: url)!.path)
            #expect(answer.response.headers.first(name: "X-Parent") == "p2")
        }
        // p2 fetched p1's objects once each; its own came from its cache.
        #expect(fixture.origin.requestCount == urls.count + ownedByP1.count)
    }

    @Test("both parents killed: requests go direct to the origin (fallback direct), or fail (fallback fail)")
    func bothParentsKilled() async throws {
        let fixture = try ParentTierFixture(Self.objects)
        fixture.parents.forEach { $0.stop() }
        let child = try fixture.child("child")
        for n in 0..<4 {
            let answer = try await AHCTest.get(child, fixture.origin.url + "/objects/\(n)")
            #expect(answer.status == 200 && answer.response.headers.first(name: "X-Parent") == nil)
            #expect(answer.response.cacheStatusMember.forward == .uriMiss)
        }
        #expect(fixture.origin.requestCount == 4)

        var configuration = CachingHTTPClient.Configuration()
        configuration.parents = try ParentTier(fixture.parents.map(\.url), fallback: .fail)
        let strict = try CachingHTTPClient(
            cache: try fixture.cache("strict"), httpClient: AHCTest.httpClient,
            configuration: configuration)
        await #expect(throws: CachingHTTPClientError.parentsUnavailable) {
            _ = try await AHCTest.get(strict, fixture.origin.url + "/objects/9")
        }
        #expect(fixture.origin.requestCount == 4)
    }

    @Test("origin and parents down: stale within stale-if-error, and Cache-Status says why")
    func staleWhenTierAndOriginAreDown() async throws {
        let fixture = try ParentTierFixture { request, _ in
            let control = request.target == "/sie" ? "max-age=10, stale-if-error=600" : "max-age=10, must-revalidate"
            return LoopbackOrigin.Response(status: 200, headers: [("Cache-Control", control)], body: "stored")
        }
        let offset = Atomic<Int>(0) // seconds added to the child's clock
        let child = try fixture.child("child") {
            Date().addingTimeInterval(TimeInterval(offset.load(ordering: .relaxed)))
        }
        var failing = CachingHTTPClient.Configuration()
        failing.parents = try ParentTier(fixture.parents.map(\.url), fallback: .fail)
        failing.caching.now = { Date().addingTimeInterval(TimeInterval(offset.load(ordering: .relaxed))) }
        let strictChild = try CachingHTTPClient(
            cache: try fixture.cache("strict"), httpClient: AHCTest.httpClient, configuration: failing)
        _ = try await AHCTest.get(child, fixture.origin.url + "/sie")
        _ = try await AHCTest.get(child, fixture.origin.url + "/strict")
        _ = try await AHCTest.get(strictChild, fixture.origin.url + "/sie")
        offset.store(60, ordering: .relaxed) // stale by 50 s, within stale-if-error
        fixture.parents.forEach { $0.stop() }
        // With fallback fail, parents down are enough: the origin is not asked.
        let noParent = try await AHCTest.get(strictChild, fixture.origin.url + "/sie")
        #expect(noParent.status == 200 && noParent.response.cacheStatus == .stale)
        #expect(noParent.response.cacheStatusMember.detail == "parents-down")
        fixture.origin.stop()

        let stale = try await AHCTest.get(child, fixture.origin.url + "/sie")
        #expect(stale.status == 200 && stale.text == "stored" && stale.response.cacheStatus == .stale)
        let member = stale.response.cacheStatusMember
        #expect(member.forward == .stale && member.forwardStatus == nil && member.detail == "parents-and-origin-down")
        #expect(member.fieldValue(cacheName: "urlcache").contains("detail=parents-and-origin-down"))
        // must-revalidate forbids stale, and past stale-if-error there is nothing to serve: 504s
        // that say the same.
        let forbidden = try await AHCTest.get(child, fixture.origin.url + "/strict")
        #expect(forbidden.status == 504 && forbidden.response.cacheStatusMember.detail == "parents-and-origin-down")
        offset.store(700, ordering: .relaxed)
        let expired = try await AHCTest.get(child, fixture.origin.url + "/sie")
        #expect(expired.status == 504 && expired.response.cacheStatusMember.detail == "parents-and-origin-down")
    }

    @Test("Age end to end: the origin's Age, plus the parent's resident time, plus the child's")
    func ageAccumulates() async throws {
        let fixture = try ParentTierFixture { request, _ in
            LoopbackOrigin.Response(
                status: 200, headers: [("Cache-Control", "max-age=600"), ("Age", "100")], body: "aged")
        }
        let url = fixture.origin.url + "/aged"
        let first = try fixture.child("first")
        let started = Date()
        let miss = try await AHCTest.get(first, url)
        #expect(Self.age(miss) >= 100 && Self.age(miss) <= 102)
        // Real time: the Age added is what Varnish, a process with the machine's clock, counts.
        try await Task.sleep(for: .seconds(2))
        // A second host: a parent hit, aged by the time it spent in Varnish.
        let second = try await AHCTest.get(try fixture.child("second"), url)
        #expect(second.response.headers.first(name: "X-Parent") != nil)
        // A local hit on the first host: aged by the time it spent here.
        let hit = try await AHCTest.get(first, url)
        #expect(hit.response.cacheStatus == .hit)
        let elapsed = Int(Date().timeIntervalSince(started).rounded(.up))
        for answer in [second, hit] {
            #expect(Self.age(answer) >= 102 && Self.age(answer) <= 101 + elapsed + 1, "Age \(Self.age(answer))")
        }
        #expect(fixture.origin.requestCount == 1)
    }

    @Test("private and no-store reach the origin every time, s-maxage is stored at both levels, Vary stays per child")
    func semanticsAcrossTheTier() async throws {
        let fixture = try ParentTierFixture { request, _ in
            switch request.target {
            case "/private": return .init(headers: [("Cache-Control", "private, max-age=60")], body: "mine")
            case "/no-store": return .init(headers: [("Cache-Control", "no-store")], body: "never")
            case "/shared": return .init(headers: [("Cache-Control", "max-age=0, s-maxage=60")], body: "shared")
            default:
                let language = request.header("Accept-Language") ?? "none"
                return .init(
                    headers: [("Cache-Control", "max-age=60"), ("Vary", "Accept-Language")], body: "in \(language)")
            }
        }
        let children = try (1...3).map { try fixture.child("child\($0)") }
        for child in children {
            for target in ["/private", "/no-store", "/shared"] {
                #expect(try await AHCTest.get(child, fixture.origin.url + target).status == 200)
            }
        }
        #expect(fixture.originRequests(for: "/private") == 3)
        #expect(fixture.originRequests(for: "/no-store") == 3)
        #expect(fixture.originRequests(for: "/shared") == 1)

        let vary = fixture.origin.url + "/vary"
        let english = [("Accept-Language", "en")], german = [("Accept-Language", "de")]
        #expect(try await AHCTest.get(children[0], vary, headers: english).text == "in en")
        #expect(try await AHCTest.get(children[1], vary, headers: german).text == "in de")
        #expect(try await AHCTest.get(children[2], vary, headers: german).text == "in de") // the parent's variant
        #expect(try await AHCTest.get(children[2], vary, headers: english).text == "in en")
        let local = try await AHCTest.get(children[0], vary, headers: english)
        #expect(local.text == "in en" && local.response.cacheStatus == .hit)
        #expect(fixture.originRequests(for: "/vary") == 2)
    }

    @Test("purgeParents sends PURGE to every parent; the next child's request reaches the origin again")
    func purgeParents() async throws {
        let fixture = try ParentTierFixture(Self.objects)
        let url = fixture.origin.url + "/purged"
        let first = try fixture.child("first")
        _ = try await AHCTest.get(first, url)
        _ = try await AHCTest.get(try fixture.child("second"), url)
        #expect(fixture.originRequests(for: "/purged") == 1)

        let answers = try await first.purgeParents(of: url)
        #expect(answers.map(\.parent.description) == fixture.parents.map(\.url))
        #expect(answers.allSatisfy { $0.status == 200 }, "\(answers)")
        _ = try await AHCTest.get(try fixture.child("third"), url)
        #expect(fixture.originRequests(for: "/purged") == 2)
    }
}

extension ParentTierTests {
    @Test("a revalidation goes to the parent with the child's validator, and the parent's 304 refreshes the child")
    func revalidationThroughTheParent() async throws {
        let fixture = try ParentTierFixture { request, _ in
            if request.header("If-None-Match") == "\"v1\"" {
                return .init(status: 304, headers: [("ETag", "\"v1\""), ("Cache-Control", "max-age=60")])
            }
            return .init(headers: [("ETag", "\"v1\""), ("Cache-Control", "max-age=60")], body: "tagged")
        }
        let offset = Atomic<Int>(0) // the child's clock runs ahead; Varnish's copy stays fresh
        let child = try fixture.child("child") {
            Date().addingTimeInterval(TimeInterval(offset.load(ordering: .relaxed)))
        }
        let url = fixture.origin.url + "/tagged"
        _ = try await AHCTest.get(child, url)
        offset.store(120, ordering: .relaxed)
        let revalidated = try await AHCTest.get(child, url)
        #expect(revalidated.status == 200 && revalidated.text == "tagged")
        #expect(revalidated.response.cacheStatus == .revalidated)
        let member = revalidated.response.cacheStatusMember
        #expect(member.forward == .stale && member.forwardStatus == 304, "\(member)")
        #expect(fixture.origin.requestCount == 1) // Varnish answered the conditional request itself
    }

    @Test("collapsing holds per host: each child sends one request for concurrent misses, the tier one to the origin")
    func collapsingPerHost() async throws {
        let gate = OriginGate()
        let fixture = try ParentTierFixture { _, _ in
            gate.pass()
            return .init(headers: [("Cache-Control", "max-age=60")], body: "slow")
        }
        let children = try (1...3).map { try fixture.child("child\($0)") }
        let url = fixture.origin.url + "/slow"
        let answers = Task {
            try await withThrowingTaskGroup(of: AHCTest.Answer.self) { group in
                for child in children { for _ in 0..<4 { group.addTask { try await AHCTest.get(child, url) } } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        // Three followers wait behind each child's leader; the leaders' requests meet in Varnish,
        // which holds all but one of them on its waiting list (request coalescing).
        let queued = try await gate.open { children.allSatisfy { $0.requestsWaitingOnLeaders == 3 } }
        #expect(queued)
        let all = try await answers.value
        #expect(all.count == 12 && all.allSatisfy { $0.status == 200 && $0.text == "slow" })
        #expect(all.filter { $0.response.cacheStatusMember.collapsed == true }.count == 9)
        #expect(fixture.origin.requestCount == 1)
    }

    static func age(_ answer: AHCTest.Answer) -> Int {
        Int(answer.response.headers.first(name: "Age") ?? "") ?? -1
    }
}
