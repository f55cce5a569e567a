import HTTPCacheSemantics
import HTTPTypes
import Testing
import SeededRandom

struct KeyRejectionCase: Sendable, CustomTestStringConvertible {
    let name: String
    let url: String
    let expected: CacheKeyError
    var testDescription: String { "\(name) [docs/Reliability.md §3.6]" }
}

@Suite("Cache key (docs/Reliability.md §3.2, T11)")
struct CacheKeyTests {
    static let rejections: [KeyRejectionCase] = [
        .init(name: "key-no-scheme", url: "example.com/a", expected: .missingScheme),
        .init(name: "key-relative", url: "/a/b", expected: .missingScheme),
        .init(name: "key-empty", url: "", expected: .missingScheme),
        .init(name: "key-ftp-scheme", url: "ftp://example.com/", expected: .unsupportedScheme),
        .init(name: "key-javascript-scheme", url: "javascript:alert(1)", expected: .unsupportedScheme),
        .init(name: "key-no-host", url: "https:///a", expected: .missingHost),
        .init(name: "key-no-authority", url: "https:/a", expected: .missingHost),
        .init(name: "key-userinfo", url: "https://user:pw@example.com/", expected: .userinfoNotAllowed),
        .init(name: "key-userinfo-confusion", url: "https://example.com@evil.example/", expected: .userinfoNotAllowed),
        .init(name: "key-nul", url: "https://example.com/a\u{0}b", expected: .invalidCharacter(offset: 21)),
        .init(name: "key-crlf", url: "https://example.com/a\r\nb", expected: .invalidCharacter(offset: 21)),
        .init(name: "key-space", url: "https://example.com/a b", expected: .invalidCharacter(offset: 21)),
        .init(name: "key-tab", url: "https://exa\tmple.com/", expected: .invalidCharacter(offset: 11)),
        .init(name: "key-backslash", url: "https://example.com/a\\b", expected: .invalidCharacter(offset: 21)),
        .init(name: "key-non-ascii-path", url: "https://example.com/ü", expected: .invalidCharacter(offset: 20)),
        .init(name: "key-idn-host", url: "https://bücher.example/", expected: .nonASCIIHost),
        .init(name: "key-percent-host", url: "https://ex%41mple.com/", expected: .invalidHost),
        .init(name: "key-bad-ip-literal", url: "https://[::g]/", expected: .invalidHost),
        .init(name: "key-unclosed-ip-literal", url: "https://[::1/", expected: .invalidHost),
        .init(
            name: "key-host-too-long", url: "https://" + String(repeating: "a", count: 256) + "/",
            expected: .hostTooLong(bytes: 256)),
        .init(name: "key-port-zero", url: "https://example.com:0/", expected: .invalidPort),
        .init(name: "key-port-overflow", url: "https://example.com:65536/", expected: .invalidPort),
        .init(name: "key-port-huge", url: "https://example.com:99999999999999999999999/", expected: .invalidPort),
        .init(name: "key-port-letters", url: "https://example.com:http/", expected: .invalidPort),
        .init(name: "key-bad-percent", url: "https://example.com/%zz", expected: .invalidPercentEscape(offset: 20)),
        .init(
            name: "key-truncated-percent", url: "https://example.com/a%2", expected: .invalidPercentEscape(offset: 21)),
        .init(
            name: "key-bad-percent-query", url: "https://example.com/?q=%", expected: .invalidPercentEscape(offset: 23)),
        .init(
            name: "key-url-over-8KiB", url: "https://example.com/" + String(repeating: "a", count: 8200),
            expected: .urlTooLong(bytes: 8220)),
    ]

    @Test(arguments: rejections)
    func rejects(_ testCase: KeyRejectionCase) {
        #expect(throws: testCase.expected) { try CacheKey(partition: "p", method: .get, url: testCase.url) }
        #expect(throws: testCase.expected) { try CacheKey.encoded(partition: "p", method: .get, url: testCase.url) }
    }

