import CSharedURLCache

// The one place C result codes become CacheError (docs/Style.md rule 19).
extension CacheError.Code {
    /// The code a C core result surfaces as: named by the core's own table (`SUC_RESULT_CODES`,
    /// through `suc_error_name`), so the two layers cannot disagree.
    init(core rc: Int32) {
        let name = String(cString: suc_error_name(rc))
        self = name == "unknown" ? CacheError.Code("core(\(rc))") : CacheError.Code(name)
    }
}

extension CacheError {
    /// Builds the error for a failed C call from its return code and `suc_error` detail.
    init(core rc: Int32, _ detail: suc_error, file: String = #fileID, line: Int = #line) {
        let message = coreText(detail.message)
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
