import CSharedURLCache
@testable import SharedURLCacheStore
import Testing
import TestProcess

/// The C core's result codes are described once (`SUC_RESULT_CODES` in the public header); the
/// description, the name and the Swift code must all come from that table.
@Suite(.blockingWaits) struct ErrorCodes {
    /// Every code the header defines, by value.
    static let defined: [Int32] = [
        SUC_ENOTFOUND, SUC_EINVAL, SUC_ECORRUPT, SUC_ETOOLARGE, SUC_EDISKFULL, SUC_EINDEXFULL, SUC_EPERM,
        SUC_EIO, SUC_ENOMEM, SUC_EVERSION, SUC_EUNSAFE, SUC_ENOTCACHE, SUC_ENOENT, SUC_EFORKED, SUC_EINDEX,
        SUC_EREADERS, SUC_EINJECTED, SUC_EBUSY, SUC_ECAPACITY,
    ]

    /// The public Swift codes a core failure may surface as.
    static let swiftCodes: Set<CacheError.Code> = [
        .notFound, .invalidInput, .corrupt, .tooLarge, .diskFull, .indexFull, .permissionDenied, .io,
        .outOfMemory, .unsupportedVersion, .unsafeDirectory, .notACache, .directoryNotFound, .usedAfterFork,
        .index, .readersFull, .busy, .overCapacity,
    ]

    @Test("every defined code has a description, a name and a public Swift code")
    func everyCodeIsDescribedAndMapped() {
        for code in Self.defined {
            #expect(String(cString: suc_strerror(code)) != "unknown error", "code \(code)")
            #expect(
                Self.swiftCodes.contains(CacheError.Code(core: code)), "code \(code) → \(CacheError.Code(core: code))")
        }
        #expect(
            Set(Self.defined.map { CacheError.Code(core: $0) }) == Self.swiftCodes, "every public code is reachable")
    }

    @Test("the codes are contiguous, and the first value past them is unknown everywhere")
    func nothingDefinedOutsideTheTable() {
        #expect(Self.defined == Array((0..<Int32(Self.defined.count)).map { -31000 - $0 }))
        let next = -31000 - Int32(Self.defined.count)
        #expect(String(cString: suc_strerror(next)) == "unknown error")
        #expect(CacheError.Code(core: next) == CacheError.Code("core(\(next))"))
    }

    @Test("a NULL cache handle is SUC_EINVAL for a store as for every other call, never a crash")
    func nullHandle() {
        var error = suc_error()
        let body: [UInt8] = [1, 2, 3]
        #expect(suc_put(nil, nil, body, body.count, nil, &error) == SUC_EINVAL)
        #expect(suc_cache_flush(nil, &error) == SUC_EINVAL)
    }

    @Test("a failure carries the table's description when the core gave no message")
    func description() {
        let error = CacheError(core: SUC_EBUSY, suc_error())
        #expect(error.code == .busy)
        #expect(error.message == "another compaction holds the directory's maintenance lock")
    }
}
