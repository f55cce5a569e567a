import HTTPTypes
import NIOCore
import NIOHTTP1
import SharedURLCache

/// A memory item's stored head serialised for the wire once, kept with the item
/// (``MemoryItemRendition``): the item's later hits write these bytes instead of converting the
/// stored fields to NIO's `HTTPHeaders` and serialising them again each time (docs/Proxy.md, "A
/// hit from memory"). The body is not kept here: a second copy of every body served would take
/// the memory tier past its capacity, which counts the item's own bytes only.
///
/// Only what every hit of the item sends alike is prepared: the status and the stored fields in
/// order, spelled as `CachingHTTPClient` hands them out. Each answer puts its own `Age` where the
/// flow puts it (in place of the first stored `Age`, else after the stored fields), and
/// ``ProxyHandler`` appends its per-request fields after them as on every other answer (`Date` if
/// the head has none, the cache status fields, `Connection`), so the bytes are those of the
/// general path. A head the general path would change in other ways (a `Content-Length` other
/// than the body's, framing or `Connection` fields, a status without a body) is not prepared: its
/// hits take the general path.
final class PreparedStoredHead: MemoryItemRendition {
    /// The stored status, as `CachingHTTPClient` converts it.
    let status: HTTPResponseStatus
    /// The stored fields before the first `Age` (`Name: value` and CRLF each).
    let fieldsBeforeAge: [UInt8]
    /// The stored fields after it, other `Age` fields left out (the flow drops them).
    let fieldsAfterAge: [UInt8]
    /// The stored head has `Date` (else ``ProxyHandler`` adds one per answer).
    let hasDate: Bool
    /// The stored `Content-Length`: the body's length.
    let contentLength: Int
    /// The nginx-style cache status field the head was prepared for: stored fields of that name
    /// are left out, since ``ProxyHandler`` replaces them on every answer. A proxy with another
    /// name prepares the head again.
    let cacheStatusHeader: String?

    /// - Returns: nil for a head that the general path would change beyond the per-request fields.
    init?(_ answer: MemoryItemAnswer, cacheStatusHeader: String?) {
        let status = HTTPResponseStatus(statusCode: answer.status.code, reasonPhrase: answer.status.reasonPhrase)
        guard status.mayHaveResponseBody else { return nil } // its Content-Length would go
        let replaced = cacheStatusHeader?.lowercased()
        let bodyLength = String(answer.body.count)
        var before: [UInt8] = []
        var after: [UInt8] = []
        var ageSeen = false
        var contentLengths = 0
        var hasDate = false
        for field in answer.storedFields {
            let name = field.name.canonicalName // lowercase
            if name == replaced { continue }
            switch name {
            case "content-length":
                // ProxyHandler frames a whole body by its length: the stored one must be it.
                guard field.value == bodyLength else { return nil }
                contentLengths += 1
            case "transfer-encoding", "connection":
                return nil // never stored (hop-by-hop, RFC 9111 §3.1), and the framing would change them
            case "age":
                ageSeen = true
                continue
            case "date":
                hasDate = true
            default:
                break
            }
            if ageSeen {
                after.appendFieldLine(field.name.rawName, field.value)
            } else {
                before.appendFieldLine(field.name.rawName, field.value)
            }
        }
        guard contentLengths == 1 else { return nil }
        self.status = status
        fieldsBeforeAge = before
        fieldsAfterAge = after
        self.hasDate = hasDate
        contentLength = answer.body.count
        self.cacheStatusHeader = cacheStatusHeader
    }
}

/// A prepared stored head as one answer sends it: with that answer's `Age` (RFC 9111 §5.1), and
/// the fields ``ProxyHandler`` adds to the answer after the stored ones, already serialised.
struct PreparedHeadUse: Sendable {
    let prepared: PreparedStoredHead
    let age: String
    /// The answer's own field lines (``AnswerFieldLines``), which follow the stored fields.
    var answerFields: [UInt8] = []

    /// Bytes of the stored fields with `Age`, and of the answer's fields.
    var byteCount: Int {
        prepared.fieldsBeforeAge.count + 7 + age.utf8.count + prepared.fieldsAfterAge.count + answerFields.count
    }
}
