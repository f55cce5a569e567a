import CSharedURLCache
import Foundation

/// What a process learns about another's request lease (``CacheStore/leaseState(_:releasedSince:)``).
package enum LeaseObservation: Sendable, Equatable {
    /// Another process holds it: it is fetching.
    case held
    /// Free, released by an owner that finished (since the given time): read the cache.
    case finished
    /// Free, but no owner said it finished: it died, or none held it; take it over.
    case abandoned
}

/// What trying to take a request lease gave (``CacheStore/tryLease(_:unlessFinishedSince:)``).
package enum LeaseAttempt: Sendable, Equatable {
    /// This process holds it now: fetch, then release.
    case acquired
    /// Another process holds it: it is fetching.
    case held
    /// Free, but its last owner finished after the given time: not taken; what that owner stored
    /// is newer than what the caller decided from, so look again.
    case finishedSince
}

/// Request leases: "one process is fetching this from the origin", across every process on the
/// directory (`suc_lease_try`: a byte lock in the `leases` file, dropped by the kernel when its
/// process dies). Within one process leases never conflict; collapse there first.
extension CacheStore {
    /// Takes the lease of `name`, unless another process holds it or (with `date`) its last owner
    /// finished at or after `date`. The corresponding C function is `suc_lease_try`.
    package func tryLease(_ name: [UInt8], unlessFinishedSince date: Date? = nil) throws(CacheError) -> LeaseAttempt {
        var detail = suc_error()
        var state: Int32 = 0
        let since = date.map(Self.milliseconds) ?? -1
        let rc = withHandle { handle in
            name.withUnsafeBytes { suc_lease_try(handle, $0.baseAddress, $0.count, since, &state, &detail) }
        }
        guard rc == SUC_OK else { throw CacheError(core: rc, detail) }
        switch state {
        case SUC_LEASE_ACQUIRED: return .acquired
        case SUC_LEASE_FINISHED: return .finishedSince
        default: return .held
        }
    }

    /// Whether another process holds the lease of `name`, and if not, whether its last owner
    /// finished at or after `date`. The corresponding C function is `suc_lease_state`.
    package func leaseState(_ name: [UInt8], releasedSince date: Date) throws(CacheError) -> LeaseObservation {
        var detail = suc_error()
        var state: Int32 = 0
        var released: Int32 = 0
        let since = Self.milliseconds(date)
        let rc = withHandle { handle in
            name.withUnsafeBytes {
                suc_lease_state(handle, $0.baseAddress, $0.count, since, &state, &released, &detail)
            }
        }
        guard rc == SUC_OK else { throw CacheError(core: rc, detail) }
        if state == SUC_LEASE_HELD { return .held }
        return released != 0 ? .finished : .abandoned
    }

    /// Releases the lease of `name`, noting that its owner finished.
    /// The corresponding C function is `suc_lease_release`.
    package func releaseLease(_ name: [UInt8]) throws(CacheError) {
        var detail = suc_error()
        let rc = withHandle { handle in
            name.withUnsafeBytes { suc_lease_release(handle, $0.baseAddress, $0.count, &detail) }
        }
        guard rc == SUC_OK else { throw CacheError(core: rc, detail) }
    }
}
