import Foundation

/// The path of an origin-form request target (`/path?query`) with its dot-segments removed
/// (RFC 3986 §5.2.4), as a reverse proxy forwards it under the upstream's base path and keys it.
///
/// Why here and not at the origin: the proxy joins the target to the base path
/// (`--upstream http://origin/base`), and an origin that resolves `..` would otherwise serve
/// `/base/../admin` as `/admin`, outside what the proxy was put in front of, and the cache would
/// key the same resource under many spellings. So the target is resolved first, and one that
/// would climb above its root (`/../admin`) is refused: no spelling reaches outside the base.
///
/// Percent-encoding is never decoded into path structure: `%2F` stays part of its segment and
/// `%2E` is not a dot. A segment that would be a dot-segment once `%2E` is decoded (`%2e%2e`,
/// `.%2E`) is refused too, since an origin that decodes before resolving would climb with it;
/// RFC 3986 §6.2.2.2 makes `%2E` and `.` the same character, so the proxy cannot tell which
/// reading the origin takes.
enum OriginFormTarget {
    /// `target` with its path's dot-segments removed and its query (and anything after it) kept
    /// byte for byte, or nil when the path would climb above `/` or holds an encoded dot-segment.
    /// A target with neither `/.` nor `%` in its path comes back as it is, without copying.
    static func normalized(_ target: String) -> String? {
        let utf8 = target.utf8
        let pathEnd = utf8.firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? utf8.endIndex
        guard needsResolving(utf8[utf8.startIndex..<pathEnd]) else { return target }
        let path = target[target.startIndex..<pathEnd]
        guard let resolved = resolved(path) else { return nil }
        return resolved + target[pathEnd...]
    }

    /// Whether a path may hold a dot-segment or an encoded one: a `/` followed by `.`, or any `%`.
    private static func needsResolving(_ path: Substring.UTF8View) -> Bool {
        var previous: UInt8 = 0
        for byte in path {
            if byte == UInt8(ascii: "%") || (previous == UInt8(ascii: "/") && byte == UInt8(ascii: ".")) {
                return true
            }
            previous = byte
        }
        return false
    }

    /// RFC 3986 §5.2.4 over the segments of an absolute path, except that climbing above the
    /// root gives nil instead of being clamped there.
    private static func resolved(_ path: Substring) -> String? {
        guard path.hasPrefix("/") else { return nil }
        let segments = path.dropFirst().split(separator: "/", omittingEmptySubsequences: false)
        var output: [Substring] = []
        output.reserveCapacity(segments.count)
        for (index, segment) in segments.enumerated() {
            let isLast = index == segments.count - 1
            switch segment {
            case ".":
                // "/a/." is "/a/": the directory, trailing slash kept.
                if isLast { output.append("") }
            case "..":
                guard !output.isEmpty else { return nil }
                output.removeLast()
                if isLast { output.append("") }
            default:
                if isEncodedDotSegment(segment) { return nil }
                output.append(segment)
            }
        }
        return "/" + output.joined(separator: "/")
    }

    /// `.` or `..` spelled with at least one `%2E` (either case).
    private static func isEncodedDotSegment(_ segment: Substring) -> Bool {
        guard segment.contains("%") else { return false }
        let decoded = segment.replacingOccurrences(of: "%2e", with: ".", options: .caseInsensitive)
        return decoded == "." || decoded == ".."
    }
}
