import HTTPTypes

/// Which stored-stream content coding a request accepts (RFC 9110 §12.5.3 `Accept-Encoding`),
/// for a cache that can send its zlib-compressed copy of an identity response as it is:
/// `gzip` (the stream's deflate data with a gzip header and trailer) or `deflate` (the zlib
/// stream itself, RFC 9110 §8.4.1.2).
public enum ContentCodingNegotiation {
    /// The codings a stored zlib stream can be sent in, in order of preference.
    public enum Coding: String, Sendable, CaseIterable {
        /// `gzip` (RFC 9110 §8.4.1.3): the deflate data between a gzip header and trailer.
        case gzip
        /// `deflate` (RFC 9110 §8.4.1.2): the zlib stream itself.
        case deflate
    }

    /// The preferred coding the request accepts with a non-zero weight (`gzip` before `deflate`
    /// at equal weight; `x-gzip` counts as `gzip`; `*` covers codings not named), or nil.
    public static func accepted(by request: HTTPRequest) -> Coding? {
        let lines = request.headerFields[values: .acceptEncoding]
        guard !lines.isEmpty else { return nil }
        var weights: [String: Double] = [:]
        for line in lines {
            for member in line.split(separator: ",") {
                let parts = member.split(separator: ";").map { trimmed($0).lowercased() }
                guard let name = parts.first, !name.isEmpty else { continue }
                var weight = 1.0
                for parameter in parts.dropFirst() where parameter.hasPrefix("q=") {
                    weight = Double(parameter.dropFirst(2)) ?? 0 // a malformed weight accepts nothing
                }
                weights[name == "x-gzip" ? "gzip" : name] = weight
            }
        }
        var best: (coding: Coding, weight: Double)?
        for coding in Coding.allCases {
            let weight = weights[coding.rawValue] ?? weights["*"] ?? 0
            if weight > 0, weight > (best?.weight ?? 0) { best = (coding, weight) }
        }
        return best?.coding
    }

    private static func trimmed(_ text: Substring) -> Substring {
        var text = text
        while text.first == " " || text.first == "\t" { text = text.dropFirst() }
        while text.last == " " || text.last == "\t" { text = text.dropLast() }
        return text
    }
}
