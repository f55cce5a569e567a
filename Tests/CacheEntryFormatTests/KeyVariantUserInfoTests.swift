import CacheEntryFormat
import Foundation
import Testing

/// The entry's key, variant and userInfo as the store keeps them: each round-trips, the key's
/// encoding is injective (fields carry their lengths), and damaged bytes decode to nil.
@Suite("Key, variant and userInfo codecs")
struct KeyVariantUserInfoTests {
    @Test("a key round-trips, and moving bytes between its fields gives another key")
    func keyRoundTripsAndIsInjective() throws {
        let key = KeyLayout.encode(partition: "tenant", method: "GET", urlParts: "https://a.test/", "x?y=1")
        let decoded = try #require(KeyLayout.decode(key))
        #expect(decoded.partition == "tenant" && decoded.method == "GET" && decoded.url == "https://a.test/x?y=1")
        let shifted = KeyLayout.encode(partition: "tenantG", method: "ET", urlParts: "https://a.test/x?y=1")
        #expect(shifted != key)
        #expect(
            KeyLayout.encode(partition: "", method: "GET", urlParts: "u")
                != KeyLayout.encode(
                    partition: "", method: "HEAD", urlParts: "u"))
        for length in 0..<key.count { #expect(KeyLayout.decode(Array(key.prefix(length))) == nil, "prefix \(length)") }
        #expect(KeyLayout.decode(key + [0]) == nil)
    }

    @Test("a variant round-trips, an absent field differs from an empty one, and every truncation is nil")
    func variantRoundTrips() throws {
        let fields = [
            VariantLayout.Field(name: "accept-language", value: "en, fr"),
            VariantLayout.Field(name: "accept-encoding", value: ""), VariantLayout.Field(name: "cookie", value: nil),
        ]
        let bytes = VariantLayout.encode(fields)
        #expect(VariantLayout.decode(bytes) == fields)
        var absent = fields
        absent[1].value = nil
        #expect(VariantLayout.encode(absent) != bytes)
        // No bytes at all are the empty variant (a response stored without Vary); any other
        // prefix is damage.
        #expect(VariantLayout.decode([]) == [])
        for length in 1..<bytes.count {
            #expect(VariantLayout.decode(Array(bytes.prefix(length))) == nil, "prefix \(length)")
        }
    }

    @Test("userInfo of property-list types round-trips; anything else is refused whole, garbage decodes to nil")
    func userInfoRoundTrips() throws {
        let info: [AnyHashable: Any] = ["n": 7, "s": "text", "b": true, "d": Data([1, 2]), "a": ["x", "y"]]
        let bytes = try #require(UserInfoCodec.encode(info))
        let back = try #require(UserInfoCodec.decode(bytes))
        #expect(back["n"] as? Int == 7 && back["s"] as? String == "text" && back["b"] as? Bool == true)
        #expect(back["d"] as? Data == Data([1, 2]) && back["a"] as? [String] == ["x", "y"])
        #expect(UserInfoCodec.encode(nil) == [] && UserInfoCodec.encode([:]) == [])
        #expect(UserInfoCodec.encode([1: "not a String key"]) == nil)
        #expect(UserInfoCodec.encode(["url": URL(fileURLWithPath: "/")]) == nil, "not a property-list type")
        #expect(UserInfoCodec.decode([0x62, 0x70, 0x6C, 0x69, 0x73, 0x74, 0xFF]) == nil)
    }
}
