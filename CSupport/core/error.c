/*
 * error.c — result codes (described once, in SUC_RESULT_CODES), and the mapping from errno /
 * LMDB codes.
 */
#include "os.h"

#include <lmdb.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define SUC_DESCRIBE(code, swift, text) \
    case code: return text;
#define SUC_NAME(code, swift, text) \
    case code: return #swift;

const char *suc_strerror(int code) {
    switch (code) {
    case SUC_OK: return "success";
    SUC_RESULT_CODES(SUC_DESCRIBE)
    default: return "unknown error";
    }
}

const char *suc_error_name(int code) {
    switch (code) {
    case SUC_OK: return "success";
    SUC_RESULT_CODES(SUC_NAME)
    default: return "unknown";
    }
}

int suc_fail(suc_error *err, int code, const char *op, int sys_errno, int lib_rc,
             const char *fmt, ...) {
    if (err) {
        err->code = code;
        err->sys_errno = sys_errno;
        err->lib_rc = lib_rc;
        err->op = op;
        if (!strchr(fmt, '%')) {
            /* A fixed message (a miss's "no such entry", on every miss): copied, not formatted. */
            size_t n = strnlen(fmt, sizeof err->message - 1);
            memcpy(err->message, fmt, n);
            err->message[n] = 0;
        } else {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(err->message, sizeof err->message, fmt, ap);
            va_end(ap);
        }
    }
    return code;
}

int suc_code_from_errno(int e) {
    switch (e) {
    case ENOSPC:
    case EDQUOT:
    case EFBIG: return SUC_EDISKFULL;
    case EACCES:
    case EPERM:
    case EROFS: return SUC_EPERM;
    case ENOMEM: return SUC_ENOMEM;
    case ENOENT: return SUC_ENOENT;
    case ELOOP: return SUC_EUNSAFE;
    default: return SUC_EIO;
    }
}

int suc_code_from_mdb(int rc) {
    if (rc > 0) return suc_code_from_errno(rc); /* LMDB passes errno values through */
    switch (rc) {
    case MDB_MAP_FULL: return SUC_EINDEXFULL;
    case MDB_READERS_FULL: return SUC_EREADERS;
    case MDB_VERSION_MISMATCH: return SUC_EVERSION;
    case MDB_INVALID: return SUC_ENOTCACHE;
    case MDB_CORRUPTED:
    case MDB_PAGE_NOTFOUND: return SUC_ECORRUPT;
    default: return SUC_EINDEX;
    }
}

int suc_fail_errno(suc_error *err, const char *op, int e) {
    return suc_fail(err, suc_code_from_errno(e), op, e, 0, "%s: %s", op, strerror(e));
}

int suc_fail_mdb(suc_error *err, const char *op, int rc) {
    return suc_fail(err, suc_code_from_mdb(rc), op, rc > 0 ? rc : 0, rc, "%s: %s", op,
                    mdb_strerror(rc));
}
