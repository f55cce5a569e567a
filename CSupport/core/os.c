/*
 * os.c — the one place the core calls the operating system (docs/Style.md rule 11).
 *
 * Why one file: EINTR handling, O_CLOEXEC and full reads/writes are easy to forget at a call
 * site, and tests need a single switch to make any call fail (docs/Reliability.md T14).
 */
#include "os.h"

#include "shared_url_cache_testing.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* ---- fault table ---------------------------------------------------------------------- */

typedef struct fault_slot {
    uint64_t countdown; /* 0 = off; the call that brings it to 1 fails */
    int errno_value;
    int persistent;
    int abort_process;
    int tripped;
} fault_slot;

static fault_slot g_faults[SUC_FAULT_COUNT];
static volatile int g_fault_any; /* cheap check on the hot path */

void suc_debug_fault(int op, uint64_t nth, int errno_value, int persistent, int abort_process) {
    if (op < 0 || op >= SUC_FAULT_COUNT) return;
    fault_slot *s = &g_faults[op];
    s->countdown = nth;
    s->errno_value = errno_value ? errno_value : EIO;
    s->persistent = persistent;
    s->abort_process = abort_process;
    s->tripped = 0;
    int any = 0;
    for (int i = 0; i < SUC_FAULT_COUNT; i++) any |= g_faults[i].countdown != 0;
    g_fault_any = any;
}

void suc_debug_fault_clear_all(void) {
    for (int i = 0; i < SUC_FAULT_COUNT; i++) g_faults[i] = (fault_slot){0};
    g_fault_any = 0;
}

int suc_debug_fault_tripped(int op) {
    return op >= 0 && op < SUC_FAULT_COUNT && g_faults[op].tripped;
}

int suc_os_fault(int op) {
    if (!g_fault_any) return 0;
    fault_slot *s = &g_faults[op];
    if (s->countdown == 0) return 0;
    if (s->tripped) {
        if (!s->persistent) return 0;
    } else if (--s->countdown > 0) {
        return 0;
    } else {
        s->tripped = 1;
        s->countdown = 1; /* keep the slot "on" so a persistent fault keeps failing */
    }
    if (s->abort_process) _exit(77);
    errno = s->errno_value;
    return 1;
}

/* ---- wrappers ------------------------------------------------------------------------- */

int suc_os_openat(int dirfd, const char *path, int flags, mode_t mode) {
    if (suc_os_fault(SUC_FAULT_OPEN)) return -1;
    int fd;
    do {
        fd = openat(dirfd, path, flags | O_CLOEXEC, mode);
    } while (fd < 0 && errno == EINTR);
    return fd;
}

/* close(2) must not be retried on EINTR on Linux: the descriptor is already released. */
int suc_os_close(int fd) { return fd >= 0 ? close(fd) : 0; }

int suc_os_fstat(int fd, struct stat *st) {
    if (suc_os_fault(SUC_FAULT_FSTAT)) return -1;
    return fstat(fd, st);
}

/* Reads up to `len` bytes at `off`; returns the count read (short only at end of file). */
ssize_t suc_os_pread_full(int fd, void *buf, size_t len, off_t off) {
    if (suc_os_fault(SUC_FAULT_READ)) return -1;
    size_t done = 0;
    while (done < len) {
        ssize_t n = pread(fd, (char *)buf + done, len - done, off + (off_t)done);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (n == 0) break;
        done += (size_t)n;
    }
    return (ssize_t)done;
}

int suc_os_write_full(int fd, const void *buf, size_t len) {
    if (suc_os_fault(SUC_FAULT_WRITE)) return -1;
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(fd, (const char *)buf + done, len - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        done += (size_t)n;
    }
    return 0;
}

int suc_os_pwrite_full(int fd, const void *buf, size_t len, off_t off) {
    if (suc_os_fault(SUC_FAULT_WRITE)) return -1;
    size_t done = 0;
    while (done < len) {
        ssize_t n = pwrite(fd, (const char *)buf + done, len - done, off + (off_t)done);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        done += (size_t)n;
    }
    return 0;
}

int suc_os_fsync(int fd) {
    if (suc_os_fault(SUC_FAULT_FSYNC)) return -1;
    int rc;
    do {
        rc = fsync(fd);
    } while (rc < 0 && errno == EINTR);
    return rc;
}

int suc_os_fdatasync(int fd) {
    if (suc_os_fault(SUC_FAULT_FSYNC)) return -1;
    int rc;
    do {
        rc = fdatasync(fd);
    } while (rc < 0 && errno == EINTR);
    return rc;
}

int suc_os_renameat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath) {
    if (suc_os_fault(SUC_FAULT_RENAME)) return -1;
    return renameat(olddirfd, oldpath, newdirfd, newpath);
}

int suc_os_unlinkat(int dirfd, const char *path, int flags) {
    if (suc_os_fault(SUC_FAULT_UNLINK)) return -1;
    return unlinkat(dirfd, path, flags);
}

int suc_os_mkdirat(int dirfd, const char *path, mode_t mode) {
    if (suc_os_fault(SUC_FAULT_OPEN)) return -1;
    return mkdirat(dirfd, path, mode);
}

int suc_os_fchmod(int fd, mode_t mode) { return fchmod(fd, mode); }

void *suc_os_malloc(size_t len) {
    if (suc_os_fault(SUC_FAULT_MALLOC)) return NULL;
    return malloc(len ? len : 1);
}

void *suc_os_realloc(void *p, size_t len) {
    if (suc_os_fault(SUC_FAULT_MALLOC)) return NULL;
    return realloc(p, len ? len : 1);
}

/* Random names and ids: 128 bits from the kernel (getrandom(2)), never from the URL. */
int suc_os_random(void *buf, size_t len) {
    size_t done = 0;
    while (done < len) {
        ssize_t n = getrandom((char *)buf + done, len - done, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        done += (size_t)n;
    }
    return 0;
}

/* flock(2) that gives up after `timeout_ms`: a lock file in the directory can be held by any
 * member of the group, and a process that holds it forever must not hang every opener. Polls
 * with LOCK_NB (flock has no timed form); errno is EWOULDBLOCK when the time ran out. */
int64_t suc_os_monotonic_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t suc_os_monotonic_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int suc_os_flock_bounded(int fd, int op, int timeout_ms) {
    int64_t deadline = suc_os_monotonic_ms() + timeout_ms;
    for (unsigned delay_us = 200;; delay_us = delay_us < 20000 ? delay_us * 2 : 20000) {
        if (flock(fd, op | LOCK_NB) == 0) return 0;
        if (errno == EINTR) continue;
        if (errno != EWOULDBLOCK || suc_os_monotonic_ms() >= deadline) return -1;
        usleep(delay_us);
    }
}

int64_t suc_os_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
