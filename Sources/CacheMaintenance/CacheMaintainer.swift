import Foundation
import SharedURLCacheStore

/// Operator actions on one cache directory: compaction, statistics, verification, listing and
/// purging, as library code the `urlcache` command calls in a few lines (and tests call directly).
///
/// ```swift
/// let maintainer = try CacheMaintainer(directory: "/var/cache/api")
/// var options = CompactionOptions()
/// options.maxSize = try SizeLimit("20GiB")
/// let summary = try maintainer.compact(options)
/// print(summary.text)
/// ```
///
/// Every operation is safe while services use the directory: reads walk the index in short read
/// transactions, deletions commit in bounded write transactions and unlink after the commit.
///
/// ## Topics
/// - ``compact(_:now:fileSystem:progress:)``
/// - ``statistics(includePartitions:)``
/// - ``verify(fix:checkBodies:rebuild:)``
/// - ``list(_:)``, ``show(url:partition:)``
/// - ``purge(_:dryRun:now:)``
public struct CacheMaintainer: Sendable {
    public let store: CacheStore
    public var directory: String { store.directory }

    /// Opens an existing cache directory (a maintenance tool never creates one: a typo in a
    /// crontab must fail loudly, not start an empty cache).
    /// - Throws: `CacheError` (`.directoryNotFound`, `.notACache`, `.unsupportedVersion`…).
    public init(directory: String) throws(CacheError) {
        var configuration = CacheStoreConfiguration()
        configuration.createIfMissing = false
        store = try CacheStore(directory: directory, configuration: configuration)
    }

    /// Uses an already open store (tests, or a service embedding maintenance).
    public init(store: CacheStore) {
        self.store = store
    }
}

/// How reports are written for machines: one JSON object, keys in snake_case and sorted, dates in
/// ISO 8601 (UTC, whole seconds). Field names only ever get added, never renamed (stable output).
public enum ReportEncoding {
    public static func json<Report: Encodable>(_ report: Report) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.dateEncodingStrategy = .iso8601
        encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        // Encoding plain value types cannot fail; a failure would be a programming error.
        guard let data = try? encoder.encode(report) else { preconditionFailure("report \(Report.self) did not encode") }
        return String(decoding: data, as: UTF8.self)
    }

    /// The decoder matching ``json(_:)`` (tests, and tools reading another run's output).
    public static func decode<Report: Decodable>(_ type: Report.Type, from json: String) throws -> Report {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(type, from: Data(json.utf8))
    }
}

/// A report that also prints as aligned text for humans.
public protocol TextReport: Encodable {
    /// Lines for a terminal, without a trailing newline.
    var text: String { get }
}

/// Helpers for aligned text (shared with the command line's progress line).
public enum TextFormat {
    /// "1.50 GiB"; bytes below 1 KiB as "512 B".
    public static func bytes(_ count: Int) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]
        var value = Double(count)
        var unit = 0
        while abs(value) >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(count) B" : String(format: "%.2f", value) + " " + units[unit]
    }

    public static func date(_ date: Date) -> String {
        ISO8601DateFormatter().string(from: date)
    }

    /// Two columns: names padded to the widest.
    static func pairs(_ rows: [(String, String)]) -> String {
        let width = rows.map(\.0.count).max() ?? 0
        return rows.map { $0.0.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + $0.1 }.joined(separator: "\n")
    }

    /// A table: each column padded to its widest cell; columns in `rightAligned` are right-aligned.
    /// The last column is never padded (it holds URLs of any length).
    static func table(_ header: [String], _ rows: [[String]], rightAligned: Set<Int> = []) -> String {
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
        return all.map { row in
            row.indices.map { column in
                let cell = row[column]
                if column == row.count - 1 { return cell }
                let pad = String(repeating: " ", count: widths[column] - cell.count)
                return rightAligned.contains(column) ? pad + cell : cell + pad
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }
}
