import HTTPTypes

/// What a cache sends for a request that may carry `Range` (RFC 9110 §14) when it serves a
/// stored response: the whole response, one range of it (206), or 416.
public enum RangeSelection: Sendable, Hashable {
    /// The whole stored response, as without `Range`.
    case whole
    /// 206 Partial Content with these byte offsets (§15.3.7).
    case partial(ClosedRange<Int>)
    /// 416 Range Not Satisfiable (§15.5.17).
    case unsatisfiable

    /// The request fields that ask for a range. The cache takes them off its own conditional
    /// request, so the origin answers with the whole response the cache stores (a 206 is never
    /// stored), and applies them itself to what it serves.
    public static let fieldNames: [HTTPField.Name] = [.range, .ifRange]

    /// Decides for `request` and a stored response with a body of `length` bytes.
    ///
    /// Only a GET with `Range` for a stored 200 selects a range (§14.2: range handling is
    /// defined for GET only; a server may ignore `Range` otherwise, so HEAD gets the whole
    /// head). `If-Range` that does not validate the stored response means the whole response
    /// (§13.1.5). One range-spec is answered 206, or 416 when it is unsatisfiable. Several
    /// range-specs, and a field that does not parse, are answered with the whole response
    /// (§14.2 lets a server ignore `Range`): this cache sends no multipart/byteranges. A
    /// suffix-range of a zero-length body is satisfiable (§14.1.1) but selects no byte, so the
    /// whole (empty) response answers it.
    ///
    /// - Parameters:
    ///   - request: The client's request.
    ///   - stored: The stored response about to be served.
    ///   - length: The length of its body.
    public static func evaluate(request: HTTPRequest, stored: StoredResponse, length: Int) -> RangeSelection {
        guard request.method == .get, stored.status.code == 200 else { return .whole }
        let lines = request.headerFields[values: .range]
        guard !lines.isEmpty, let specs = ByteRangeSpec.parse(lines.joined(separator: ", ")), specs.count == 1 else {
            return .whole
        }
        if let ifRange = request.headerFields[values: .ifRange].first, !IfRange.allowsRange(ifRange, stored: stored) {
            return .whole
        }
        if let range = specs[0].resolve(length: length) { return .partial(range) }
        if length == 0, case .suffix(let count) = specs[0], count > 0 { return .whole }
        return .unsatisfiable
    }

    /// The head fields of a 206 made from the 200's `fields` (§15.3.7): the same fields (Date,
    /// Cache-Control, ETag, Expires, Content-Location and Vary must be there when a 200 has
    /// them), with `Content-Range: bytes first-last/length` (§14.4) and the range's
    /// `Content-Length`.
    ///
    /// - Parameters:
    ///   - fields: The fields the 200 would have carried.
    ///   - range: The byte offsets sent.
    ///   - length: The length of the complete body.
    public static func partialFields(from fields: HTTPFields, range: ClosedRange<Int>, length: Int) -> HTTPFields {
        var result = fields
        result[.contentRange] = "bytes \(range.lowerBound)-\(range.upperBound)/\(length)"
        result[.contentLength] = String(range.count)
        return result
    }

    /// The head fields of a 416 for a stored body of `length` bytes: `Content-Range: bytes */length`
    /// (§15.5.17), no content, and the 200's `Date`, `ETag` and `Last-Modified` (so the client
    /// can ask again with `If-Range`). Nothing else of the 200: its freshness fields would let a
    /// cache downstream store this 416 in place of the response.
    ///
    /// - Parameters:
    ///   - fields: The fields the 200 would have carried.
    ///   - length: The length of the complete body.
    public static func unsatisfiableFields(from fields: HTTPFields, length: Int) -> HTTPFields {
        var result = HTTPFields()
        for field in fields where [.date, .eTag, .lastModified].contains(field.name) { result.append(field) }
        result[.contentRange] = "bytes */\(length)"
        result[.contentLength] = "0"
        return result
    }
}
