import HTTPCacheSemantics
import HTTPTypes
import Testing

/// A 304 refreshes the stored head (RFC 9111 §3.2, §4.3.4) under the storage rules a full response
/// meets, and never stores what belongs to the one client it answered (RFC 9111 §7.3).
@Suite
struct NotModifiedStorageTests {
    /// The stored response every case refreshes: storable in a shared cache, with a validator.
    static let entry = stored(200, [("Cache-Control", "max-age=0"), ("ETag", "\"v1\""), ("Date", httpDate(0))])

    /// The stored response updated by a 304 with `fields`, as the flow makes it.
    static func updated(by notModifiedFields: [(String, String)]) -> StoredResponse {
        var updated = entry
        updated.headerFields = NotModifiedUpdate.merge(
            stored: entry.headerFields, notModified: fields(notModifiedFields))
        return updated
    }

    @Test("a 304's Set-Cookie and Set-Cookie2 are never merged into the stored head, and go to its client alone")
    func cookiesAreNotMerged() {
        let notModified = fields([
            ("Set-Cookie", "sid=VICTIM; Path=/"), ("Cache-Control", "max-age=600"), ("Set-Cookie2", "a=1"),
            ("Set-Cookie", "theme=dark"),
        ])
        let merged = NotModifiedUpdate.merge(stored: Self.entry.headerFields, notModified: notModified)
        #expect(!merged.contains(.setCookie))
        #expect(!merged.contains(HTTPField.Name("Set-Cookie2")!))
        #expect(merged[.cacheControl] == "max-age=600")
        let forClient = NotModifiedUpdate.requestingClientOnlyFields(of: notModified)
        #expect(forClient.map(\.value) == ["sid=VICTIM; Path=/", "a=1", "theme=dark"])
    }

    @Test(
        "the merged head passes the storage rules: no-store, and private in a shared cache, refuse it (§3, §5.2.2)",
        arguments: [
            ([("Cache-Control", "no-store")], NotStorableReason.responseNoStore),
            ([("Cache-Control", "private, max-age=600")], NotStorableReason.privateResponse),
            ([("Vary", "*")], NotStorableReason.varyWildcard),
        ])
    func refusedRefresh(notModifiedFields: [(String, String)], reason: NotStorableReason) {
        let decision = NotModifiedUpdate.storageDecision(
            request: request(), updated: Self.updated(by: notModifiedFields), configuration: sharedConfiguration)
        #expect(decision == .notStorable(reason))
    }

    @Test("a private 304 refreshes a private cache's entry; a no-store one does not")
    func privateCache() {
        let privately = NotModifiedUpdate.storageDecision(
            request: request(), updated: Self.updated(by: [("Cache-Control", "private, max-age=600")]),
            configuration: privateConfiguration)
        #expect(privately.isStorable)
        let noStore = NotModifiedUpdate.storageDecision(
            request: request(), updated: Self.updated(by: [("Cache-Control", "no-store")]),
            configuration: privateConfiguration)
        #expect(noStore == .notStorable(.responseNoStore))
    }

    @Test(
        "a signed-in client's revalidation refreshes the shared entry: its Cookie and Authorization are not held against it"
    )
    func requestCredentialsDoNotRemove() {
        let updated = Self.updated(by: [("Cache-Control", "max-age=600"), ("Set-Cookie", "sid=VICTIM")])
        let decision = NotModifiedUpdate.storageDecision(
            request: request(.get, [("Cookie", "sid=VICTIM"), ("Authorization", "Bearer secret")]),
            updated: updated, configuration: sharedConfiguration)
        #expect(decision.isStorable)
        #expect(!updated.headerFields.contains(.setCookie))
    }
}
