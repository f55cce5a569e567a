import CSharedURLCache

/// Why a compaction evicted but left the index file as it was. `du` then stays above the
/// target until a later run rewrites the index (docs/Capacity.md, "Index generations").
public struct IndexRewriteDeferral: Sendable, Hashable, Codable {
    /// What stood in the way.
    public enum Reason: String, Sendable, Hashable, Codable {
        /// A process of a release before index generations has `index.lmdb` open
        /// (``IndexRewriteDeferral/earlierReleasePid``); the rewrite waits until it is gone.
        case earlierRelease
        /// `/proc/locks` could not say whether such a process is attached: this process runs in
        /// a pid namespace of its own, the file is missing, or it did not list this process's own
        /// lock. Compact from the host's namespace.
        case cannotTell
        /// Another index generation was published during the copy, twice in a row.
        case generationChanged
        /// A process held an index generation's lock file exclusively past the bounded wait.
        case lockHeld
        /// A reason this release does not know (a newer core).
        case unknown
    }

    /// What stood in the way.
    public var reason: Reason
    /// With ``Reason/earlierRelease``: the process that holds the index.
    public var earlierReleasePid: Int?
    /// The core's words for it.
    public var message: String

    init?(_ report: suc_compact_report) {
        guard report.index_rewrite_deferred != 0 else { return nil }
        switch Int32(report.index_rewrite_deferred_reason) {
        case Int32(SUC_REWRITE_DEFERRED_EARLIER_RELEASE): reason = .earlierRelease
        case Int32(SUC_REWRITE_DEFERRED_CANNOT_TELL): reason = .cannotTell
        case Int32(SUC_REWRITE_DEFERRED_GENERATION_CHANGED): reason = .generationChanged
        case Int32(SUC_REWRITE_DEFERRED_LOCK_HELD): reason = .lockHeld
        default: reason = .unknown
        }
        earlierReleasePid = report.index_rewrite_deferred_pid > 0 ? Int(report.index_rewrite_deferred_pid) : nil
        message = coreText(report.index_rewrite_deferred_message)
    }
}
