/*
 * earlier_releases.c — whether a process of a release before index generations is attached to
 * the directory: such a process opens index.lmdb whatever the generation file says, so the
 * index must not be rewritten (generation.c) or a quota's partition moved away from under it
 * (quota.c) while one is. Linux lists every file lock in /proc/locks; a process of this
 * release holds both an LMDB lock on index.lmdb-lock and a shared flock on the generation file,
 * one of an earlier release only the first.
 *
 * /proc/locks is not a snapshot: the kernel renders it a page per read(), so a lock taken or
 * released by any process of the host between two reads shifts the lines after it, and a line
 * can be skipped or listed twice. On a busy host (a test run opening hundreds of directories)
 * this process's own line went missing and compaction refused with "cannot tell". So the file
 * is read whole into memory, a listing without this process's own line is read again, and the
 * locks of two listings are taken together, so that a line one of them skipped is not lost.
 */
#include "operations.h"
#include "os.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The initial pid namespace's inode number (the kernel's PROC_PID_INIT_INO). */
#define INIT_PID_NAMESPACE_INO 0xEFFFFFFCu

#define LISTINGS_WANTED 2 /* listings with this process's own line, whose locks are merged */
#define LISTING_TRIES 40  /* reads of /proc/locks before "cannot tell" */
#define QUICK_TRIES 10    /* the first ones back to back, the others spread over a quarter second */
#define MAX_HOLDERS 256

/* Parses one /proc/locks line: "N: FLOCK|POSIX ADVISORY READ|WRITE PID MAJ:MIN:INODE ...".
 * Lines of blocked waiters ("N: -> ...") are skipped. */
static int parse_lock_line(const char *line, int *posix, long *pid, unsigned *maj, unsigned *min, unsigned long *ino) {
    char type[16], kind[16], mode[16];
    if (strstr(line, "->")) return 0;
    const char *p = strchr(line, ':');
    if (!p) return 0;
    if (sscanf(p + 1, "%15s %15s %15s %ld %x:%x:%lu", type, kind, mode, pid, maj, min, ino) != 7) return 0;
    *posix = !strcmp(type, "POSIX") || !strcmp(type, "OFDLCK");
    return !strcmp(type, "POSIX") || !strcmp(type, "FLOCK");
}

/* The whole of /proc/locks, NUL-terminated (free it), or NULL. */
static char *read_listing(void) {
    FILE *f = fopen("/proc/locks", "re");
    if (!f) return NULL;
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (cap - len < 4096) {
            char *grown = cap < (64u << 20) ? realloc(buf, cap * 2) : NULL;
            if (!grown) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = grown;
            cap *= 2;
        }
        size_t n = fread(buf + len, 1, cap - len - 1, f);
        len += n;
        if (n == 0) break;
    }
    int failed = ferror(f);
    fclose(f);
    if (!buf) return NULL;
    if (failed) {
        free(buf);
        return NULL;
    }
    buf[len] = '\0';
    return buf;
}

/* What the listings tell about the directory's two lock files. */
typedef struct holders {
    ino_t lock_ino, gen_ino;
    long lmdb[MAX_HOLDERS], gen[MAX_HOLDERS]; /* pids with an LMDB lock / a generation flock */
    size_t nlmdb, ngen;
} holders;

static void add_pid(long *pids, size_t *n, long pid) {
    for (size_t i = 0; i < *n; i++)
        if (pids[i] == pid) return;
    if (*n < MAX_HOLDERS) pids[(*n)++] = pid;
}

/* Adds one listing's holders; 0 when this process's own flock on the generation file is not
 * in it (the device numbers /proc/locks gives this file system are learnt from that line: they
 * are not always stat's, btrfs lists others). */
