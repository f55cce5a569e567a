import HTTPTypes

/// Fields a 304 must not overwrite in the stored head (RFC 9111 §3.2): Content-Length (named
/// explicitly), and the fields that describe the stored body's framing and coding, which the
/// cache keeps as received and a 304 cannot change (§3.2 "header fields that the cache's stored
/// response depends upon"): Content-Encoding, Transfer-Encoding, Content-Range. Hop-by-hop fields
/// (RFC 9110 §7.6.1) are excluded as well, see ``HopByHopFields``.
private let fieldsNotUpdatedBy304: Set<String> = [
    "content-length", "content-encoding", "transfer-encoding", "content-range",
]

/// Fields of a 304 that belong to the client whose request it answers, never to the stored
/// response (RFC 9111 §7.3; RFC 6265 §3; RFC 2965): a session cookie the origin sets while
/// revalidating for one client would, merged into the stored head, be replayed to every later
/// client of the entry. They reach the requesting client only.
private let fieldsForTheRequestingClientOnly: Set<String> = ["set-cookie", "set-cookie2"]

/// How a 304 Not Modified applies to a stored response (RFC 9111 §4.3.4, §3.2).
public enum NotModifiedUpdate {
    /// The names a 304 never overwrites (the table above, lowercased).
    public static var protectedFieldNames: Set<String> { fieldsNotUpdatedBy304 }

    /// The names of a 304's fields that go to the requesting client only and are never merged
    /// into the stored head (`Set-Cookie`, `Set-Cookie2`, lowercased).
    public static var requestingClientOnlyFieldNames: Set<String> { fieldsForTheRequestingClientOnly }

    /// The fields of a 304 that are added to the answer for the client whose request it
    /// answered, and to no other (``requestingClientOnlyFieldNames``), in their order.
    ///
    /// - Parameter notModified: The header fields of the 304.
    public static func requestingClientOnlyFields(of notModified: HTTPFields) -> HTTPFields {
        HTTPFields(notModified.filter { fieldsForTheRequestingClientOnly.contains($0.name.canonicalName) })
    }

    /// Whether the head a 304 refreshed may replace the stored one (RFC 9111 §3, §4.3.4): the
    /// merged head passes the storage rules a full response with those fields would meet, so a
    /// 304 that says `no-store`, or `private` to a shared cache, leaves nothing stored. On
    /// `.notStorable` the caller removes the entry instead of refreshing it.
    ///
    /// The request's `Cookie` and `Authorization` are not held against the merged head: a 304
    /// changes no body, the stored one was kept under the rules for the request that fetched
    /// it, and the only personal fields a 304 can bring (``requestingClientOnlyFieldNames``)
    /// are never stored. Judged with them, every revalidation by a signed-in client would
    /// remove an entry that serves everyone.
    ///
    /// - Parameters:
    ///   - request: The request whose revalidation got the 304.
    ///   - updated: The stored response with the merged head (``merge(stored:notModified:)``).
    ///   - configuration: Shared or private mode, cookie rules, limits.
    public static func storageDecision(
        request: HTTPRequest, updated: StoredResponse, configuration: CachePolicyConfiguration
    ) -> StorageDecision {
        var judged = request
        judged.headerFields[.cookie] = nil
        judged.headerFields[.authorization] = nil
        return StorageDecision.evaluate(
            request: judged, response: HTTPResponse(status: updated.status, headerFields: updated.headerFields),
            responseTime: updated.responseTime, configuration: configuration)
    }

    /// Whether a 304 identifies the stored response for update (RFC 9111 §4.3.4):
    /// - a strong `ETag` in the 304 selects a stored response with the same strong tag;
    /// - else a weak `ETag` selects one that matches weakly;
    /// - else a `Last-Modified` selects one with the same `Last-Modified`;
    /// - else (no validator) the 304 answers the conditional request itself: when that request
    ///   was built from this stored response alone, it is selected, validators or not.
    ///
    /// The last rule goes beyond §4.3.4's third bullet (which selects only a stored response
    /// without validators) on purpose: many origins omit `ETag` from their 304s although RFC 9110
    /// §15.4.5 requires it, and when the cache asked about exactly one stored response, the 304
    /// can only be about that one (§4.3.3: a 304 means the stored response can be updated and
    /// reused). Refusing it would cost a second, unconditional request for the same answer.
    /// A validator in the 304 that names another response still refuses it.
    ///
    /// - Parameters:
    ///   - stored: The stored response that was validated.
    ///   - notModified: The header fields of the 304.
    ///   - validatedAlone: Whether the conditional request was built from `stored` alone (the
    ///     flow's case); false when it listed several stored responses (RFC 9111 §4.3.1).
    public static func selects(stored: StoredResponse, notModified: HTTPFields, validatedAlone: Bool = true) -> Bool {
        let storedTag = stored.entityTag
        if let tagText = notModified[values: .eTag].first, let tag = EntityTag(tagText) {
            guard let storedTag else { return false }
            return tag.isWeak ? tag.weakMatches(storedTag) : tag.strongMatches(storedTag)
        }
        let reference = HTTPDate(stored.responseTime)
        if let text = notModified[values: .lastModified].first,
            let lastModified = HTTPDate(text, relativeTo: reference)
        {
            return stored.lastModified == lastModified
        }
        return validatedAlone || (storedTag == nil && stored.lastModified == nil)
    }

    /// The stored header fields updated from a 304 (RFC 9111 §3.2): every field of the 304
    /// replaces the stored fields of the same name, except hop-by-hop fields, the fields in
    /// ``protectedFieldNames`` and those in ``requestingClientOnlyFieldNames`` (which are not
    /// stored: ``requestingClientOnlyFields(of:)``); the body never changes.
    ///
    /// - Parameters:
    ///   - stored: The stored header fields.
    ///   - notModified: The header fields of the 304.
    public static func merge(stored: HTTPFields, notModified: HTTPFields) -> HTTPFields {
        let excluded = HopByHopFields.names(in: notModified).union(fieldsNotUpdatedBy304)
            .union(fieldsForTheRequestingClientOnly)
        let updates = notModified.filter { !excluded.contains($0.name.canonicalName) }
        let replaced = Set(updates.map(\.name.canonicalName))
        var result = HTTPFields()
        for field in stored where !replaced.contains(field.name.canonicalName) { result.append(field) }
        for field in updates { result.append(field) }
        return result
    }
}
