import CacheEntryFormat
import Testing

/// The stored response head (docs/Formats.md, "The head"): it round-trips, and every truncation,
/// other version, hostile count or flipped bit decodes to nil (a miss), never a trap.
@Suite("Response head codec")
struct ResponseHeadCodecTests {
    static let sample = ResponseHead(
        kind: .http, statusCode: 200, expectedContentLength: 1234, url: "https://api.example.com/a?b=c",
        mimeType: nil, textEncodingName: "utf-8",
        headerFields: [
            .init(name: "Content-Type", value: "application/json"), .init(name: "Vary", value: "Accept-Language"),
        ],
        varyRequestFields: [.init(name: "accept-language", value: "en, fr")])

    @Test func headRoundTrips() {
        #expect(ResponseHead(decoding: Self.sample.encoded()) == Self.sample)
        var plain = Self.sample
        plain.kind = .plain
        plain.expectedContentLength = -1
        plain.mimeType = "text/plain"
        plain.headerFields = []
        #expect(ResponseHead(decoding: plain.encoded()) == plain)
        #expect(
            VarySpec(decoding: VarySpec(names: ["accept", "accept-language"]).encoded())?.varyValue
                == "accept, accept-language")
    }

    /// Strings decode as UTF-8 whether they are ASCII (the fast path) or not, and a string that
    /// is not UTF-8 makes the head a miss.
    @Test func stringsAreValidatedUTF8() {
        var head = Self.sample
        head.headerFields.append(.init(name: "Content-Disposition", value: "attachment; filename=\"résumé.pdf\""))
        #expect(ResponseHead(decoding: head.encoded()) == head)
        var bytes = head.encoded()
        let accent = bytes.firstIndex(of: 0xC3)!
        bytes[accent] = 0xFF // no UTF-8 sequence starts with 0xFF
        #expect(ResponseHead(decoding: bytes) == nil)
        bytes[accent] = 0x80 // a continuation byte without its lead byte
        #expect(ResponseHead(decoding: bytes) == nil)
    }

    @Test func everyTruncationIsRejected() {
        let bytes = Self.sample.encoded()
        for length in 0..<bytes.count {
            #expect(ResponseHead(decoding: Array(bytes.prefix(length))) == nil, "prefix \(length)")
        }
        #expect(ResponseHead(decoding: bytes + [0]) == nil)
        let spec = VarySpec(names: ["accept"]).encoded()
        for length in 0..<spec.count { #expect(VarySpec(decoding: Array(spec.prefix(length))) == nil) }
    }

    @Test func otherVersionsAndHostileCountsAreRejected() {
        var bytes = Self.sample.encoded()
        bytes[2] = 2 // format version
        #expect(ResponseHead(decoding: bytes) == nil)
        // magic, version, kind, status, length, empty URL, no MIME, no encoding, then 2^32-1 headers
        let hostile: [UInt8] =
            [0x52, 0x48, 1, 1, 0, 200] + [UInt8](repeating: 0, count: 8) + [0, 0, 0, 0] + [0, 0]
            + [0xFF, 0xFF, 0xFF, 0xFF]
        #expect(ResponseHead(decoding: hostile) == nil)
    }

    @Test func bitFlipsNeverCrash() {
        let bytes = Self.sample.encoded()
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<5000 {
            var damaged = bytes
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                damaged[Int.random(in: 0..<damaged.count, using: &generator)] ^= UInt8.random(
                    in: 1...255, using: &generator)
            }
            _ = ResponseHead(decoding: damaged) // nil or a head; never a trap
        }
    }
}
