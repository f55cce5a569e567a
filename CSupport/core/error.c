/*
 * error.c — result codes, suc_strerror, and the mapping from errno / LMDB codes.
 */
#include "internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *suc_strerror(int code) {
    switch (code) {
    case SUC_OK: return "success";
    case SUC_ENOTFOUND: return "no such entry";
    case SUC_EINVAL: return "invalid argument";
    case SUC_ECORRUPT: return "stored data failed an integrity check";
    case SUC_ETOOLARGE: return "entry exceeds a configured limit";
    case SUC_EDISKFULL: return "disk full";
    case SUC_EINDEXFULL: return "index reached its maximum size";
    case SUC_EPERM: return "permission denied";
    case SUC_EIO: return "I/O error";
    case SUC_ENOMEM: return "out of memory";
    case SUC_EVERSION: return "unsupported cache format version";
    case SUC_EUNSAFE: return "unsafe cache directory (symlink, world-writable or foreign group)";
    case SUC_ENOTCACHE: return "directory is not a cache";
    case SUC_ENOENT: return "cache directory does not exist";
    case SUC_EFORKED: return "cache handle used after fork()";
    case SUC_EINDEX: return "index (LMDB) error";
    case SUC_EREADERS: return "no free index reader slot";
    case SUC_EINJECTED: return "injected fault";
    default: return "unknown error";
    }
}

int suc_fail(suc_error *err, int code, const char *op, int sys_errno, int lib_rc,
             const char *fmt, ...) {
    if (err) {
        err->code = code;
        err->sys_errno = sys_errno;
        err->lib_rc = lib_rc;
        err->op = op;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
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
