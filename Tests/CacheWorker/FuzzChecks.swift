import Foundation
import HTTPCacheSemantics
import HTTPTypes
@_spi(Testing) import SharedURLCacheStore

/// One check per fuzz target (docs/Reliability.md T12). The libFuzzer targets in Fuzz/ compile this very
/// file (a symlink), and `CacheWorker fuzz-replay DIR` runs the committed Fuzz/FailCases through
/// it, so a crash found once stays a unit test. A check returns normally or traps.
///
/// The C decoders are reached through the public API only (no test hook in the core): the input
/// is written as an index record (`debugOverwriteRecord`) or as a body file, then looked up. A
/// lookup must be a miss, or a hit whose body is whole; it must never crash or read out of bounds.
public enum FuzzChecks {
    public static let targets = ["cache-control", "http-date", "vary", "record", "body-file"]

    public static func run(_ target: String, _ data: [UInt8]) {
        switch target {
        case "cache-control": cacheControl(data)
        case "http-date": httpDate(data)
        case "vary": vary(data)
        case "record": record(data)
        case "body-file": bodyFile(data)
        default: fatalError("unknown fuzz target \(target)")
        }
    }

    // MARK: Swift parsers

    public static func cacheControl(_ data: [UInt8]) {
        let text = String(decoding: data, as: UTF8.self)
        let cc = CacheControl(text)
        for v in [cc.maxAge, cc.sharedMaxAge, cc.minFresh, cc.staleWhileRevalidate, cc.staleIfError] {
            if let v { precondition(v >= 0, "negative delta-seconds from \(text.debugDescription)") }
        }
        // The same bytes parse the same way twice (one parser, no hidden state).
        precondition(CacheControl(text) == cc)
    }

    public static func httpDate(_ data: [UInt8]) {
        let text = String(decoding: data, as: UTF8.self)
        let reference = HTTPDate(secondsSince1970: 1_700_000_000)
        guard let date = HTTPDate(text, relativeTo: reference) else { return }
        // Whatever was accepted prints as IMF-fixdate and reads back as the same instant.
        let printed = date.imfFixdate
        precondition(
            HTTPDate(printed, relativeTo: reference) == date, "round trip of \(text.debugDescription) via \(printed)")
    }

    public static func vary(_ data: [UInt8]) {
        let text = String(decoding: data, as: UTF8.self)
        var fields = HTTPFields()
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).prefix(8) {
            fields.append(HTTPField(name: .vary, value: String(line)))
        }
        let vary = VaryFields(responseFields: fields)
        precondition(vary.names.count <= VaryFields.maximumParsedNames + 1)
        precondition(Set(vary.names).count == vary.names.count, "duplicate Vary names")
    }

    // MARK: C decoders through the public API

    /// A store on /dev/shm (cheap commits), made once per process.
    struct Fixture {
        let store: CacheStore
        let record: [UInt8]
        let bodyPath: String
        let body: [UInt8]
        let file: [UInt8]

        /// Puts the valid record and body file back (a purge may have removed them).
        func restore(file bytes: [UInt8]? = nil) throws(CacheError) {
            try store.debugOverwriteRecord(for: Array("b".utf8), with: record)
            unlink(bodyPath)
            FileManager.default.createFile(atPath: bodyPath, contents: Data(bytes ?? file))
        }
    }

    nonisolated(unsafe) static var fixture: Fixture?

    static func setUp() -> Fixture {
        if let fixture { return fixture }
        let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
        let dir = base + "/suc-fuzz-\(getpid())"
        try? FileManager.default.removeItem(atPath: dir)
        atexit { try? FileManager.default.removeItem(atPath: "/dev/shm/suc-fuzz-\(getpid())") }
        let store = try! CacheStore(directory: dir)
        let body = TestBody.make(key: "b", seq: 1, size: 20_000)
        try! store.store(RecordDescriptor(key: Array("b".utf8), head: Array("HTTP/1.1 200".utf8)), body: body)
        let record = try! store.debugRawRecord(for: Array("b".utf8))!
        let path = dir + "/" + store.debugBodyPath(for: Array("b".utf8))!
        let file = [UInt8](FileManager.default.contents(atPath: path)!)
        fixture = Fixture(store: store, record: record, bodyPath: path, body: body, file: file)
        return fixture!
    }

    /// Input byte 0 picks the mode: odd → the rest XORed onto a valid record (keeps structure so
    /// the fuzzer gets deep quickly); even → the rest is the record as is.
    public static func record(_ data: [UInt8]) {
        let f = setUp()
        let key = Array("b".utf8)
        var raw = Array(data.dropFirst())
        if let mode = data.first, mode & 1 == 1 {
            var template = f.record
            for (i, b) in raw.prefix(template.count).enumerated() { template[i] ^= b }
            raw = template + raw.dropFirst(template.count)
        }
        do {
            try f.restore()
            try f.store.debugOverwriteRecord(for: key, with: raw)
            if let hit = try f.store.record(for: key) {
                precondition(hit.body?.count == hit.bodySize, "hit with a body of the wrong length")
            }
            _ = try f.store.record(for: key, variant: [], includeBody: false, countAsUse: false)
            _ = try f.store.version(for: key)
        } catch {
            // Typed errors are fine; crashes are not.
        }
    }

    /// The body file of a valid record replaced by the input (odd first byte: XORed onto the
    /// real file). A hit must return exactly the stored body.
    public static func bodyFile(_ data: [UInt8]) {
        let f = setUp()
        let key = Array("b".utf8)
        var file = Array(data.dropFirst())
        if let mode = data.first, mode & 1 == 1 {
            var template = f.file
            for (i, b) in file.prefix(template.count).enumerated() { template[i] ^= b }
            file = template + file.dropFirst(template.count)
        }
        do {
            try f.restore(file: file)
            if let hit = try f.store.record(for: key) {
                precondition(hit.body == f.body, "a tampered body file was returned as a hit")
            }
        } catch {}
    }

    // MARK: Replay

    /// Runs every file under DIR/<target>/ through its check; prints the count per target.
    public static func replay(_ dir: String) -> Int32 {
        var total = 0
        for target in targets {
            let sub = dir + "/" + target
            let files = ((try? FileManager.default.contentsOfDirectory(atPath: sub)) ?? []).filter {
                !$0.hasPrefix(".")
            }.sorted()
            for name in files {
                guard let data = FileManager.default.contents(atPath: sub + "/" + name) else { continue }
                run(target, [UInt8](data))
                total += 1
            }
            print("REPLAYED \(target) \(files.count)")
        }
        print("REPLAYED total=\(total)")
        fflush(nil)
        return 0
    }
}
