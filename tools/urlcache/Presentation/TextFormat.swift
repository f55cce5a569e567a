import Foundation

/// Helpers for aligned text (reports and the progress line).
enum TextFormat {
    /// "1.50 GiB"; bytes below 1 KiB as "512 B".
    static func bytes(_ count: Int) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]
        var value = Double(count)
        var unit = 0
        while abs(value) >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(count) B" : String(format: "%.2f", value) + " " + units[unit]
    }

    static func date(_ date: Date) -> String {
        ISO8601DateFormatter().string(from: date)
    }

    /// Two columns: names padded to the widest.
    static func pairs(_ rows: [(String, String)]) -> String {
        let width = rows.map(\.0.count).max() ?? 0
        return rows.map { $0.0.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + $0.1 }.joined(
            separator: "\n")
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
