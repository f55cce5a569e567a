import CachingProxy
import Foundation
import LoopbackOrigin
import NIOCore
import Testing
import TestProcess

/// Who may use the admin surfaces of a real `urlcache proxy` process: `PURGE` and `/metrics`
/// answer the address ranges `--purge-from` and `--metrics-from` list, since behind a local TLS
/// terminator every client arrives from loopback.
@Suite(.blockingWaits, .timeLimit(.minutes(10)))
struct ProxyAdminAccessTests {
    @Test("address ranges: CIDR and single addresses, IPv4, IPv6 and IPv4 mapped into IPv6")
    func ranges() throws {
        let ranges = try AddressRanges(["10.0.0.0/8", "192.168.1.7", "fd00::/8", "127.0.0.0/8"])
        func inRanges(_ text: String, _ ranges: AddressRanges) -> Bool {
            ranges.contains(try? SocketAddress(ipAddress: text, port: 1))
        }
        #expect(inRanges("10.200.3.4", ranges) && !inRanges("11.0.0.1", ranges))
        #expect(inRanges("192.168.1.7", ranges) && !inRanges("192.168.1.8", ranges))
        #expect(inRanges("fd12::1", ranges) && !inRanges("fe80::1", ranges))
        #expect(inRanges("::ffff:127.0.0.1", ranges))
        #expect(!ranges.contains(nil))
        #expect(inRanges("::1", .loopback) && !inRanges("::2", .loopback))
        for bad in ["10.0.0.0/33", "nonsense", "::1/129", "10.0.0.0/x"] {
            #expect(throws: ProxyConfigurationError.self) { _ = try AddressRanges([bad]) }
        }
    }

    @Test("PURGE from loopback is refused when --purge-from lists other addresses, and allowed when it lists loopback")
    func purgeFrom() async throws {
        let origin = try LoopbackOrigin { _, _ in
            LoopbackOrigin.Response(status: 200, headers: [("Cache-Control", "max-age=600")], body: "stored")
        }
        defer { origin.stop() }
        let elsewhere = try await ProxyProcess.start(upstream: origin.url, ["--purge-from", "10.0.0.0/8"])
        _ = try await elsewhere.send("/item")
        #expect(try await elsewhere.send("/item", method: "PURGE").status == 403)
        #expect(try await elsewhere.send("/item").cacheStatus == "HIT", "nothing was purged")
        #expect(try await elsewhere.stop().status == 0)

        let here = try await ProxyProcess.start(upstream: origin.url, ["--purge-from", "127.0.0.1/32"])
        _ = try await here.send("/item")
        let purged = try await here.send("/item", method: "PURGE")
        #expect(purged.status == 200 && purged.text.contains("\"purged\":1"))
        #expect(try await here.stop().status == 0)
    }

    @Test("/metrics answers 403 to a client outside --metrics-from")
    func metricsFrom() async throws {
        let origin = try LoopbackOrigin { _, _ in LoopbackOrigin.Response(status: 200, body: "fine") }
        defer { origin.stop() }
        for (ranges, expected) in [("10.0.0.0/8", 403), ("127.0.0.0/8", 200)] {
            let metricsPort = LoopbackSocket.freePort()
            let proxy = try await ProxyProcess.start(
                upstream: origin.url, ["--metrics-listen", "127.0.0.1:\(metricsPort)", "--metrics-from", ranges])
            let connection = try await RawConnection.open(port: metricsPort)
            let answer = try await connection.exchange("GET", "/metrics")
            connection.close()
            #expect(answer.status == expected, "\(ranges)")
            #expect(try await proxy.stop().status == 0)
        }
    }
}