    @Test("key-method-get-head-only [docs/Reliability.md §3.2]")
    func methods() throws {
        #expect(throws: CacheKeyError.methodNotCacheable) {
            try CacheKey(partition: "p", method: .post, url: "https://a/")
        }
        _ = try CacheKey(partition: "p", method: .head, url: "https://a/")
        #expect(throws: CacheKeyError.partitionTooLong(bytes: 1025)) {
            try CacheKey(partition: String(repeating: "p", count: 1025), method: .get, url: "https://a/")
        }
    }

    static let equivalent: [(String, String)] = [
        ("HTTP://Example.COM/a", "http://example.com/a"),
        ("https://example.com:443/a", "https://example.com/a"),
        ("http://example.com:80/", "http://example.com/"),
        ("http://example.com", "http://example.com/"),
        ("http://example.com:/x", "http://example.com/x"),
        ("https://example.com/a#fragment", "https://example.com/a"),
        ("https://example.com?q", "https://example.com/?q"),
        ("http://EXAMPLE.com:0080/", "http://example.com/"),
        ("https://[::1]:443/", "https://[::1]/"),
        ("https://[ABCD::1]/", "https://[abcd::1]/"),
        ("hTTpS://WWW.Example.Com:443/Path?Query#x", "https://www.example.com/Path?Query"),
    ]

    @Test("key-equivalent-urls-equal [docs/Reliability.md §3.2, T11]", arguments: equivalent)
    func equivalentKeysEqual(_ left: String, _ right: String) throws {
        let a = try CacheKey(partition: "p", method: .get, url: left)
        let b = try CacheKey(partition: "p", method: .get, url: right)
        #expect(a.encoded == b.encoded)
        #expect(a.url.string == right)
    }

    static let distinct: [(String, String)] = [
        ("https://example.com/a%2Fb", "https://example.com/a/b"),
        ("https://example.com/a%2fb", "https://example.com/a%2Fb"),
        ("https://example.com/?q=1", "https://example.com/?Q=1"),
        ("https://example.com/a", "https://example.com/A"),
        ("http://example.com/", "https://example.com/"),
        ("https://example.com:8443/", "https://example.com/"),
        ("https://example.com/a/../b", "https://example.com/b"),
        ("https://example.com/%2e%2e/b", "https://example.com/../b"),
        ("https://example.com/a?", "https://example.com/a"),
        ("https://example.com/a", "https://example.com/a/"),
        ("https://example.com./", "https://example.com/"),
        ("https://example.com/?v=1", "https://example.com/?v=2"),
    ]

    @Test("key-distinct-urls-differ [docs/Reliability.md §3.2, T11]", arguments: distinct)
    func distinctKeysDiffer(_ left: String, _ right: String) throws {
        let a = try CacheKey(partition: "p", method: .get, url: left)
        let b = try CacheKey(partition: "p", method: .get, url: right)
        #expect(a.encoded != b.encoded)
    }

    @Test("key-partition-and-method-in-key [docs/Reliability.md §3.2, §7.2]")
    func partitionAndMethod() throws {
        let url = "https://example.com/x"
        #expect(
            try CacheKey(partition: "a", method: .get, url: url).encoded
                != CacheKey(partition: "b", method: .get, url: url).encoded)
        #expect(
            try CacheKey(partition: "a", method: .get, url: url).encoded
                != CacheKey(partition: "a", method: .head, url: url).encoded)
        #expect(
            try CacheKey(partition: "", method: .get, url: url).encoded
                != CacheKey(partition: " ", method: .get, url: url).encoded)
    }

    @Test("key-naive-concatenation-collisions-distinct [docs/Reliability.md §3.2, apisix#13831]")
    func naiveCollisions() throws {
        // Given pairs whose partition + host + path concatenate to the same string
        var checked = 0
        for combined in ["abc.example", "tenantapi.example.com", "aaaa.example", "p1.h.example"] {
            for split in 1..<5 {
                let left = (partition: String(combined.prefix(split - 1)), host: String(combined.dropFirst(split - 1)))
                let right = (partition: String(combined.prefix(split)), host: String(combined.dropFirst(split)))
                // When
                let a = try CacheKey(partition: left.partition, method: .get, url: "https://\(left.host)/x?y")
                let b = try CacheKey(partition: right.partition, method: .get, url: "https://\(right.host)/x?y")
                // Then the naive form collides but the encoding does not
                #expect(a.partition + a.url.host + a.url.pathAndQuery == b.partition + b.url.host + b.url.pathAndQuery)
                #expect(a.encoded != b.encoded)
                checked += 1
            }
        }
        // Partition text that looks like a URL prefix.
        let c = try CacheKey(partition: "a|GET|https://h/", method: .get, url: "https://i/")
        let d = try CacheKey(partition: "a", method: .get, url: "https://i/")
        #expect(c.encoded != d.encoded)
        #expect(checked == 16)
    }

    @Test("key-10000-hostile-urls [docs/Reliability.md T11]")
    func hostileURLs() {
        // Given a seeded generator (seed printed on failure through the message)
        let seed: UInt64 = 0x5EED_CAFE
        var random = SplitMix64(state: seed)
        // Each pool lists valid pieces first; `pick` takes one of those three times in four.
        let schemes = (["http", "HTTP", "https", "HtTpS"], ["ftp", "", "javascript", "h ttp", "https+x"])
        let separators = (["://"], [":/", ":", "//", ":///"])
        let hosts = (
            ["example.com", "EXAMPLE.com", "xn--bcher-kva.example", "[::1]", "127.0.0.1", "_x.example", "a..b"],
            [
                "bücher.example", String(repeating: "a", count: 300), "[::G]", "user:pw@example.com", "",
                "exa mple.com",
                "ex%41mple.com",
            ]
        )
        let ports = (["", ":", ":80", ":443", ":8080", ":0080"], [":0", ":65536", ":abc", "::80"])
        let paths = (
            ["", "/", "/..", "/%2e%2e/", "/a%2Fb", "/a%2fb", "/a/./b", "/%00", "/~user/", "/a;b=c"],
            ["/%", "/%zz", "/\u{0}", "/a\r\nb", "/ü", "/a\\b", String(repeating: "/x", count: 4500)]
        )
        let queries = (["", "?", "?q=1", "?Q=1&r=%20", "?a=b#frag", "#frag", "?[x]=1"], ["?%", "?\u{7F}"])
        func pick(_ pool: ([String], [String])) -> String {
            random.next() % 4 != 0
                ? pool.0.randomElement(using: &random)! : (pool.0 + pool.1).randomElement(using: &random)!
        }
        var accepted = 0
        var rejected = 0
        var keys: [[UInt8]: String] = [:]
        for _ in 0..<10_000 {
            var url = pick(schemes) + pick(separators) + pick(hosts) + pick(ports) + pick(paths) + pick(queries)
            if random.next() % 4 == 0 {
                // Splice one arbitrary scalar somewhere.
                let scalar = Unicode.Scalar(UInt32(random.next() % 0x250)) ?? "x"
                var scalars = Array(url.unicodeScalars)
                scalars.insert(scalar, at: Int(random.next() % UInt64(scalars.count + 1)))
                url = String(String.UnicodeScalarView(scalars))
            }
            let partition = ["", "a", "ab", "tenant"].randomElement(using: &random)!
            // The lookup path's one-pass encoding gives the same key, or the same error.
            let direct = Result { () throws(CacheKeyError) in
                try CacheKey.encoded(partition: partition, method: .get, url: url)
            }
            do {
                // When
                let key = try CacheKey(partition: partition, method: .get, url: url)
                accepted += 1
                #expect(direct == .success(key.encoded), "seed \(seed): \(url.debugDescription)")
                // Then: normalised form is clean and stable, and the encoding never aliases
                let text = key.url.string
                #expect(text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }, "seed \(seed): \(url.debugDescription)")
                #expect(key.url.scheme == "http" || key.url.scheme == "https")
                #expect(key.url.host == key.url.host.lowercased())
                #expect(
                    (try? NormalizedURL(text)) == key.url, "seed \(seed): not idempotent for \(url.debugDescription)")
                let identity = partition + "\u{0}" + text
                if let previous = keys[key.encoded] {
                    #expect(previous == identity, "seed \(seed): key collision")
                }
                keys[key.encoded] = identity
            } catch {
                rejected += 1
                #expect(direct == .failure(error), "seed \(seed): \(url.debugDescription)")
            }
        }
        #expect(accepted > 2000)
        #expect(rejected > 2000)
        #expect(accepted + rejected == 10_000)
    }

    /// The encoding is the index key (docs/Formats.md): built in one buffer, it must stay byte
    /// for byte the layout of its doc comment.
    @Test(arguments: [
        ("", "https://api.example.com/items/1?v=1"),
        ("billing", "http://Example.COM:8080/a/%7e?b=%20"),
        ("é", "https://[::1]:443/"),
        ("p", "https://example.com"),
    ])
    func encodedIsTheDocumentedLayout(partition: String, url: String) throws {
        let key = try CacheKey(partition: partition, method: .head, url: url)
        func field(_ bytes: [UInt8]) -> [UInt8] {
            let n = UInt32(bytes.count)
            return [UInt8(n >> 24), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)] + bytes
        }
        let expected =
            [UInt8(ascii: "K"), CacheKey.formatVersion] + field(Array(partition.utf8))
            + field(Array("HEAD".utf8)) + field(Array(key.url.string.utf8))
        #expect(key.encoded == expected)
        #expect(try CacheKey.encoded(partition: partition, method: .head, url: url) == expected)
    }

    /// Every byte of a path and of a query is accepted exactly when RFC 3986 allows it there
    /// (unreserved, sub-delims, `:` `@` `/` `?`; `[` `]` in the query only; `%` only as an escape).
    @Test("key-path-and-query-bytes-exactly-rfc3986 [docs/Reliability.md §3.2]")
    func pathAndQueryBytes() {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;=:@/?".utf8)
        for byte in UInt8(0x21)...UInt8(0x7E) where byte != UInt8(ascii: "%") && byte != UInt8(ascii: "#") {
            let character = String(decoding: [byte], as: UTF8.self)
            let inPath = (try? NormalizedURL("https://a.test/x" + character + "y")) != nil
            let inQuery = (try? NormalizedURL("https://a.test/x?q" + character + "y")) != nil
            #expect(inPath == allowed.contains(byte), "path byte \(byte)")
            let bracket = byte == UInt8(ascii: "[") || byte == UInt8(ascii: "]")
            #expect(inQuery == (allowed.contains(byte) || bracket), "query byte \(byte)")
        }
    }
}
