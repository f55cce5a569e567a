// The fuzz package compiles SplitMix64 into this file's own module (Fuzz/Package.swift).
#if canImport(SeededRandom)
import SeededRandom
#endif
/// Self-checking bodies for the multi-process tests (docs/Reliability.md I2/I3): every body names its
/// key and sequence number and its payload is a pure function of both, so a reader can prove a
/// body is complete and belongs to the key it asked for.
enum TestBody {
    static let magic: [UInt8] = Array("SUCT".utf8)

    static func make(key: String, seq: UInt64, size: Int) -> [UInt8] {
        var out = magic
        let k = Array(key.utf8)
        append(&out, UInt64(k.count))
        out += k
        append(&out, seq)
        append(&out, UInt64(size))
        out += payload(key: k, seq: seq, size: size)
        return out
    }

    enum Check: Equatable {
        case valid(seq: UInt64)
        case invalid(String)
    }

    static func check(_ body: [UInt8], expectedKey: String) -> Check {
        var i = 0
        func read64() -> UInt64? {
            guard i + 8 <= body.count else { return nil }
            var v: UInt64 = 0
            for j in 0..<8 { v |= UInt64(body[i + j]) << (8 * j) }
            i += 8
            return v
        }
        guard body.count >= 4, Array(body[0..<4]) == magic else { return .invalid("bad magic") }
        i = 4
        guard let kl = read64(), kl < 4096, i + Int(kl) <= body.count else { return .invalid("bad key length") }
        let k = Array(body[i..<(i + Int(kl))])
        i += Int(kl)
        guard k == Array(expectedKey.utf8) else {
            return .invalid("body of key \(String(decoding: k, as: UTF8.self)) returned for \(expectedKey)")
        }
        guard let seq = read64(), let size = read64() else { return .invalid("truncated header") }
        guard body.count - i == Int(size) else {
            return .invalid("torn: \(body.count - i) payload bytes, expected \(size)")
        }
        guard Array(body[i...]) == payload(key: k, seq: seq, size: Int(size)) else {
            return .invalid("payload mismatch")
        }
        return .valid(seq: seq)
    }

    private static func append(_ out: inout [UInt8], _ v: UInt64) {
        for j in 0..<8 { out.append(UInt8(truncatingIfNeeded: v >> (8 * j))) }
    }

    /// JSON-ish text from a seeded generator: compressible like real API bodies.
    static func payload(key: [UInt8], seq: UInt64, size: Int) -> [UInt8] {
        var state: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in key { state = (state ^ UInt64(b)) &* 0x100_0000_01b3 }
        var rng = SplitMix64(seed: state ^ seq)
        let alphabet = Array("{\"id\":0123456789,abcdef}".utf8)
        var out = [UInt8]()
        out.reserveCapacity(size)
        while out.count < size {
            let r = rng.next()
            for s in stride(from: 0, to: 64, by: 8) where out.count < size {
                out.append(alphabet[Int((r >> UInt64(s)) & 0xff) % alphabet.count])
            }
        }
        return out
    }
}
