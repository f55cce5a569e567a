import Foundation

/// The URLs worth warming in an access log in the common or combined log format (Apache's and
/// nginx's default `combined`): the targets of GET requests answered 200. Other methods,
/// statuses (a 404 is not worth fetching again, a 304 names a URL the client had already) and
/// lines that do not parse are skipped.
///
///     127.0.0.1 - - [10/Oct/2025:13:55:36 +0000] "GET /items?page=2 HTTP/1.1" 200 2326 "-" "curl/8.5"
///
/// The target is the request line's second word; an origin-form target is resolved against
/// `base` (the origin), an absolute one (a forward proxy's log) is taken as it is.
package enum WarmAccessLog {
    /// What one line says, when it is a GET answered 200 whose target resolves.
    package static func url(inLine line: Substring, base: String?) -> String? {
        // The request is the first quoted field; the status is the first word after it.
        guard let open = line.firstIndex(of: "\"") else { return nil }
        let afterOpen = line.index(after: open)
        guard let close = line[afterOpen...].firstIndex(of: "\"") else { return nil }
        let request = line[afterOpen..<close].split(separator: " ", omittingEmptySubsequences: true)
        guard request.count >= 2, request[0] == "GET" else { return nil }
        let rest = line[line.index(after: close)...].split(separator: " ", maxSplits: 2)
        guard let status = rest.first, status == "200" else { return nil }
        return WarmURLList.resolve(String(request[1]), against: base)
    }

    /// Every warmable URL of the log, in order (duplicates kept).
    package static func urls(in text: String, base: String?) -> [String] {
        text.split(whereSeparator: \.isNewline).compactMap { url(inLine: $0, base: base) }
    }
}
