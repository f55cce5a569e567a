import Foundation
import SharedURLCacheStore

/// What `urlcache verify` found and, with `--fix`, what was left afterwards.
package struct VerificationSummary: Sendable, Hashable, Codable {
    package var directory: String
    package var fix: Bool
    package var checkBodies: Bool
    package var rebuild: Bool
    /// The first pass (with `fix`, it also repaired what it found).
    package var found: VerificationReport
    /// With `fix` (or `rebuild`) after damage: a second, read-only pass.
    package var afterFix: VerificationReport?
    /// Damage in the first pass: unreadable records, missing or damaged bodies, stray index keys,
    /// counters that do not match the records. Orphan and temp files are not damage (they may be
    /// stores in flight); they are reported and `--fix` removes those past a 10-minute grace.
    package var damageFound: Bool
    /// Damage still there at the end: what the exit status reflects.
    package var damageRemaining: Bool
}

extension CacheMaintainer {
    /// Checks the index against the body files both ways (diskcache `check(fix:)`).
    /// - Parameters:
    ///   - fix: purge damaged entries, drop stray index keys, remove orphans and temp files older
    ///     than 10 minutes, recompute the counters; then check again.
    ///   - checkBodies: read every body and check its checksum (slow).
    ///   - rebuild: restore missing records from the record copies in body files (after index loss).
    /// - Throws: `CacheError`.
    package func verify(fix: Bool = false, checkBodies: Bool = false, rebuild: Bool = false) throws
        -> VerificationSummary
    {
        let found = try store.verify(fix: fix, checkBodies: checkBodies, rebuild: rebuild)
        var summary = VerificationSummary(
            directory: directory, fix: fix, checkBodies: checkBodies, rebuild: rebuild, found: found, afterFix: nil,
            damageFound: found.isDamaged, damageRemaining: found.isDamaged)
        if (fix || rebuild) && (found.isDamaged || found.rebuiltEntries > 0) {
            let again = try store.verify(fix: false, checkBodies: checkBodies, rebuild: false)
            summary.afterFix = again
            summary.damageRemaining = again.isDamaged
        }
        return summary
    }
}
