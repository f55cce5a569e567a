/*
 * usage.c — what the directory takes on disk, counted the way `du` counts it.
 *
 * Operators hold a cache to its capacity with `du` and `df`, so usage is reported in allocated
 * blocks (st_blocks × 512), for every byte in the directory: the index file (which LMDB never
 * shrinks by itself), body files, temp files and orphans left by killed writers, retired index
 * generations, and the directories themselves (docs/Capacity.md).
 *
 * Two ways to get it: measured (walk the directory and stat every file: exact, O(files)), or
 * estimated from the counters the index keeps exact in every commit, two fstat calls and a
 * listing of tmp/ (what SharedCache.currentDiskUsage and the online cap use on every store).
 */
#include "operations.h"
#include "os.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static uint64_t allocated(const struct stat *st) { return (uint64_t)st->st_blocks * 512u; }

/* Allocated bytes of one file in `dirfd`, 0 when it is missing. */
static uint64_t file_allocated(int dirfd, const char *name) {
    struct stat st;
    return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 ? allocated(&st) : 0;
}

/* Sums every entry of `dirfd` (not recursing): files into *files (count in *count), the
 * subdirectories' own blocks into *dirs (recursing one level when `into` is set). */
static int walk_dir(int dirfd, int into, uint64_t *files, uint64_t *count, uint64_t *dirs) {
    int listfd = suc_os_openat(dirfd, ".", O_RDONLY | O_DIRECTORY, 0);
    DIR *d = listfd >= 0 ? fdopendir(listfd) : NULL;
    if (!d) {
        if (listfd >= 0) close(listfd);
        return -1;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        struct stat st;
        if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) continue;
        if (S_ISDIR(st.st_mode)) {
            *dirs += allocated(&st);
            if (into) {
                int sub = suc_os_openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
                if (sub >= 0) {
                    (void)walk_dir(sub, 0, files, count, dirs);
                    suc_os_close(sub);
                }
            }
        } else {
            *files += allocated(&st);
            (*count)++;
        }
    }
    closedir(d);
    return 0;
}

/* The root's own entries: the current index and its lock file, retired generations and
 * unknown files (leftovers), control files and the root itself (overhead). */
static void walk_root(suc_cache *c, suc_disk_usage *u) {
    char data[SUC_INDEX_NAME_LEN], lock[SUC_INDEX_NAME_LEN + 5];
    suc_index_file_name(suc_gen_current(c), data);
    snprintf(lock, sizeof lock, "%s-lock", data);
    struct stat st;
    if (suc_os_fstat(c->rootfd, &st) == 0) u->overhead_bytes += allocated(&st);
    int listfd = suc_os_openat(c->rootfd, ".", O_RDONLY | O_DIRECTORY, 0);
    DIR *d = listfd >= 0 ? fdopendir(listfd) : NULL;
    if (!d) {
        if (listfd >= 0) close(listfd);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        const char *n = de->d_name;
        if (!strcmp(n, ".") || !strcmp(n, "..") || !strcmp(n, "bodies") || !strcmp(n, "tmp")) continue;
        if (fstatat(c->rootfd, n, &st, AT_SYMLINK_NOFOLLOW) < 0) continue;
        uint64_t a = allocated(&st);
        if (!strcmp(n, data) || !strcmp(n, lock)) {
            u->index_bytes += a;
        } else if (suc_is_control_file(n)) {
            u->overhead_bytes += a;
        } else {
            u->leftover_bytes += a;
            u->leftover_files++;
        }
    }
    closedir(d);
}

static int read_counters(suc_cache *c, uint64_t *file_bytes, uint64_t *record_bytes, suc_error *err) {
    MDB_txn *txn;
    int rc = suc_rtxn_begin(c, &txn, err);
    if (rc) return rc;
    *file_bytes = *record_bytes = 0;
    (void)suc_meta_get(c, txn, "file_bytes", file_bytes);
    (void)suc_meta_get(c, txn, "record_bytes", record_bytes);
    suc_rtxn_end(c, txn);
    return SUC_OK;
}

int suc_cache_disk_usage(suc_cache *c, uint32_t flags, suc_disk_usage *out, suc_error *err) {
    int rc = suc_cache_check_fork(c, err);
    if (rc) return rc;
    if (!out) return suc_fail(err, SUC_EINVAL, "suc_cache_disk_usage", 0, 0, "out is required");
    memset(out, 0, sizeof *out);
    uint64_t file_bytes = 0, record_bytes = 0;
    if ((rc = read_counters(c, &file_bytes, &record_bytes, err))) return rc;
    out->entry_bytes = file_bytes + record_bytes;

    uint64_t tmp_files = 0, tmp_count = 0, tmp_dirs = 0;
    (void)walk_dir(c->tmpfd, 0, &tmp_files, &tmp_count, &tmp_dirs);
    if (flags & SUC_USAGE_MEASURE) {
        walk_root(c, out);
        uint64_t body_files = 0, body_count = 0, dirs = 0;
        struct stat st;
        if (suc_os_fstat(c->bodiesfd, &st) == 0) dirs += allocated(&st);
        if (suc_os_fstat(c->tmpfd, &st) == 0) dirs += allocated(&st);
        (void)walk_dir(c->bodiesfd, 1, &body_files, &body_count, &dirs);
        out->overhead_bytes += dirs + tmp_dirs;
        /* Body files beyond what the live entries account for are orphans (a killed writer's
         * renamed body, or one whose record was lost): leftovers until compaction's grace. */
        out->body_file_bytes = body_files < file_bytes ? body_files : file_bytes;
        out->leftover_bytes += body_files - out->body_file_bytes + tmp_files;
        out->leftover_files += tmp_count;
        out->measured = 1;
        pthread_mutex_lock(&c->pool_mu);
        c->measured_overhead = out->overhead_bytes;
        c->measured_orphan_bytes = body_files - out->body_file_bytes;
        pthread_mutex_unlock(&c->pool_mu);
    } else {
        char data[SUC_INDEX_NAME_LEN], lock[SUC_INDEX_NAME_LEN + 5];
        suc_index_file_name(suc_gen_current(c), data);
        snprintf(lock, sizeof lock, "%s-lock", data);
        out->index_bytes = file_allocated(c->rootfd, data) + file_allocated(c->rootfd, lock);
        out->body_file_bytes = file_bytes;
        pthread_mutex_lock(&c->pool_mu);
        uint64_t overhead = c->measured_overhead, orphans = c->measured_orphan_bytes;
        pthread_mutex_unlock(&c->pool_mu);
        /* Never measured in this process: the layout's directories of one block each (root,
         * bodies, tmp and the fan-out directories seen at open or made since by this process;
         * another process's new ones are found by the next measurement). */
        out->overhead_bytes = overhead ? overhead : (uint64_t)(3 + atomic_load(&c->fanout_dirs)) * SUC_DISK_BLOCK;
        out->leftover_bytes = orphans + tmp_files;
        out->leftover_files = tmp_count;
    }
    out->total_bytes = out->index_bytes + out->body_file_bytes + out->leftover_bytes + out->overhead_bytes;
    return SUC_OK;
}
