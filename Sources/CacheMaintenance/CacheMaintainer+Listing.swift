import CacheEntryFormat
import Foundation
import SharedURLCacheStore

/// One entry as `list` and `show` print it (record only; bodies are never read).
public struct EntrySummary: Sendable, Hashable, Codable {
    /// The partition (`hex:…` when not UTF-8).
    public var partition: String
    /// Method and URL when the key is a URL-level key; `nil` for raw store keys.
    public var method: String?
    public var url: String?
    /// The raw key in hex, for keys that do not decode.
    public var keyHex: String?
    /// The variant in hex (`""`: no variant).
    public var variantHex: String
    /// The selecting request fields, when the variant is a `Vary` key.
    public var variant: [StoredVariant.Field]?
    public var bodyBytes: Int
    public var storedBytes: Int
    public var version: UInt64
    public var storedAt: Date
    public var lastUsed: Date
    /// The API layer's record kind (opaque to the store): 1 = response, 2 = Vary spec.
    public var appFlags: UInt32
    public var isInline: Bool
    public var isCompressed: Bool
    public var headBytes: Int
    public var userInfoBytes: Int

    public init(_ record: StoredRecord) {
        let key = StoredKey(decoding: record.key)
        partition = partitionName(record.partition)
        method = key?.method
        url = key?.url
        keyHex = key == nil ? hexString(record.key) : nil
        variantHex = hexString(record.variant)
        variant = StoredVariant(decoding: record.variant)?.fields
        bodyBytes = record.bodySize
        storedBytes = record.storedSize
        version = record.version
        storedAt = record.storedAt
        lastUsed = record.lastUsed
        appFlags = record.appFlags
        isInline = record.isInline
        isCompressed = record.isCompressed
        headBytes = record.head.count
        userInfoBytes = record.userInfo.count
    }

    /// "GET https://…", or "key:<hex>" for a raw key.
    public var keyText: String {
        if let method, let url { return "\(method) \(url)" }
        return "key:" + (keyHex ?? "")
    }
}

/// Which entries `list` prints.
public struct ListingFilter: Sendable, Hashable {
    /// Keep URL-level entries whose normalised URL starts with this (normalised like keys are).
    public var urlPrefix: String?
    /// Keep entries of this partition only.
    public var partition: String?
    /// Stop after this many entries.
    public var limit: Int?

    public init(urlPrefix: String? = nil, partition: String? = nil, limit: Int? = nil) {
        self.urlPrefix = urlPrefix
        self.partition = partition
        self.limit = limit
    }
}

/// What `urlcache list` prints.
public struct ListingReport: TextReport, Sendable, Hashable, Codable {
    public var directory: String
    /// The prefix as matched (normalised).
    public var urlPrefix: String?
    public var partition: String?
    public var entries: [EntrySummary]
    /// More entries matched than `limit` allowed.
    public var truncated: Bool
    /// Records the walk could not decode.
    public var unreadableRecords: Int

    public var text: String {
        let rows = entries.map { entry in
            [
                TextFormat.date(entry.lastUsed), TextFormat.bytes(entry.bodyBytes),
                entry.partition.isEmpty ? "-" : entry.partition,
                entry.variantHex.isEmpty ? "-" : (entry.variant.map { StoredVariant.text(of: $0) } ?? "hex:" + entry.variantHex),
                entry.keyText,
            ]
        }
        var text = TextFormat.table(["LAST USED", "BODY", "PARTITION", "VARIANT", "KEY"], rows, rightAligned: [1])
        text += "\n\(entries.count) entries" + (truncated ? " (limit reached; more match)" : "")
        if unreadableRecords > 0 { text += ", \(unreadableRecords) unreadable records (run urlcache verify)" }
        return text
    }
}

/// What `urlcache show` prints: every variant stored for one URL, in every partition unless one
/// is given. Freshness and status need the response head, whose codec belongs to the
/// SharedURLCache layer; they are not shown yet.
public struct EntryDetailReport: TextReport, Sendable, Hashable, Codable {
    public var directory: String
    /// The URL as keyed (normalised).
    public var url: String
    public var entries: [EntrySummary]

