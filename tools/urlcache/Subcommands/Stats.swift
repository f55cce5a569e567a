import ArgumentParser
import Foundation
import SharedURLCacheStore

struct Stats: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print the directory's counters.")

    @OptionGroup var options: CacheDirectoryOptions
    @Flag(help: "One JSON object instead of aligned text.") var json = false

    func run() throws {
        var configuration = CacheStoreConfiguration()
        configuration.createIfMissing = false
        let store = try CacheStore(directory: options.resolved, configuration: configuration)
        let stats = try store.statistics()
        let ratio = stats.storedBytes > 0 ? Double(stats.bodyBytes) / Double(stats.storedBytes) : 0
        if json {
            print(#"{"directory":"\#(options.resolved)","entries":\#(stats.entries),"body_bytes":\#(stats.bodyBytes),"stored_bytes":\#(stats.storedBytes),"record_bytes":\#(stats.recordBytes),"compression_ratio":\#(String(format: "%.3f", ratio)),"index_map_bytes":\#(stats.indexMapBytes),"index_used_bytes":\#(stats.indexUsedBytes),"reader_slots_used":\#(stats.readerSlotsUsed),"reader_slots_max":\#(stats.readerSlotsMax)}"#)
            return
        }
        let rows: [(String, String)] = [
            ("directory", options.resolved),
            ("entries", "\(stats.entries)"),
            ("body bytes", "\(stats.bodyBytes)"),
            ("stored bytes", "\(stats.storedBytes)"),
            ("record bytes", "\(stats.recordBytes)"),
            ("compression ratio", String(format: "%.2f", ratio)),
            ("index map", "\(stats.indexUsedBytes) of \(stats.indexMapBytes) bytes"),
            ("reader slots", "\(stats.readerSlotsUsed) of \(stats.readerSlotsMax)"),
        ]
        let width = rows.map(\.0.count).max() ?? 0
        for (name, value) in rows { print(name.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + value) }
    }
}
