/*
 * os.h — every syscall the core makes, wrapped once (docs/Style.md rule 11).
 *
 * Each wrapper retries EINTR, sets O_CLOEXEC, and consults the fault table first so tests can
 * make call N of an operation fail (SQLite's SimulateIOError). Wrappers return the syscall's
 * result and leave errno set, like the calls they wrap.
 */
#ifndef SUC_OS_H
#define SUC_OS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "shared_url_cache.h"
#include "shared_url_cache_testing.h"

/* Returns non-zero (and sets errno) when the fault table says this call of `op` must fail. */
int suc_os_fault(int op);

int suc_os_openat(int dirfd, const char *path, int flags, mode_t mode);
int suc_os_close(int fd);
int suc_os_fstat(int fd, struct stat *st);
ssize_t suc_os_pread_full(int fd, void *buf, size_t len, off_t off);
int suc_os_write_full(int fd, const void *buf, size_t len);
int suc_os_pwrite_full(int fd, const void *buf, size_t len, off_t off);
int suc_os_fsync(int fd);
int suc_os_fdatasync(int fd);
int suc_os_renameat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath);
int suc_os_unlinkat(int dirfd, const char *path, int flags);
int suc_os_mkdirat(int dirfd, const char *path, mode_t mode);
int suc_os_fchmod(int fd, mode_t mode);
void *suc_os_malloc(size_t len);
void *suc_os_realloc(void *p, size_t len);
int suc_os_random(void *buf, size_t len);
int64_t suc_os_now_ms(void);
/* A clock that never steps (durations). */
int64_t suc_os_monotonic_ms(void);
int64_t suc_os_monotonic_us(void);
int suc_os_flock_bounded(int fd, int op, int timeout_ms);

/* ---- errors (error.c) ------------------------------------------------------------------ */

/* Fills `err` (if non-NULL) and returns `code`. */
int suc_fail(suc_error *err, int code, const char *op, int sys_errno, int lib_rc,
             const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* Maps an errno from a failed syscall to a SUC_E* code. */
int suc_code_from_errno(int e);
/* Maps an LMDB rc to a SUC_E* code. */
int suc_code_from_mdb(int rc);
int suc_fail_errno(suc_error *err, const char *op, int e);
int suc_fail_mdb(suc_error *err, const char *op, int rc);

#endif
