import Foundation
import SharedURLCacheStore

/// Which entries `urlcache purge` removes: the entries matching every given criterion, or all.
package struct PurgeSelection: Sendable, Hashable, Codable {
    /// Exactly this URL (normalised), every method and variant.
    package var url: String?
    /// URLs starting with this prefix (normalised like keys are).
    package var urlPrefix: String?
    /// Entries stored at or after this date.
    package var storedSince: Date?
    /// Entries of this partition.
    package var partition: String?
    /// Every entry (no other criterion allowed).
    package var all: Bool
    /// Entries stored with this tag (`Surrogate-Key` and the like), found through the index's tag
    /// postings; combines with `partition` only.
    package var tag: String?
    /// Mark the entries stale instead of removing them (a soft purge).
    package var soft: Bool

    package init(
        url: String? = nil, urlPrefix: String? = nil, storedSince: Date? = nil, partition: String? = nil,
        all: Bool = false, tag: String? = nil, soft: Bool = false
    ) {
        self.url = url
        self.urlPrefix = urlPrefix
        self.storedSince = storedSince
        self.partition = partition
        self.all = all
        self.tag = tag
        self.soft = soft
    }

    /// - Throws: ``MaintenanceError/invalidArgument(_:)`` for an empty or contradictory selection.
    package func validated() throws(MaintenanceError) -> PurgeSelection {
        let criteria = [url != nil, urlPrefix != nil, storedSince != nil, partition != nil, tag != nil]
            .filter { $0 }.count
        if all && criteria > 0 { throw .invalidArgument("--all cannot be combined with another selection") }
        if !all && criteria == 0 {
            throw .invalidArgument("say what to purge: --url, --prefix, --since, --partition, --tag or --all")
        }
        if let tag {
            if url != nil || urlPrefix != nil || storedSince != nil {
                throw .invalidArgument("--tag combines with --partition only")
            }
            if tag.isEmpty || tag.utf8.count > 1024 || tag.contains("\n") {
                throw .invalidArgument("a tag is 1 to 1024 bytes without a newline")
            }
        }
        if url != nil && urlPrefix != nil { throw .invalidArgument("--url and --prefix cannot be combined") }
        var normalized = self
        if let url { normalized.url = try StoredKey.normalize(url) }
        normalized.urlPrefix = urlPrefix.map(StoredKey.normalizePrefix)
        return normalized
    }

    func matches(_ record: StoredRecord) -> Bool {
        if all { return true }
        if let partition, record.partition != Array(partition.utf8) { return false }
        if let tag, !record.tags.contains(tag) { return false }
        if let storedSince, record.storedAt < storedSince { return false }
        if url != nil || urlPrefix != nil {
            guard let key = StoredKey(decoding: record.key) else { return false }
            if let url, key.url != url { return false }
            if let urlPrefix, !key.url.hasPrefix(urlPrefix) { return false }
        }
        return true
    }
}

/// What `urlcache purge` removed (or, with `dryRun`, would remove).
package struct PurgeReport: Sendable, Hashable, Codable {
    package var directory: String
    package var selection: PurgeSelection
    package var dryRun: Bool
    /// Entries that matched when the directory was walked.
    package var matchedEntries: Int
    /// Their body bytes on disk (not summed by `tag-index`: 0).
    package var matchedBytes: Int
    /// Entries removed (0 in a dry run; can be below `matchedEntries` when services removed or
    /// replaced some meanwhile, or above it for `--all`/`--since`, which also take what was
    /// stored during the purge).
    package var removedEntries: Int
    /// Entries marked stale now (a soft purge; 0 otherwise and in a dry run).
    package var invalidatedEntries: Int = 0
    /// Index records read to find the entries, with `tag-index` and `key-order-index` (the
    /// entries the tag or the prefix names only).
    package var recordsRead: Int?
    /// `scan` (walk + remove each), `store-time-index` (`--since` alone), `tag-index` (`--tag`,
    /// through the index's tag postings), `key-index` (`--url`: the URL's keys in each partition
    /// looked up directly), `key-order-index` (`--prefix`: the keys under the prefix, through the
    /// index's key-order postings) or `all`.
    package var method: String
}

