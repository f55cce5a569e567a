import Foundation

/// The `<loc>` URLs of a sitemap (sitemaps.org): a `<urlset>` lists pages, a `<sitemapindex>`
/// lists further sitemaps, which `urlcache warm` follows one level deep. A scanner rather than an
/// XML parser: it reads `<loc>` elements (with an optional namespace prefix, CDATA and the five
/// predefined entities) and nothing else, which is all a sitemap carries that matters here.
package struct WarmSitemap: Sendable, Hashable {
    /// Whether the document is a sitemap index (its locations are sitemaps, not pages).
    package var isIndex: Bool
    /// The locations, in document order.
    package var locations: [String]

    /// Scans `text`.
    package init(parsing text: String) {
        isIndex =
            text.range(of: "<sitemapindex", options: .caseInsensitive) != nil
            || text.range(of: ":sitemapindex", options: .caseInsensitive) != nil
        var locations: [String] = []
        var rest = text[...]
        while let open = rest.firstIndex(of: "<") {
            rest = rest[rest.index(after: open)...]
            guard let tagEnd = rest.firstIndex(where: { $0 == ">" || $0 == " " || $0 == "/" }) else { break }
            let name = rest[..<tagEnd]
            // `<loc>` or `<ns:loc>`; closing tags start with '/' and never match.
            let local = name.split(separator: ":").last ?? name
            guard local == "loc", rest[tagEnd] == ">" else { continue }
            rest = rest[rest.index(after: tagEnd)...]
            // CDATA may hold '<', so its end is looked for first.
            let valueEnd: Substring.Index
            if rest.trimmingPrefix(while: \.isWhitespace).hasPrefix("<![CDATA["),
                let cdataEnd = rest.range(of: "]]>")
            {
                valueEnd = cdataEnd.upperBound
            } else if let close = rest.firstIndex(of: "<") {
                valueEnd = close
            } else {
                break
            }
            let value = Self.text(of: rest[..<valueEnd])
            if !value.isEmpty { locations.append(value) }
            rest = rest[valueEnd...]
        }
        self.locations = locations
    }

    /// An element's text: CDATA unwrapped, entities decoded, whitespace trimmed.
    private static func text(of raw: Substring) -> String {
        var value = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        if value.hasPrefix("<![CDATA["), value.hasSuffix("]]>") {
            return String(value.dropFirst(9).dropLast(3)).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        for (entity, character) in [("&lt;", "<"), ("&gt;", ">"), ("&quot;", "\""), ("&apos;", "'"), ("&amp;", "&")] {
            value = value.replacingOccurrences(of: entity, with: character)
        }
        return value
    }
}
