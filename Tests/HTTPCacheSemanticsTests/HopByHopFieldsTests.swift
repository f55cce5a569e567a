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

@Suite("The names a Connection field lists (RFC 9110 §7.6.1)")
struct ConnectionListedNamesTests {
    static let table: Set<String> = Set(HopByHopFieldsTests.hopByHop.map { $0.lowercased() })

    @Test("OWS and empty members skipped, names lowercased, the table's own names in any case add nothing")
    func listedNames() {
        let lines = [" KEEP-alive,\tX-Foo ,, close\t", "x-BAR", ",", "TE, Upgrade"]
        let expected = Self.table.union(["x-foo", "close", "x-bar"])
        #expect(HopByHopFields.names(listedIn: lines) == expected)
        #expect(HopByHopFields.names(in: fields(lines.map { ("Connection", $0) })) == expected)
    }

    @Test("without Connection, or with only the table's names, the table alone")
    func tableAlone() {
        #expect(HopByHopFields.names(listedIn: [String]()) == Self.table)
        #expect(HopByHopFields.names(listedIn: ["Keep-Alive", "keep-alive, TRANSFER-ENCODING"]) == Self.table)
    }

    @Test("a name one letter off a table name is listed, not taken for it")
    func nearMisses() {
        let names = HopByHopFields.names(listedIn: ["keep-alivf, keep-aliv, xkeep-alive"])
        #expect(names == Self.table.union(["keep-alivf", "keep-aliv", "xkeep-alive"]))
    }
}