extension CacheMaintainer {
    /// Removes the selected entries (index commit, then unlink, as every removal).
    ///
    /// `--all` and `--since` alone go through the store's own removals (`--since` uses the
    /// store-time index, no scan); `--tag`, `--url` and `--prefix` (without `--since`) go through
    /// the index's postings and keys (`--prefix` in a directory that keeps its URL order,
    /// ``setURLOrder(kept:)``). Other selections, dry runs of a prefix, and a prefix while the
    /// directory keeps no complete URL order walk the records, then remove each matching
    /// (key, variant) exactly; a variant stored after the walk is left alone.
    /// - Throws: ``MaintenanceError/invalidArgument(_:)``, `CacheError`.
    package func purge(_ selection: PurgeSelection, dryRun: Bool = false) throws -> PurgeReport {
        let selection = try selection.validated()
        if let tag = selection.tag, !dryRun {
            let result = try store.purge(
                tag: tag, partition: selection.partition.map { Array($0.utf8) }, soft: selection.soft)
            let touched = selection.soft ? result.invalidatedEntries : result.removedEntries
            return PurgeReport(
                directory: directory, selection: selection, dryRun: false, matchedEntries: touched, matchedBytes: 0,
                removedEntries: result.removedEntries, invalidatedEntries: result.invalidatedEntries,
                recordsRead: result.recordsRead, method: "tag-index")
        }
        if let url = selection.url, selection.storedSince == nil, selection.tag == nil,
            let partitions = try selection.partition.map({ [$0] }) ?? knownPartitions()
        {
            return try purgeDirectly(url: url, partitions: partitions, selection: selection, dryRun: dryRun)
        }
        if let prefix = selection.urlPrefix, selection.storedSince == nil, !dryRun,
            let partitions = try selection.partition.map({ [$0] }) ?? knownPartitions(),
            try store.keyOrderState().complete
        {
            return try purgeInKeyOrder(prefix: prefix, partitions: partitions, selection: selection)
        }
        var report = PurgeReport(
            directory: directory, selection: selection, dryRun: dryRun, matchedEntries: 0, matchedBytes: 0,
            removedEntries: 0, method: "scan")
        let onlySince =
            selection.storedSince != nil && selection.url == nil && selection.urlPrefix == nil
            && selection.partition == nil
        if !selection.soft && (selection.all || onlySince) {
            // The store's own removals, in batches of their own: the walk (for `--since`) counts.
            if selection.all {
                let stats = try store.statistics()
                report.matchedEntries = stats.entries
                report.matchedBytes = stats.storedBytes
            } else {
                try walk(selection, into: &report, perBatch: nil)
            }
            report.method = selection.all ? "all" : "store-time-index"
            guard !dryRun else { return report }
            if let since = selection.storedSince {
                report.removedEntries = try store.removeAll(storedSince: since)
            } else {
                report.removedEntries = try store.removeAll()
            }
            return report
        }
        let store = store
        let touched = try walk(
            selection, into: &report,
            perBatch: dryRun
                ? nil
                : selection.soft
                    ? { (batch) throws(CacheError) in try store.invalidate(batch) }
                    : { (batch) throws(CacheError) in try store.remove(batch) })
        if selection.soft {
            report.invalidatedEntries = touched
        } else {
            report.removedEntries = touched
        }
        return report
    }

    /// Matches a walk hands on at a time, removed (or marked) in one commit of the store.
    static let purgeBatch = 1000

