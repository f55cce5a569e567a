import Foundation
import SharedURLCacheStore

/// One entry as `list` and `show` print it (record only; bodies are never read).
package struct EntrySummary: Sendable, Hashable, Codable {
    /// The partition (`hex:…` when not UTF-8).
    package var partition: String
    /// Method and URL when the key is a URL-level key; `nil` for raw store keys.
    package var method: String?
    package var url: String?
    /// The raw key in hex, for keys that do not decode.
    package var keyHex: String?
    /// The variant in hex (`""`: no variant).
    package var variantHex: String
    /// The selecting request fields, when the variant is a `Vary` key.
    package var variant: [StoredVariant.Field]?
    package var bodyBytes: Int
    package var storedBytes: Int
    package var version: UInt64
    package var storedAt: Date
    package var lastUsed: Date
    /// The API layer's record kind (opaque to the store): 1 = response, 2 = Vary spec.
    package var appFlags: UInt32
    package var isInline: Bool
    package var isCompressed: Bool
    package var headBytes: Int
    package var userInfoBytes: Int

    package init(_ record: StoredRecord) {
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
    package var keyText: String {
        if let method, let url { return "\(method) \(url)" }
        return "key:" + (keyHex ?? "")
    }
}

/// Which entries `list` prints.
package struct ListingFilter: Sendable, Hashable {
    /// Keep URL-level entries whose normalised URL starts with this (normalised like keys are).
    package var urlPrefix: String?
    /// Keep entries of this partition only.
    package var partition: String?
    /// Stop after this many entries.
    package var limit: Int?

    package init(urlPrefix: String? = nil, partition: String? = nil, limit: Int? = nil) {
        self.urlPrefix = urlPrefix
        self.partition = partition
        self.limit = limit
    }
}

/// What `urlcache list` prints.
package struct ListingReport: Sendable, Hashable, Codable {
    package var directory: String
    /// The prefix as matched (normalised).
    package var urlPrefix: String?
    package var partition: String?
    package var entries: [EntrySummary]
    /// More entries matched than `limit` allowed.
    package var truncated: Bool
    /// Records the walk could not decode.
    package var unreadableRecords: Int
}

/// What `urlcache show` prints: every variant stored for one URL, in every partition unless one
/// is given. Freshness and status need the response head, whose codec belongs to the
/// SharedURLCache layer; they are not shown yet.
package struct EntryDetailReport: Sendable, Hashable, Codable {
    package var directory: String
    /// The URL as keyed (normalised).
    package var url: String
    package var entries: [EntrySummary]
}

extension CacheMaintainer {
    /// Lists entries (records only, in index order, short read transactions).
    /// - Throws: `CacheError`.
    package func list(_ filter: ListingFilter = ListingFilter()) throws -> ListingReport {
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
            directory: directory, urlPrefix: prefix, partition: filter.partition, entries: entries,
            truncated: truncated,
            unreadableRecords: unreadable)
    }

    /// Every variant stored for `url` (GET and HEAD), in `partition` or in every partition.
    ///
    /// With a partition the keys are computed and looked up directly; without one the records are
    /// walked, because partitions are part of the (hashed) key. Lookups do not count as uses.
    /// - Throws: ``MaintenanceError/notFound(_:)`` when nothing is stored,
    ///   ``MaintenanceError/invalidArgument(_:)`` for a URL that cannot be keyed, `CacheError`.
    package func show(url: String, partition: String? = nil) throws -> EntryDetailReport {
        let normalized = try StoredKey.normalize(url)
        var records: [StoredRecord] = []
        if let partition {
            for method in ["GET", "HEAD"] {
                let key = StoredKey(partition: partition, method: method, url: normalized).encoded
                for (variant, _) in try store.variants(for: key) {
                    if let record = try store.record(for: key, variant: variant, includeBody: false, countAsUse: false)
                    {
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
            throw MaintenanceError.notFound(
                "no entry for \(normalized)" + (partition.map { " in partition '\($0)'" } ?? ""))
        }
        return EntryDetailReport(directory: directory, url: normalized, entries: records.map(EntrySummary.init))
    }
}
