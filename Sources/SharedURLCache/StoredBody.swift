import Foundation
import SharedURLCacheStore

/// A body in the store, read by a ``BodyReader`` opened at lookup (so the decision and the
/// bytes are of one version). A second reading reopens the entry, and only if it is still that
/// version (a background revalidation re-stores a body the caller is also reading).
final class StoredBody: Sendable {
    let size: Int
    private let first: Locked<BodyReader?>
    private let reopen: @Sendable () -> BodyReader?
    private let onFailure: @Sendable (CacheError) -> Void
    /// Opens the stored zlib stream of this version for compressed passthrough; nil when the
    /// body is stored uncompressed.
    let openEncoded: (@Sendable () -> BodyReader?)?

    init(
        size: Int, reader: BodyReader?, reopen: @escaping @Sendable () -> BodyReader?,
        onFailure: @escaping @Sendable (CacheError) -> Void, openEncoded: (@Sendable () -> BodyReader?)? = nil
    ) {
        self.size = size
        first = Locked(reader)
        self.reopen = reopen
        self.onFailure = onFailure
        self.openEncoded = openEncoded
    }

    /// The same body for another reader, which reopens it (only while it is still this version).
    func another() -> StoredBody {
        StoredBody(size: size, reader: nil, reopen: reopen, onFailure: onFailure, openEncoded: openEncoded)
    }

    func take() -> BodyReader? {
        if let reader = first.withLock({ value -> BodyReader? in
            defer { value = nil }; return value
        }) {
            return reader
        }
        return reopen()
    }

    func failed(_ error: CacheError) { onFailure(error) }
}
