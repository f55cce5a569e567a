import Foundation

/// A size given on the command line: bytes, or a percentage of something (the file system for
/// `--max-size` and `--min-free`, the maximum size for `--low-water`).
///
/// ```swift
/// try SizeLimit("20GiB")   // .bytes(21_474_836_480)
/// try SizeLimit("90%")     // .percent(90)
/// ```
package enum SizeLimit: Sendable, Hashable, CustomStringConvertible {
    case bytes(Int)
    case percent(Double)

    /// Binary and decimal units, case-insensitive: B, K/KB/KiB, M/MB/MiB, G/GB/GiB, T/TB/TiB.
    /// A bare `K`/`M`/`G`/`T` is binary (like `du -h`); `KB`/`MB`… are decimal, `KiB`/`MiB`… binary.
    private static let units: [String: Double] = [
        "": 1, "b": 1,
        "k": 0x1p10, "kib": 0x1p10, "kb": 1e3,
        "m": 0x1p20, "mib": 0x1p20, "mb": 1e6,
        "g": 0x1p30, "gib": 0x1p30, "gb": 1e9,
        "t": 0x1p40, "tib": 0x1p40, "tb": 1e12,
    ]

    /// Parses "20GiB", "1.5G", "500MB", "1048576", "90%".
    /// - Throws: ``MaintenanceError/invalidArgument(_:)``.
    package init(_ text: String) throws(MaintenanceError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.hasSuffix("%") {
            guard let value = Double(trimmed.dropLast().trimmingCharacters(in: .whitespaces)), value.isFinite,
                value >= 0, value <= 100
            else { throw .invalidArgument("'\(text)' is not a percentage from 0% to 100%") }
            self = .percent(value)
            return
        }
        let number = trimmed.prefix { $0.isNumber || $0 == "." }
        let unit = trimmed.dropFirst(number.count).trimmingCharacters(in: .whitespaces).lowercased()
        guard let value = Double(number), value.isFinite, let scale = Self.units[unit] else {
            throw .invalidArgument("'\(text)' is not a size (examples: 20GiB, 500MB, 1048576, 90%)")
        }
        let bytes = (value * scale).rounded(.down)
        guard bytes < 9e18 else { throw .invalidArgument("'\(text)' is too large") }
        self = .bytes(Int(bytes))
    }

    /// The size in bytes, a percentage being taken of `whole`.
    package func resolved(of whole: Int) -> Int {
        switch self {
        case .bytes(let bytes): bytes
        case .percent(let percent): Int((Double(whole) * percent / 100).rounded(.down))
        }
    }

    package var description: String {
        switch self {
        case .bytes(let bytes): "\(bytes) bytes"
        case .percent(let percent): "\(percent)%"
        }
    }
}

/// Ages on the command line: "30d", "12h", "90m", "45s", "2w", or a sum ("1d12h").
package enum AgeLimit {
    private static let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800]

    /// Parses an age into a `Duration`.
    /// - Throws: ``MaintenanceError/invalidArgument(_:)``.
    package static func parse(_ text: String) throws(MaintenanceError) -> Duration {
        let invalid = MaintenanceError.invalidArgument("'\(text)' is not an age (examples: 30d, 12h, 90m, 1d12h)")
        var seconds: Int64 = 0
        var digits = ""
        for character in text.lowercased() where character != " " {
            if character.isASCII, character.isNumber {
                digits.append(character)
            } else if let unit = units[character], let value = Int64(digits) {
                let (product, overflow1) = value.multipliedReportingOverflow(by: unit)
                let (sum, overflow2) = seconds.addingReportingOverflow(product)
                guard !overflow1, !overflow2 else { throw invalid }
                seconds = sum
                digits = ""
            } else {
                throw invalid
            }
        }
        guard digits.isEmpty, !text.isEmpty else { throw invalid }
        return .seconds(seconds)
    }
}

/// Dates on the command line: ISO 8601 ("2025-06-01", "2025-06-01T12:00:00Z") or an age
/// before `now` ("2h": two hours ago).
package enum DateArgument {
    /// - Throws: ``MaintenanceError/invalidArgument(_:)``.
    package static func parse(_ text: String, now: Date) throws(MaintenanceError) -> Date {
        if let age = try? AgeLimit.parse(text) { return now.addingTimeInterval(-age.timeInterval) }
        let full = ISO8601DateFormatter()
        if let date = full.date(from: text) { return date }
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = fractional.date(from: text) { return date }
        let day = ISO8601DateFormatter()
        day.formatOptions = [.withFullDate]
        if let date = day.date(from: text) { return date }
        throw .invalidArgument(
            "'\(text)' is not a date (examples: 2025-06-01, 2025-06-01T12:00:00Z, 2h for two hours ago)")
    }
}

extension Duration {
    /// Seconds as a `TimeInterval`.
    var timeInterval: TimeInterval {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

/// Size and free space of the file system holding a directory (`statvfs`).
package struct FileSystemSpace: Sendable, Hashable, Codable {
    /// Bytes of the whole file system.
    package var totalBytes: Int
    /// Bytes an unprivileged process may still write (`f_bavail`).
    package var availableBytes: Int

    package init(totalBytes: Int, availableBytes: Int) {
        self.totalBytes = totalBytes
        self.availableBytes = availableBytes
    }

    /// Measures the file system of `directory`.
    /// - Throws: ``MaintenanceError/system(_:)`` when `statvfs` fails.
    package static func of(directory: String) throws(MaintenanceError) -> FileSystemSpace {
        var info = statvfs()
        guard statvfs(directory, &info) == 0 else {
            throw .system("statvfs(\(directory)) failed: \(String(cString: strerror(errno)))")
        }
        let fragment = Int(info.f_frsize == 0 ? info.f_bsize : info.f_frsize)
        return FileSystemSpace(totalBytes: Int(info.f_blocks) * fragment, availableBytes: Int(info.f_bavail) * fragment)
    }
}
