/*
 * generation_file.c — which index file is current: the `generation` file, its index-file names,
 * and the shared lock every open handle holds on it (docs/Capacity.md, "Index generations";
 * the rewrite that publishes a new generation is generation.c).
 */
#include "txn.h"
#include "os.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define GEN_MAGIC "SUCGEN\0\1"
#define GEN_FILE_LEN 16

void suc_index_file_name(uint64_t gen, char out[SUC_INDEX_NAME_LEN]) {
    if (gen == 0) snprintf(out, SUC_INDEX_NAME_LEN, "index.lmdb");
    else snprintf(out, SUC_INDEX_NAME_LEN, "index.g%llu.lmdb", (unsigned long long)gen);
}

int suc_is_control_file(const char *name) {
    return !strcmp(name, SUC_GEN_FILE) || !strcmp(name, SUC_COMPACT_LOCK_FILE) ||
           !strcmp(name, SUC_UNSYNCED_FILE) || !strcmp(name, SUC_LEASE_FILE) || !strcmp(name, SUC_HANDOFF_FILE) ||
           !strcmp(name, SUC_GHOST_FILE);
}

int suc_is_index_file(const char *name) {
    return !strncmp(name, "index.", 6) && (strstr(name, ".lmdb") != NULL);
}

void suc_gen_unlink(suc_cache *c, uint64_t gen) {
    char data[SUC_INDEX_NAME_LEN], lock[SUC_INDEX_NAME_LEN + 5];
    suc_index_file_name(gen, data);
    snprintf(lock, sizeof lock, "%s-lock", data);
    (void)suc_os_unlinkat(c->rootfd, data, 0);
    (void)suc_os_unlinkat(c->rootfd, lock, 0);
}

/* ---- the generation file -------------------------------------------------------------- */

/* Reads the generation file through a descriptor: 1 when it exists and is valid. */
static int read_gen_file(int fd, uint64_t *out) {
    uint8_t buf[GEN_FILE_LEN];
    if (suc_os_pread_full(fd, buf, sizeof buf, 0) != (ssize_t)sizeof buf) return 0;
    if (memcmp(buf, GEN_MAGIC, 8) != 0) return 0;
    *out = suc_get_u64(buf + 8);
    return 1;
}

/* Writes the whole generation file through a descriptor: magic and number (so a damaged file
 * is whole again), cut to its length, and synced. */
static int write_gen_file(int fd, uint64_t gen, suc_error *err) {
    uint8_t buf[GEN_FILE_LEN];
    memcpy(buf, GEN_MAGIC, 8);
    suc_put_u64(buf + 8, gen);
    if (suc_os_pwrite_full(fd, buf, sizeof buf, 0) < 0 || ftruncate(fd, GEN_FILE_LEN) < 0)
        return suc_fail_errno(err, "pwrite(generation)", errno);
    if (suc_os_fdatasync(fd) < 0) return suc_fail_errno(err, "fdatasync(generation)", errno);
    return SUC_OK;
}