    /// Walks the records in read transactions of ``purgeBatch``, counting the matches into
    /// `report`, and hands the matches (key, variant) to `perBatch` between those transactions,
    /// a batch at a time: a walk over N matches holds at most one batch of them, never N, and
    /// removes many in each commit (``CacheStore/remove(_:)``), not one entry per commit.
    /// - Returns: the sum of what `perBatch` returned (the entries it removed or marked).
    @discardableResult
    private func walk(
        _ selection: PurgeSelection, into report: inout PurgeReport,
        perBatch: (([CacheStore.KeyReference]) throws(CacheError) -> Int)?
    ) throws -> Int {
        var pending: [CacheStore.KeyReference] = []
        var failure: CacheError?
        var touched = 0
        func flush() {
            guard let perBatch, !pending.isEmpty else { return }
            do {
                touched += try perBatch(pending)
            } catch {
                failure = error
            }
            pending.removeAll(keepingCapacity: true)
        }
        var matchedEntries = 0
        var matchedBytes = 0
        try store.forEachRecord(batchSize: Self.purgeBatch) { record in
            guard selection.matches(record) else { return true }
            matchedEntries += 1
            matchedBytes += record.footprintSize
            guard perBatch != nil else { return true }
            pending.append(CacheStore.KeyReference(key: record.key, variant: record.variant))
            if pending.count >= Self.purgeBatch { flush() }
            return failure == nil
        }
        if failure == nil { flush() }
        report.matchedEntries += matchedEntries
        report.matchedBytes += matchedBytes
        if let failure { throw failure }
        return touched
    }

    /// `--url`: the keys are known (GET and HEAD, the methods the cache keys on, in the given
    /// partition or each of the directory's), so their variants are found and removed through
    /// the index, without a walk.
    private func purgeDirectly(url: String, partitions: [String], selection: PurgeSelection, dryRun: Bool) throws
        -> PurgeReport
    {
        var report = PurgeReport(
            directory: directory, selection: selection, dryRun: dryRun, matchedEntries: 0, matchedBytes: 0,
            removedEntries: 0, method: "key-index")
        for partition in partitions {
            try purgeDirectly(url: url, partition: partition, soft: selection.soft, dryRun: dryRun, into: &report)
        }
        return report
    }

    /// `--prefix`: the keys under the prefix, found through the index's key-order postings (the
    /// keys in URL order, per partition and method), without a walk.
    private func purgeInKeyOrder(prefix: String, partitions: [String], selection: PurgeSelection) throws
        -> PurgeReport
    {
        var report = PurgeReport(
            directory: directory, selection: selection, dryRun: false, matchedEntries: 0, matchedBytes: 0,
            removedEntries: 0, recordsRead: 0, method: "key-order-index")
        for partition in partitions {
            for method in ["GET", "HEAD"] {
                let result = try store.purge(
                    urlPrefix: prefix, partition: partition, method: method, soft: selection.soft)
                report.removedEntries += result.removedEntries
                report.invalidatedEntries += result.invalidatedEntries
                report.matchedEntries += selection.soft ? result.invalidatedEntries : result.removedEntries
                report.recordsRead = (report.recordsRead ?? 0) + result.recordsRead
            }
        }
        return report
    }

    /// Every partition of the directory, from the index's partition counters (no walk), or nil
    /// when those cannot be trusted (an earlier release wrote since they were counted) or a
    /// name is not UTF-8 (a key encodes the partition as a string).
    private func knownPartitions() throws -> [String]? {
        let (partitions, exact) = try store.partitionCounters()
        guard exact else { return nil }
        var names: [String] = []
        for counters in partitions {
            let name = String(decoding: counters.partition, as: UTF8.self)
            guard Array(name.utf8) == counters.partition else { return nil }
            names.append(name)
        }
        return names
    }

    private func purgeDirectly(
        url: String, partition: String, soft: Bool, dryRun: Bool, into report: inout PurgeReport
    ) throws {
        for method in ["GET", "HEAD"] {
            let key = try StoredKey.encode(partition: partition, method: method, url: url)
            for variant in try store.variants(for: key) {
                guard
                    let record = try store.record(
                        for: key, variant: variant.variant, includeBody: false, countAsUse: false)
                else { continue }
                report.matchedEntries += 1
                report.matchedBytes += record.footprintSize
            }
            guard !dryRun else { continue }
            if soft {
                report.invalidatedEntries += try store.invalidate(key: key)
            } else {
                report.removedEntries += try store.remove(key: key)
            }
        }
    }
}
