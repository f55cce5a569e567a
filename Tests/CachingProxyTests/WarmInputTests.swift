import CachingProxy
import Foundation
import Testing

/// The inputs of `urlcache warm`: URL lists, access logs and sitemaps, and its rate limit.
@Suite struct WarmInputTests {
    @Test("a URL list skips blanks and comments and resolves origin-form targets against the base")
    func urlList() {
        let text = """
            # deploy list
            https://api.example.com/a

              /b?x=1
            relative/not-a-target
            http://other.example/c
            """
        #expect(
            WarmURLList.urls(in: text, base: "http://127.0.0.1:9000/") == [
                "https://api.example.com/a", "http://127.0.0.1:9000/b?x=1", "http://other.example/c",
            ])
        #expect(WarmURLList.urls(in: "/b", base: nil).isEmpty)
    }

    @Test("an access log in the common or combined format gives its GETs answered 200, nothing else")
    func accessLog() {
        let log = """
            127.0.0.1 - - [10/Oct/2025:13:55:36 +0000] "GET /items?page=2 HTTP/1.1" 200 2326 "-" "curl/8.5"
            10.0.0.2 - frank [10/Oct/2025:13:55:37 +0000] "GET /plain HTTP/1.0" 200 12
            10.0.0.3 - - [10/Oct/2025:13:55:38 +0000] "POST /items HTTP/1.1" 200 5 "-" "x"
            10.0.0.4 - - [10/Oct/2025:13:55:39 +0000] "GET /missing HTTP/1.1" 404 5 "-" "x"
            10.0.0.5 - - [10/Oct/2025:13:55:40 +0000] "GET /cached HTTP/1.1" 304 0 "-" "x"
            10.0.0.6 - - [10/Oct/2025:13:55:41 +0000] "GET http://forward.example/abs HTTP/1.1" 200 7 "-" "x"
            garbage line without quotes
            10.0.0.7 - - [10/Oct/2025:13:55:42 +0000] "-" 400 0 "-" "-"
            """
        #expect(
            WarmAccessLog.urls(in: log, base: "http://origin:9000") == [
                "http://origin:9000/items?page=2", "http://origin:9000/plain", "http://forward.example/abs",
            ])
    }

    @Test("a sitemap's <loc> elements: urlset, index, namespace prefix, CDATA and entities")
    func sitemap() {
        let urlset = """
            <?xml version="1.0" encoding="UTF-8"?>
            <urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
              <url><loc>https://example.com/a</loc><lastmod>2025-01-01</lastmod></url>
              <url><loc>
                https://example.com/b?x=1&amp;y=2
              </loc></url>
              <url><loc><![CDATA[https://example.com/c?<d>]]></loc></url>
              <url><location>https://example.com/not-a-loc</location></url>
            </urlset>
            """
        let parsed = WarmSitemap(parsing: urlset)
        #expect(!parsed.isIndex)
        #expect(
            parsed.locations == ["https://example.com/a", "https://example.com/b?x=1&y=2", "https://example.com/c?<d>"])

        let index = """
            <sm:sitemapindex xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9">
              <sm:sitemap><sm:loc>https://example.com/sitemap-1.xml</sm:loc></sm:sitemap>
              <sm:sitemap><sm:loc>https://example.com/sitemap-2.xml</sm:loc></sm:sitemap>
            </sm:sitemapindex>
            """
        let parsedIndex = WarmSitemap(parsing: index)
        #expect(parsedIndex.isIndex)
        #expect(parsedIndex.locations == ["https://example.com/sitemap-1.xml", "https://example.com/sitemap-2.xml"])
    }

    @Test("the rate limit lets the burst through at once, then one request per interval")
    func rateLimit() async throws {
        let limit = WarmRateLimit(rate: 50, burst: 3)
        let start = ContinuousClock.now
        for _ in 0..<3 { try await limit.acquire() }
        let burst = ContinuousClock.now - start
        for _ in 0..<10 { try await limit.acquire() }
        let total = ContinuousClock.now - start
        // Three at once (generous bound for a loaded machine); ten more take 10 × 20 ms, less the
        // bucket's slack of two tokens: at least 160 ms.
        #expect(burst < .milliseconds(150), "\(burst)")
        #expect(total >= .milliseconds(160), "\(total)")
    }
}
