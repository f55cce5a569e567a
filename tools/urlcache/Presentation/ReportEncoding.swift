import Foundation

/// How reports are written for machines: one JSON object, keys in snake_case and sorted, dates in
/// ISO 8601 (UTC, whole seconds). Field names only ever get added, never renamed (stable output).
enum ReportEncoding {
    static func json<Report: Encodable>(_ report: Report) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.dateEncodingStrategy = .iso8601
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        // Encoding plain value types cannot fail; a failure would be a programming error.
        guard let data = try? encoder.encode(report) else {
            preconditionFailure("report \(Report.self) did not encode")
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// The decoder matching ``json(_:)`` (tests, and tools reading another run's output).
    static func decode<Report: Decodable>(_ type: Report.Type, from json: String) throws -> Report {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(type, from: Data(json.utf8))
    }
}
