import CSharedURLCache

// The one place C result codes become CacheError (docs/Style.md rule 19).
extension CacheError.Code {
    init(core rc: Int32) {
        switch rc {
        case SUC_ENOTFOUND: self = .notFound
        case SUC_EINVAL: self = .invalidInput
        case SUC_ECORRUPT: self = .corrupt
        case SUC_ETOOLARGE: self = .tooLarge
        case SUC_EDISKFULL: self = .diskFull
        case SUC_EINDEXFULL: self = .indexFull
        case SUC_EPERM: self = .permissionDenied
        case SUC_EIO: self = .io
        case SUC_ENOMEM: self = .outOfMemory
        case SUC_EVERSION: self = .unsupportedVersion
        case SUC_EUNSAFE: self = .unsafeDirectory
        case SUC_ENOTCACHE: self = .notACache
        case SUC_ENOENT: self = .directoryNotFound
        case SUC_EFORKED: self = .usedAfterFork
        case SUC_EINDEX: self = .index
        case SUC_EREADERS: self = .readersFull
        case SUC_EINJECTED: self = .io // an injected fault without errno (tests only)
        case SUC_EBUSY: self = .busy
        case SUC_ECAPACITY: self = .overCapacity
        default: self = CacheError.Code("core(\(rc))")
        }
    }
}

extension CacheError {
    /// Builds the error for a failed C call from its return code and `suc_error` detail.
    init(core rc: Int32, _ detail: suc_error, file: String = #fileID, line: Int = #line) {
        var detail = detail
        let message = withUnsafeBytes(of: &detail.message) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        let operation = detail.op.map { String(cString: $0) } ?? ""
        let code = CacheError.Code(core: detail.code != 0 ? detail.code : rc)
        self.init(
            code,
            message.isEmpty ? String(cString: suc_strerror(rc)) : message,
            cause: operation.isEmpty && detail.sys_errno == 0 && detail.lib_rc == 0
                ? nil
                : Cause(operation: operation, errno: detail.sys_errno, libraryCode: detail.lib_rc),
            file: file,
            line: line
        )
    }
}
