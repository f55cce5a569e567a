import CacheMaintenance
import Foundation
import SharedURLCacheStore

extension VerificationSummary: TextReport {
    var text: String {
        func rows(_ report: VerificationReport) -> [(String, String)] {
            var rows: [(String, String)] = [
                ("entries checked", "\(report.entries)"),
                ("unreadable records", "\(report.unreadableRecords)"),
                ("missing bodies", "\(report.missingBodies)"),
                ("damaged bodies", "\(report.damagedBodies)"),
                ("stray index keys", "\(report.strayIndexKeys)"),
                ("counters match", report.countersMatch ? "yes" : "no"),
                (
                    "partition counters match",
                    report.partitionCountersMatch ? "yes" : "no (an earlier release changed entries; --fix counts them)"
                ),
                ("url-order mismatches", "\(report.urlOrderMismatches)"),
                ("orphan files", "\(report.orphanFiles)"),
                ("temp files", "\(report.tempFiles)"),
                ("leftover bytes", TextFormat.bytes(report.leftoverBytes)),
                ("other-format entries", "\(report.otherFormatEntries) (written by another release; left for it)"),
                (
                    "inline entries",
                    "\(report.inlineEntries) (their bodies live in the index: a rebuild cannot restore them)"
                ),
            ]
            if fix { rows.append(("repaired", "\(report.repaired)")) }
            if rebuild { rows.append(("rebuilt entries", "\(report.rebuiltEntries)")) }
            return rows
        }
        var text = TextFormat.pairs(
            [
                ("directory", directory),
                (
                    "checks",
                    checkBodies
                        ? "records, sizes, headers and every body"
                        : "records, sizes and headers (add --check-bodies to read every body)"
                ),
            ] + rows(found))
        if let afterFix {
            text +=
                "\n\nafter repair:\n"
                + TextFormat.pairs(rows(afterFix).filter { $0.0 != "repaired" && $0.0 != "rebuilt entries" })
        }
        let verdict =
            damageRemaining
            ? (fix ? "DAMAGED: not everything could be repaired" : "DAMAGED: run with --fix to repair")
            : damageFound ? "repaired" : "OK"
        return text + "\n\n" + verdict
    }
}