    public var text: String {
        var blocks: [String] = []
        for entry in entries {
            blocks.append(TextFormat.pairs([
                ("key", entry.keyText),
                ("partition", entry.partition.isEmpty ? "(default)" : entry.partition),
                ("variant", entry.variantHex.isEmpty ? "(none)" : entry.variant.map { StoredVariant.text(of: $0) } ?? "hex:" + entry.variantHex),
                ("body", "\(TextFormat.bytes(entry.bodyBytes)) (\(entry.bodyBytes) bytes), \(TextFormat.bytes(entry.storedBytes)) stored, " + (entry.isInline ? "inline" : "file") + (entry.isCompressed ? ", compressed" : ", raw")),
                ("head / userInfo", "\(entry.headBytes) / \(entry.userInfoBytes) bytes"),
                ("stored at", TextFormat.date(entry.storedAt)),
                ("last used", TextFormat.date(entry.lastUsed)),
                ("version", "\(entry.version)"),
                ("record kind", RecordKind(rawValue: entry.appFlags).map(\.displayName) ?? "\(entry.appFlags)"),
            ]))
        }
        return blocks.joined(separator: "\n\n") + "\n\n\(entries.count) entries for \(url)"
    }
}

extension StoredVariant {
    static func text(of fields: [Field]) -> String {
        fields.isEmpty ? "(none)" : fields.map { "\($0.name)=\($0.value ?? "(absent)")" }.joined(separator: "; ")
    }
}

extension CacheMaintainer {
    /// Lists entries (records only, in index order, short read transactions).
    /// - Throws: `CacheError`.
    public func list(_ filter: ListingFilter = ListingFilter()) throws -> ListingReport {
        let prefix = filter.urlPrefix.map(StoredKey.normalizePrefix)
        let partition = filter.partition.map { Array($0.utf8) }
        var entries: [EntrySummary] = []
        var truncated = false
        let unreadable = try store.forEachRecord { record in
            if let partition, record.partition != partition { return true }
            if let prefix {
                guard let key = StoredKey(decoding: record.key), key.url.hasPrefix(prefix) else { return true }
            }
            if let limit = filter.limit, entries.count >= limit {
                truncated = true
                return false
            }
            entries.append(EntrySummary(record))
            return true
        }
        return ListingReport(
            directory: directory, urlPrefix: prefix, partition: filter.partition, entries: entries, truncated: truncated,
            unreadableRecords: unreadable)
    }

    /// Every variant stored for `url` (GET and HEAD), in `partition` or in every partition.
    ///
    /// With a partition the keys are computed and looked up directly; without one the records are
    /// walked, because partitions are part of the (hashed) key. Lookups do not count as uses.
    /// - Throws: ``MaintenanceError/notFound(_:)`` when nothing is stored,
    ///   ``MaintenanceError/invalidArgument(_:)`` for a URL that cannot be keyed, `CacheError`.
    public func show(url: String, partition: String? = nil) throws -> EntryDetailReport {
        let normalized = try StoredKey.normalize(url)
        var records: [StoredRecord] = []
        if let partition {
            for method in ["GET", "HEAD"] {
                let key = StoredKey(partition: partition, method: method, url: normalized).encoded
                for (variant, _) in try store.variants(for: key) {
                    if let record = try store.record(for: key, variant: variant, includeBody: false, countAsUse: false) {
                        records.append(record)
                    }
                }
            }
        } else {
            try store.forEachRecord { record in
                if StoredKey(decoding: record.key)?.url == normalized { records.append(record) }
                return true
            }
        }
        guard !records.isEmpty else {
            throw MaintenanceError.notFound("no entry for \(normalized)" + (partition.map { " in partition '\($0)'" } ?? ""))
        }
        return EntryDetailReport(directory: directory, url: normalized, entries: records.map(EntrySummary.init))
    }
}