static int merge_listing(char *listing, holders *h) {
    long self = (long)getpid();
    unsigned dev_maj = 0, dev_min = 0;
    int self_seen = 0, posix;
    long pid;
    unsigned maj, min;
    unsigned long ino;
    for (char *line = listing; line && *line && !self_seen; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
        if (parse_lock_line(line, &posix, &pid, &maj, &min, &ino) && !posix && pid == self && ino == h->gen_ino) {
            dev_maj = maj, dev_min = min;
            self_seen = 1;
        }
    }
    if (!self_seen) return 0;
    for (char *line = listing; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
        if (!parse_lock_line(line, &posix, &pid, &maj, &min, &ino) || maj != dev_maj || min != dev_min) continue;
        if (posix && ino == h->lock_ino) add_pid(h->lmdb, &h->nlmdb, pid);
        else if (!posix && ino == h->gen_ino) add_pid(h->gen, &h->ngen, pid);
    }
    return 1;
}

int suc_earlier_release_attached(suc_cache *c) {
    struct stat lock_st, gen_st, ns_st;
    if (fstatat(c->rootfd, "index.lmdb-lock", &lock_st, AT_SYMLINK_NOFOLLOW) < 0) return 0;
    /* /proc/locks leaves out the locks of processes this pid namespace cannot see: inside a
     * container, a process of an earlier release outside it is simply not listed. */
    if (stat("/proc/self/ns/pid", &ns_st) < 0 || ns_st.st_ino != INIT_PID_NAMESPACE_INO) return -1;
    if (suc_os_fstat(c->genfd, &gen_st) < 0) return -1;
    holders *h = calloc(1, sizeof *h);
    if (!h) return -1;
    h->lock_ino = lock_st.st_ino, h->gen_ino = gen_st.st_ino;
    int listings = 0;
    /* A read can fail for a moment (no descriptor or memory to spare in a busy process) and a
     * listing can skip this process's own line while other processes take and drop locks (the
     * kernel renders it a page at a time), for as long as a burst of lock traffic lasts: such a
     * host deferred the rewrite of a compaction that ran alone in its directory. So the reads go
     * on after a pause, and only a host that never shows the line, or where /proc/locks cannot
     * be read at all (not Linux), is "cannot tell". */
    int unreadable = 0;
    for (int tries = 0; tries < LISTING_TRIES && listings < LISTINGS_WANTED; tries++) {
        if (tries >= QUICK_TRIES) usleep(1000u * (unsigned)(tries - QUICK_TRIES + 1) / 2);
        char *listing = read_listing();
        if (!listing) {
            if (++unreadable == 3 && listings == 0 && access("/proc/locks", R_OK) != 0) break;
            continue;
        }
        listings += merge_listing(listing, h);
        free(listing);
    }
    int result = listings ? 0 : -1;
    /* Every process of this release holds an LMDB lock and a generation flock: one with only
     * the first does not follow generations. */
    for (size_t i = 0; listings && i < h->nlmdb && !result; i++) {
        int found = 0;
        for (size_t j = 0; j < h->ngen && !found; j++) found = h->lmdb[i] == h->gen[j];
        if (!found) result = (int)h->lmdb[i];
    }
    free(h);
    return result;
}

int suc_refuse_while_earlier_release(suc_cache *c, const char *what, const char *later, const char *instead,
                                     int *out_pid, suc_error *err) {
    *out_pid = 0;
    if (suc_gen_current(c) != 0) return SUC_OK;
    int pid = suc_earlier_release_attached(c);
    *out_pid = pid;
    if (pid > 0)
        return suc_fail(err, SUC_EBUSY, what, 0, 0, "process %d of an earlier release uses index.lmdb: %s once it stops",
                        pid, later);
    if (pid < 0)
        return suc_fail(err, SUC_EBUSY, what, 0, 0,
                        "cannot tell from /proc/locks whether a process of an earlier release uses index.lmdb "
                        "(this process runs in a pid namespace of its own, /proc/locks is missing, or it does "
                        "not list this process's own lock): %s",
                        instead);
    return SUC_OK;
}
