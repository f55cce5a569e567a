import CacheEntryFormat
import Foundation
@testable import SharedURLCache
import Testing
import SeededRandom
import TestProcess

@Suite("Memory tier", .blockingWaits)
struct MemoryTierTests {
    static let sample = ResponseHead(
        kind: .http, statusCode: 200, expectedContentLength: 1234, url: "https://api.example.com/a?b=c",
        mimeType: nil, textEncodingName: "utf-8",
        headerFields: [.init(name: "Content-Type", value: "application/json")],
        varyRequestFields: [])

    /// Seeded random operations against a plain model of an LRU; the seed is printed on failure.
    @Test(arguments: [1, 2, 3, 42] as [UInt64])
    func memoryTierMatchesAnLRUModel(seed: UInt64) {
        var rng = SplitMix(seed)
        var tier = MemoryTier(capacity: 20_000)
        var model: [(key: MemoryKey, cost: Int)] = [] // most recent first
        func entry(_ size: Int) -> CacheEntry {
            CacheEntry(
                head: MemoryTierTests.sample, body: Data(count: size), userInfo: [], storedAt: Date(),
                inMemoryOnly: true)
        }
        for step in 0..<5000 {
            let key = MemoryKey(key: [UInt8(rng.next() % 40)], variant: [])
            switch rng.next() % 10 {
            case 0..<5:
                let item = entry(Int(rng.next() % 4000))
                tier.insert(.init(entry: item, version: nil), at: key, vary: nil)
                model.removeAll { $0.key == key }
                if item.memoryCost <= 20_000 { model.insert((key, item.memoryCost), at: 0) }
                while model.reduce(0, { $0 + $1.cost }) > 20_000 { model.removeLast() }
            case 5..<8:
                let found = tier.item(at: key) != nil
                let index = model.firstIndex { $0.key == key }
                #expect(found == (index != nil), "seed \(seed) step \(step)")
                if let index { model.insert(model.remove(at: index), at: 0) }
            case 8:
                tier.remove(key)
                model.removeAll { $0.key == key }
            default:
                let capacity = Int(rng.next() % 30_000)
                _ = tier.setCapacity(capacity)
                while model.reduce(0, { $0 + $1.cost }) > capacity { model.removeLast() }
                _ = tier.setCapacity(20_000)
            }
            #expect(tier.keysByRecency == model.map(\.key), "seed \(seed) step \(step)")
            #expect(tier.usage == model.reduce(0) { $0 + $1.cost }, "seed \(seed) step \(step)")
            #expect(tier.isConsistent, "seed \(seed) step \(step)")
            if tier.keysByRecency != model.map(\.key) { return }
        }
    }
}

typealias SplitMix = SplitMix64
