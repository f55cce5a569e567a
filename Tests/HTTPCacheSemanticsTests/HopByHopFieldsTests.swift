import HTTPCacheSemantics
import HTTPTypes
import Testing

@Suite("Hop-by-hop fields (RFC 9110 §7.6.1)")
struct HopByHopFieldsTests {
    static let hopByHop = [
        "Connection", "Keep-Alive", "TE", "Transfer-Encoding", "Upgrade", "Proxy-Connection",
        "Proxy-Authenticate", "Proxy-Authorization", "Trailer",
    ]

    @Test("hop-by-hop-stripped [RFC 9110 §7.6.1]", arguments: hopByHop)
    func stripsFixedTable(_ name: String) {
        let stripped = HopByHopFields.removing(from: fields([(name, "x"), ("Content-Type", "text/plain")]))
        #expect(!stripped.contains(HTTPField.Name(name)!))
        #expect(stripped[.contentType] == "text/plain")
    }

    @Test("hop-by-hop-connection-named-fields [RFC 9110 §7.6.1]")
    func stripsConnectionNamed() {
        let stripped = HopByHopFields.removing(
            from: fields([
                ("Connection", "X-A, x-b"), ("Connection", "X-C"), ("X-A", "1"), ("X-B", "2"), ("X-C", "3"),
                ("X-D", "4"),
            ]))
        #expect(stripped == fields([("X-D", "4")]))
    }
}
