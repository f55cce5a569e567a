import SharedURLCacheStore

/// What `urlcache quota` prints.
package struct QuotaSummary: Sendable, Hashable, Codable {
    package var directory: String
    /// The partition, as `urlcache stats` names it (`hex:…` when not UTF-8).
    package var partition: String
    /// The quota now in force, in bytes; `nil`: removed.
    package var maxBytes: Int?
    /// What setting or removing it did.
    package var report: QuotaReport
}

extension CacheMaintainer {
    /// Sets (or with `maxSize` `nil` removes) the byte quota of a partition for the whole
    /// directory (``CacheStore/setPartitionQuota(_:maxBytes:allowNewPartition:)``).
    /// - Parameters:
    ///   - partition: the name as `urlcache stats` prints it: its text, `""` for the default
    ///     partition, `hex:…` for bytes that are not UTF-8.
    ///   - maxSize: a size in bytes (a percentage has nothing to be a percentage of here).
    ///   - allowNewPartition: set it although the partition has no entries yet.
    /// - Throws: `MaintenanceError.invalidArgument` for a percentage, a size below 1 byte or a
    ///   malformed `hex:` name; `CacheError` (`.notFound` for a partition without entries,
    ///   `.unsupportedVersion` while an earlier release has the directory open).
    package func setQuota(partition: String, maxSize: SizeLimit?, allowNewPartition: Bool = false) throws
        -> QuotaSummary
    {
        var maxBytes: Int?
        switch maxSize {
        case .none: maxBytes = nil
        case .percent:
            throw MaintenanceError.invalidArgument("a partition quota is a size (e.g. 1GiB), not a percentage")
        case .bytes(let bytes):
            guard bytes >= 1 else {
                throw MaintenanceError.invalidArgument("a partition quota must be at least 1 byte")
            }
            maxBytes = bytes
        }
        let name = try partitionBytes(partition)
        let report = try store.setPartitionQuota(name, maxBytes: maxBytes, allowNewPartition: allowNewPartition)
        return QuotaSummary(directory: directory, partition: partitionName(name), maxBytes: maxBytes, report: report)
    }
}

/// The bytes of a partition named as ``partitionName(_:)`` prints it.
func partitionBytes(_ name: String) throws(MaintenanceError) -> [UInt8] {
    guard name.hasPrefix("hex:") else { return Array(name.utf8) }
    let digits = Array(name.utf8.dropFirst(4))
    func value(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        default: nil
        }
    }
    var out: [UInt8] = []
    for i in stride(from: 0, to: digits.count, by: 2) {
        guard i + 1 < digits.count, let high = value(digits[i]), let low = value(digits[i + 1]) else {
            throw .invalidArgument("'\(name)' is not hex: followed by pairs of lowercase hex digits")
        }
        out.append(high << 4 | low)
    }
    return out
}
