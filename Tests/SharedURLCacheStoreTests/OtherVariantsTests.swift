import Foundation
import SharedURLCacheStore
import Testing
import TestProcess

/// A store and its variant bookkeeping in one commit (`OtherVariants`, docs/Formats.md "Variants").
@Suite(.blockingWaits, .timeLimit(.minutes(5)))
struct OtherVariantsTests {
    let key = bytes("https://example.com/listing")
    let selectorFlags: UInt32 = 2

    func variants(_ store: CacheStore) throws -> Set<[UInt8]> {
        Set(try store.variants(for: key).map(\.0))
    }

    func storeVariant(_ store: CacheStore, _ variant: String, selector: String, body: [UInt8] = bytes("b")) throws
        -> UInt64
    {
        try store.store(
            RecordDescriptor(
                key: key, variant: bytes(variant), head: bytes("response"), appFlags: 1,
                otherVariants: .selectedBy(head: bytes(selector), appFlags: selectorFlags)),
            body: body)
    }

    /// A store on `dir` holding the variants "en" and "de" of `key`, selected by Accept-Language.
    func storeWithLanguageVariants(in dir: TestDirectory) throws -> CacheStore {
        let store = try CacheStore(directory: dir.cache)
        _ = try storeVariant(store, "en", selector: "accept-language")
        _ = try storeVariant(store, "de", selector: "accept-language")
        return store
    }

    @Test("a store selected by a vary spec puts the selector at the empty variant, once")
    func selectorWrittenOnce() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        _ = try storeVariant(store, "en", selector: "accept-language")
        let selector = try #require(try store.record(for: key, variant: [], includeBody: false))
        #expect(
            selector.head == bytes("accept-language") && selector.appFlags == selectorFlags && selector.bodySize == 0)
        _ = try storeVariant(store, "de", selector: "accept-language")
        let again = try #require(try store.record(for: key, variant: [], includeBody: false))
        #expect(again.version == selector.version, "an identical selector is left as it is")
        #expect(try variants(store) == [[], bytes("en"), bytes("de")])
        #expect(try store.statistics().entries == 3)
    }

    @Test("another selector replaces the old one and removes the variants it selected")
    func selectorChange() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        _ = try storeVariant(store, "en", selector: "accept-language")
        _ = try storeVariant(
            store, "de", selector: "accept-language", body: makeBody(size: 64 << 10, compressible: false, seed: 1))
        _ = try storeVariant(store, "gzip", selector: "accept-encoding")
        #expect(try variants(store) == [[], bytes("gzip")])
        #expect(try store.record(for: key, variant: [], includeBody: false)?.head == bytes("accept-encoding"))
        #expect(try store.statistics().entries == 2)
        let files = try FileManager.default.subpathsOfDirectory(atPath: dir.cache + "/bodies").filter { $0.count > 3 }
        #expect(files.isEmpty, "the removed variant's body file went with it")
        let report = try store.verify()
        #expect(report.countersMatch && !report.isDamaged)
    }

    @Test("a sole entry removes every variant and the selector in its commit")
    func soleVariant() throws {
        let dir = TestDirectory()
        let store = try storeWithLanguageVariants(in: dir)
        try store.store(
            RecordDescriptor(key: key, head: bytes("plain"), appFlags: 1, otherVariants: .remove), body: bytes("p"))
        #expect(try variants(store) == [[]])
        #expect(try store.record(for: key, variant: [], includeBody: true)?.body == bytes("p"))
        // A response at the empty variant is replaced by a selector, and nothing else is lost.
        _ = try storeVariant(store, "fr", selector: "accept-language")
        #expect(try variants(store) == [[], bytes("fr")])
        #expect(try store.record(for: key, variant: [], includeBody: false)?.appFlags == selectorFlags)
    }

    @Test("leave touches no other variant; other keys are never touched")
    func leaveAndOtherKeys() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        try store.store(RecordDescriptor(key: bytes("other"), variant: bytes("x")), body: bytes("o"))
        _ = try storeVariant(store, "en", selector: "accept-language")
        try store.store(RecordDescriptor(key: key, variant: bytes("raw")), body: bytes("r"))
        #expect(try variants(store) == [[], bytes("en"), bytes("raw")])
        try store.store(RecordDescriptor(key: key, otherVariants: .remove), body: bytes("p"))
        #expect(try variants(store) == [[]])
        #expect(try store.record(for: bytes("other"), variant: bytes("x")) != nil)
    }

    @Test("a store refused for its size commits no bookkeeping")
    func refusedStoreKeepsVariants() throws {
        let dir = TestDirectory()
        let store = try storeWithLanguageVariants(in: dir)
        #expect(throws: CacheError.self) {
            try store.store(
                RecordDescriptor(
                    key: key, variant: bytes("gzip"),
                    otherVariants: .selectedBy(head: bytes("accept-encoding"), appFlags: selectorFlags)),
                body: makeBody(size: 256 << 10, compressible: false, seed: 2), capacityBytes: 64 << 10)
        }
        #expect(try variants(store) == [[], bytes("en"), bytes("de")])
        #expect(try store.record(for: key, variant: [], includeBody: false)?.head == bytes("accept-language"))
    }

    @Test("a selector needs a variant of its own; bad combinations are typed errors")
    func badInput() throws {
        let dir = TestDirectory()
        let store = try CacheStore(directory: dir.cache)
        _ = try storeVariant(store, "en", selector: "accept-language")
        #expect {
            try store.store(
                RecordDescriptor(key: key, otherVariants: .selectedBy(head: bytes("x"), appFlags: 2)), body: [])
        } throws: { ($0 as? CacheError)?.code == .invalidInput }
        #expect(try variants(store) == [[], bytes("en")], "nothing stored is lost")
    }
}
