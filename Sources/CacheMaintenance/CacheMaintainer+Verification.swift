import Foundation
import SharedURLCacheStore

/// What `urlcache verify` found and, with `--fix`, what was left afterwards.
public struct VerificationSummary: TextReport, Sendable, Hashable, Codable {
    public var directory: String
    public var fix: Bool
    public var checkBodies: Bool
    public var rebuild: Bool
    /// The first pass (with `fix`, it also repaired what it found).
    public var found: VerificationReport
    /// With `fix` (or `rebuild`) after damage: a second, read-only pass.
    public var afterFix: VerificationReport?
    /// Damage in the first pass: unreadable records, missing or damaged bodies, stray index keys,
    /// counters that do not match the records. Orphan and temp files are not damage (they may be
    /// stores in flight); they are reported and `--fix` removes those past a 10-minute grace.
    public var damageFound: Bool
    /// Damage still there at the end: what the exit status reflects.
    public var damageRemaining: Bool

    public var text: String {
        func rows(_ report: VerificationReport) -> [(String, String)] {
            var rows: [(String, String)] = [
                ("entries checked", "\(report.entries)"),
                ("unreadable records", "\(report.unreadableRecords)"),
                ("missing bodies", "\(report.missingBodies)"),
                ("damaged bodies", "\(report.damagedBodies)"),
                ("stray index keys", "\(report.strayIndexKeys)"),
                ("counters match", report.countersMatch ? "yes" : "no"),
                ("orphan files", "\(report.orphanFiles)"),
                ("temp files", "\(report.tempFiles)"),
                ("leftover bytes", TextFormat.bytes(report.leftoverBytes)),
                ("other-format entries", "\(report.otherFormatEntries) (written by another release; left for it)"),
                ("inline entries", "\(report.inlineEntries) (their bodies live in the index: a rebuild cannot restore them)"),
            ]
            if fix { rows.append(("repaired", "\(report.repaired)")) }
            if rebuild { rows.append(("rebuilt entries", "\(report.rebuiltEntries)")) }
            return rows
        }
        var text = TextFormat.pairs([("directory", directory), ("checks", checkBodies ? "records, sizes, headers and every body" : "records, sizes and headers (add --check-bodies to read every body)")] + rows(found))
        if let afterFix {
            text += "\n\nafter repair:\n" + TextFormat.pairs(rows(afterFix).filter { $0.0 != "repaired" && $0.0 != "rebuilt entries" })
        }
        let verdict = damageRemaining ? (fix ? "DAMAGED: not everything could be repaired" : "DAMAGED: run with --fix to repair")
            : damageFound ? "repaired" : "OK"
        return text + "\n\n" + verdict
    }
}

extension CacheMaintainer {
    /// Checks the index against the body files both ways (diskcache `check(fix:)`).
    /// - Parameters:
    ///   - fix: purge damaged entries, drop stray index keys, remove orphans and temp files older
    ///     than 10 minutes, recompute the counters; then check again.
    ///   - checkBodies: read every body and check its checksum (slow).
    ///   - rebuild: restore missing records from the record copies in body files (after index loss).
    /// - Throws: `CacheError`.
    public func verify(fix: Bool = false, checkBodies: Bool = false, rebuild: Bool = false) throws -> VerificationSummary {
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
