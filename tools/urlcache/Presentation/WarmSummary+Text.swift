#if canImport(CachingProxy)
import CachingProxy

extension WarmSummary: TextReport {
    var text: String {
        func reasons(_ counts: [String: Int]) -> String {
            let total = counts.values.reduce(0, +)
            guard total > 0 else { return "0" }
            let parts = counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
            return "\(total) (" + parts.map { "\($0.key) \($0.value)" }.joined(separator: ", ") + ")"
        }
        var rows: [(String, String)] = [
            ("urls", "\(urls)"),
            ("stored", "\(stored)"),
            ("already fresh", "\(alreadyFresh)"),
            ("not storable", reasons(notStorable)),
            ("failed", reasons(failed)),
        ]
        if stoppedBySignal {
            rows.append(("interrupted", "\(interrupted) in flight, \(notStarted) not started"))
        }
        let rate = seconds > 0 ? Double(originRequests) / seconds : 0
        rows.append(("origin requests", "\(originRequests) (\(String(format: "%.1f", rate))/s)"))
        rows.append(("body bytes", TextFormat.bytes(bodyBytes)))
        rows.append(("time", String(format: "%.2f s", seconds)))
        return TextFormat.pairs(rows)
    }
}
#endif
