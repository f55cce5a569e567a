import Foundation
import SharedURLCacheStore

/// Commands for the SharedURLCache API tests (Tests/SharedURLCacheTests): the second real
/// process acting on the entries an API instance stored. Keys, variants and heads are passed in
/// hex ("-" = empty), as the test computes them with the API's own encoders, because this
/// executable links only the store.
///
///   CacheWorker api-get DIR HEXKEY HEXVARIANT        prints "HIT <version> <appFlags> <body as UTF-8>"; exit 4 on a miss
///   CacheWorker api-version DIR HEXKEY HEXVARIANT    prints "VERSION <version>"; exit 4 on a miss
///   CacheWorker api-remove DIR HEXKEY                removes every variant, prints "REMOVED <n>"
///   CacheWorker api-remove-all DIR                   removes every entry, prints "REMOVED <n>"
///   CacheWorker api-put DIR HEXKEY HEXVARIANT HEXHEAD APPFLAGS BODY
///                                                    stores BODY (UTF-8), prints "STORED <version>"
/// Exit codes: 0 ok, 1 usage, 2 cache error, 4 miss.
enum APIWorker {
    static func run(_ store: CacheStore, _ args: [String]) -> Int32 {
        defer { fflush(nil) }
        func hex(_ index: Int) -> [UInt8]? { index < args.count ? decodeHex(args[index]) : nil }
        do {
            switch args[1] {
            case "api-get":
                guard let key = hex(3), let variant = hex(4) else { return usage() }
                guard let hit = try store.record(for: key, variant: variant) else { return 4 }
                print("HIT \(hit.version) \(hit.appFlags) \(String(decoding: hit.body ?? [], as: UTF8.self))")
            case "api-version":
                guard let key = hex(3), let variant = hex(4) else { return usage() }
                guard let version = try store.version(for: key, variant: variant) else { return 4 }
                print("VERSION \(version)")
            case "api-remove":
                guard let key = hex(3) else { return usage() }
                print("REMOVED \(try store.remove(key: key))")
            case "api-remove-all":
                print("REMOVED \(try store.removeAll())")
            case "api-put":
                guard let key = hex(3), let variant = hex(4), let head = hex(5), args.count > 7,
                    let flags = UInt32(args[6])
                else { return usage() }
                let version = try store.store(
                    RecordDescriptor(key: key, variant: variant, head: head, appFlags: flags), body: Array(args[7].utf8)
                )
                print("STORED \(version)")
            default:
                return usage()
            }
        } catch {
            FileHandle.standardError.write(Data("cache error: \(error.detailedDescription())\n".utf8))
            return 2
        }
        return 0
    }

    private static func usage() -> Int32 {
        FileHandle.standardError.write(Data("usage: see Tests/CacheWorker/APIWorker.swift\n".utf8))
        return 1
    }

    static func decodeHex(_ text: String) -> [UInt8]? {
        if text == "-" { return [] }
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = nibble(digits[index]), let low = nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
