import HTTPTypes

/// Safe methods (RFC 9110 §9.2.1); every other method is unsafe and may invalidate.
private let safeMethods: Set<HTTPRequest.Method> = [.get, .head, .options, .trace]

/// Invalidation after unsafe requests (RFC 9111 §4.4).
public enum CacheInvalidation {
    /// The URLs whose stored responses must be invalidated after a response to a request.
    ///
    /// RFC 9111 §4.4: a non-error (2xx or 3xx) response to an unsafe method invalidates the
    /// target URI, and the URIs in `Location` and `Content-Location` (resolved against the target,
    /// RFC 3986 §5) when they have the same origin; other origins are ignored (§4.4: that
    /// "MUST NOT" guards against denial of service).
    ///
    /// - Parameters:
    ///   - method: The request method.
    ///   - requestURL: The absolute target URL.
    ///   - status: The response status.
    ///   - responseFields: The response header fields.
    /// - Returns: Normalised URLs, target first, without duplicates; empty when nothing applies
    ///   or the target is not a cacheable URL.
    public static func invalidatedURLs(
        method: HTTPRequest.Method,
        requestURL: String,
        status: HTTPResponse.Status,
        responseFields: HTTPFields
    ) -> [NormalizedURL] {
        guard !safeMethods.contains(method), (200...399).contains(status.code),
            let target = try? NormalizedURL(requestURL)
        else { return [] }
        var result = [target]
        for name in [HTTPField.Name.location, .contentLocation] {
            guard let reference = responseFields[values: name].first?.trimmingOWS(), !reference.isEmpty,
                let resolved = resolve(reference, against: target),
                let url = try? NormalizedURL(resolved), url.origin == target.origin, !result.contains(url)
            else { continue }
            result.append(url)
        }
        return result
    }

    /// Resolves a URI reference against a base (RFC 3986 §5.2.2, fragment dropped).
    ///
    /// - Parameters:
    ///   - reference: The reference (absolute, network-path, absolute-path, query or relative).
    ///   - base: The base URL.
    /// - Returns: The absolute URL text, or nil for an unusable reference.
    public static func resolve(_ reference: String, against base: NormalizedURL) -> String? {
        let withoutFragment = String(reference.prefix { $0 != "#" })
        if hasScheme(withoutFragment) { return withoutFragment }
        if withoutFragment.hasPrefix("//") { return base.scheme + ":" + withoutFragment }
        let (basePath, baseQuery) = split(base.pathAndQuery)
        if withoutFragment.isEmpty { return base.origin + basePath + (baseQuery ?? "") }
        if withoutFragment.hasPrefix("?") { return base.origin + basePath + withoutFragment }
        let (path, query) = split(withoutFragment)
        let merged: String
        if path.hasPrefix("/") {
            merged = path
        } else {
            // RFC 3986 §5.2.3: merge with the base path up to its last "/".
            let directory = basePath.lastIndex(of: "/").map { String(basePath[...$0]) } ?? "/"
            merged = directory + path
        }
        return base.origin + removeDotSegments(merged) + (query ?? "")
    }

    /// RFC 3986 §5.2.4 remove_dot_segments.
    static func removeDotSegments(_ path: String) -> String {
        var input = path
        var output: [String] = []
        while !input.isEmpty {
            if input.hasPrefix("../") {
                input.removeFirst(3)
            } else if input.hasPrefix("./") {
                input.removeFirst(2)
            } else if input.hasPrefix("/./") {
                input = "/" + input.dropFirst(3)
            } else if input == "/." {
                input = "/"
            } else if input.hasPrefix("/../") {
                input = "/" + input.dropFirst(4)
                if !output.isEmpty { output.removeLast() }
            } else if input == "/.." {
                input = "/"
                if !output.isEmpty { output.removeLast() }
            } else if input == "." || input == ".." {
                input = ""
            } else {
                let start = input.hasPrefix("/") ? input.index(after: input.startIndex) : input.startIndex
                let end = input[start...].firstIndex(of: "/") ?? input.endIndex
                output.append(String(input[..<end]))
                input = String(input[end...])
            }
        }
        return output.joined()
    }

    private static func split(_ pathAndQuery: String) -> (path: String, query: String?) {
        guard let mark = pathAndQuery.firstIndex(of: "?") else { return (pathAndQuery, nil) }
        return (String(pathAndQuery[..<mark]), String(pathAndQuery[mark...]))
    }

    /// RFC 3986 §3.1: scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) followed by ":".
    private static func hasScheme(_ text: String) -> Bool {
        guard let colon = text.firstIndex(of: ":"), colon != text.startIndex else { return false }
        let scheme = text[..<colon].unicodeScalars
        func isAlpha(_ scalar: Unicode.Scalar) -> Bool { ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) }
        guard let first = scheme.first, isAlpha(first) else { return false }
        return scheme.allSatisfy { isAlpha($0) || ("0"..."9").contains($0) || "+-.".unicodeScalars.contains($0) }
    }
}