int suc_gen_inspect(int rootfd, int *errno_out) {
    int fd = suc_os_openat(rootfd, SUC_GEN_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
    if (fd < 0) {
        /* Only a file that is not there means "no layout yet": EACCES or EMFILE on a live
         * directory must not make a new layout over it. A symlink (ELOOP) is damage. */
        if (errno == ENOENT) return SUC_GEN_MISSING;
        if (errno == ELOOP) return SUC_GEN_DAMAGED;
        if (errno_out) *errno_out = errno;
        return SUC_GEN_UNREADABLE;
    }
    /* Damage is what was read and is wrong; a call that failed tells nothing (a transient error
     * must not "repair" a good file). */
    uint8_t buf[GEN_FILE_LEN];
    struct stat st;
    ssize_t n = 0;
    int state;
    if (suc_os_fstat(fd, &st) < 0 || (S_ISREG(st.st_mode) && (n = suc_os_pread_full(fd, buf, sizeof buf, 0)) < 0)) {
        if (errno_out) *errno_out = errno;
        state = SUC_GEN_UNREADABLE;
    } else {
        state = S_ISREG(st.st_mode) && n == (ssize_t)sizeof buf && memcmp(buf, GEN_MAGIC, 8) == 0 ? SUC_GEN_VALID
                                                                                                 : SUC_GEN_DAMAGED;
    }
    suc_os_close(fd);
    return state;
}

/* The newest generation whose index file is in the directory, or -1 when there is none. */
static int64_t newest_index_generation(int rootfd) {
    int fd = dup(rootfd);
    DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
    if (!dir) {
        if (fd >= 0) close(fd);
        return -1;
    }
    rewinddir(dir);
    int64_t newest = -1;
    for (struct dirent *e; (e = readdir(dir)) != NULL;) {
        unsigned long long g;
        char tail[8];
        if (!strcmp(e->d_name, "index.lmdb")) {
            if (newest < 0) newest = 0;
        } else if (sscanf(e->d_name, "index.g%llu.%7s", &g, tail) == 2 && !strcmp(tail, "lmdb") &&
                   (int64_t)g > newest) {
            newest = (int64_t)g;
        }
    }
    closedir(dir);
    return newest;
}

int suc_gen_repair(int rootfd, suc_error *err) {
    int64_t newest = newest_index_generation(rootfd);
    if (newest < 0) return SUC_ENOENT; /* nothing to point at: the caller makes a new layout */
    /* The newest index file is the published generation unless a rewrite died between building
     * it and publishing it; then its copy may be partial, which loses entries (their bodies
     * become orphans for compaction) but never serves a wrong one. */
    int fd = suc_os_openat(rootfd, SUC_GEN_FILE, O_RDWR | O_NOFOLLOW | O_NONBLOCK, 0);
    struct stat st;
    if (fd >= 0 && suc_os_fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        /* In place: running processes read this inode, and see the repair at their next read. */
        int rc = write_gen_file(fd, (uint64_t)newest, err);
        suc_os_close(fd);
        return rc;
    }
    if (fd >= 0) suc_os_close(fd);
    /* Not a regular file (a symlink, a FIFO…): replaced by a new file. */
    return suc_gen_create(rootfd, (uint64_t)newest, err);
}

int suc_gen_create(int rootfd, uint64_t gen, suc_error *err) {
    /* Written aside and renamed into place: a reader never sees a half-written file. */
    char tmp[64];
    uint8_t rnd[8];
    (void)suc_os_random(rnd, sizeof rnd);
    snprintf(tmp, sizeof tmp, ".generation-%02x%02x%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2], rnd[3],
             rnd[4], rnd[5], rnd[6], rnd[7]);
    int fd = suc_os_openat(rootfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0660);
    if (fd < 0) return suc_fail_errno(err, "openat(generation)", errno);
    (void)suc_os_fchmod(fd, 0660);
    suc_adopt_owner(rootfd, fd);
    int rc = write_gen_file(fd, gen, err);
    suc_os_close(fd);
    if (!rc && suc_os_renameat(rootfd, tmp, rootfd, SUC_GEN_FILE) < 0) rc = suc_fail_errno(err, "renameat(generation)", errno);
    if (rc) (void)suc_os_unlinkat(rootfd, tmp, 0);
    else (void)suc_os_fsync(rootfd);
    return rc;
}

int suc_gen_attach(suc_cache *c, suc_error *err) {
    int fd = suc_os_openat(c->rootfd, SUC_GEN_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
    if (fd < 0) return suc_fail_errno(err, "openat(generation)", errno);
    struct stat st;
    uint64_t g;
    if (suc_os_fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < GEN_FILE_LEN || !read_gen_file(fd, &g)) {
        suc_os_close(fd);
        return suc_fail(err, SUC_ECORRUPT, "read(generation)", 0, 0, "the generation file is damaged");
    }
    c->genfd = fd;
    __atomic_store_n(&c->gen_seen, g, __ATOMIC_RELEASE);
    return SUC_OK;
}

int suc_gen_hold(suc_cache *c) {
    /* A shared flock for the life of the handle says "this process uses the directory and
     * follows generations": a rewrite must not retire index.lmdb under a process of an earlier
     * release, which holds LMDB's lock on index.lmdb-lock but not this one
     * (earlier_release_attached), and an index left unsynced by another boot is not discarded
     * while a process holds it (unsynced.c). Any member of the group can hold an exclusive lock
     * on the file forever, so the wait is bounded; without the lock this process only looks like
     * an earlier release, which postpones rewrites of generation 0 (the safe side). */
    (void)suc_os_flock_bounded(c->genfd, LOCK_SH, 2000);
    return SUC_OK;
}

int suc_gen_held_elsewhere(suc_cache *c) {
    /* Called before this process holds its own lock (suc_gen_hold), so any holder is another
     * process that has opened the directory. A failure other than "held" cannot tell: 0. */
    if (flock(c->genfd, LOCK_EX | LOCK_NB) == 0) {
        flock(c->genfd, LOCK_UN);
        return 0;
    }
    return errno == EWOULDBLOCK;
}

void suc_gen_detach(suc_cache *c) {
    suc_os_close(c->genfd);
    c->genfd = -1;
}

uint64_t suc_gen_published(suc_cache *c) {
    /* Read with pread, never through a mapping: any member of the group can truncate the file,
     * and a mapped page past the end is SIGBUS at the next operation of every process. A file
     * that is damaged (short, garbage) or unreadable leaves this process on the last number it
     * read: its reads and stores go on in the generation it uses; the next open repairs the
     * file, and a compaction's publish rewrites it whole. */
    uint64_t g;
    if (c->genfd >= 0 && read_gen_file(c->genfd, &g)) {
        __atomic_store_n(&c->gen_seen, g, __ATOMIC_RELAXED);
        return g;
    }
    return __atomic_load_n(&c->gen_seen, __ATOMIC_RELAXED);
}

int suc_gen_read(suc_cache *c, uint64_t *out) { return c->genfd >= 0 && read_gen_file(c->genfd, out); }

uint64_t suc_gen_published_settled(suc_cache *c) {
    /* A read that overlaps a publish's write may, in principle, see some bytes of each number
     * (pread and pwrite are not atomic to each other): take a value only when two reads agree. */
    uint64_t g = suc_gen_published(c);
    for (int i = 0; i < 8; i++) {
        uint64_t again = suc_gen_published(c);
        if (again == g) break;
        g = again;
    }
    return g;
}

/* Step 3: the new number, written whole (magic included, so it also repairs a damaged file)
 * and synced. The caller holds the new generation's write lock meanwhile, so no store can
 * commit to it before the number that makes it current is durable. */
int suc_gen_publish(suc_cache *c, uint64_t gen, suc_error *err) {
    int fd = suc_os_openat(c->rootfd, SUC_GEN_FILE, O_RDWR | O_NOFOLLOW | O_NONBLOCK, 0);
    if (fd < 0) return suc_fail_errno(err, "openat(generation)", errno);
    int rc = write_gen_file(fd, gen, err);
    suc_os_close(fd);
    return rc;
}

