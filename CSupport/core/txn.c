/*
 * txn.c — the index's environment and transactions: opening an index generation's files for
 * LMDB, read and write transactions, the meta table and its counters, map growth, following a
 * new generation, and the fork check every call makes.
 *
 * The lmdb.h caveats this file exists to honour:
 * > "Use an MDB_env* in the process which opened it, not after fork()."
 *   → a fork generation; every call from a child fails with SUC_EFORKED.
 * > "A process that crashes inside a read transaction leaves a stale reader slot."
 *   → mdb_reader_check() at open and whenever MDB_READERS_FULL comes back.
 * > mdb_env_set_mapsize: "may only be called if no transactions are active in the current
 * >  process" and, after another process grew the map, "pass 0 to adopt the new size".
 *   → every transaction holds map_lock shared; growth and adoption hold it exclusive.
 */
#include "txn.h"
#include "os.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static uint64_t g_fork_gen;

uint64_t suc_fork_generation(void) { return g_fork_gen; }

void suc_fork_happened(void) { g_fork_gen++; }

int suc_cache_check_fork(suc_cache *c, suc_error *err) {
    if (!c) return suc_fail(err, SUC_EINVAL, "suc_cache", 0, 0, "NULL cache handle");
    if (c->fork_gen != g_fork_gen)
        return suc_fail(err, SUC_EFORKED, "suc_cache", 0, 0,
                        "cache handle opened before fork(); open the directory again in the child");
    return SUC_OK;
}

void suc_index_path(suc_cache *c, const char *name, char *out, size_t cap) {
    /* Through the directory descriptor we checked, so a root swapped for a symlink after the
     * check is not followed (Linux /proc/self/fd); the path elsewhere. */
    snprintf(out, cap, "/proc/self/fd/%d/%s", c->rootfd, name);
    if (access(out, F_OK) != 0) snprintf(out, cap, "%s/%s", c->root_path, name);
}

/* We create the LMDB files ourselves (O_NOFOLLOW, then 0660 whatever the umask): readers write
 * the lock file, so every group member needs write access to it (docs/Reliability.md §3.4). */
int suc_prepare_index_file(int rootfd, const char *name, int create, int adopt, suc_error *err) {
    int fd = suc_os_openat(rootfd, name, O_RDWR | (create ? O_CREAT : 0) | O_NOFOLLOW | O_NONBLOCK, 0660);
    if (fd < 0) {
        if (errno == ELOOP)
            return suc_fail(err, SUC_EUNSAFE, "openat(index)", ELOOP, 0, "%s is a symlink", name);
        if (errno == ENOENT)
            return suc_fail(err, SUC_ENOENT, "openat(index)", ENOENT, 0, "index file %s is missing", name);
        return suc_fail_errno(err, "openat(index)", errno);
    }
    struct stat st;
    int rc = SUC_OK;
    if (suc_os_fstat(fd, &st) < 0) rc = suc_fail_errno(err, "fstat(index)", errno);
    else if (!S_ISREG(st.st_mode))
        rc = suc_fail(err, SUC_EUNSAFE, "fstat(index)", 0, 0, "%s is not a regular file", name);
    else if (st.st_uid == geteuid() && (st.st_mode & 0777) != 0660)
        (void)suc_os_fchmod(fd, 0660);
    if (!rc && adopt) suc_adopt_owner(rootfd, fd);
    suc_os_close(fd);
    return rc;
}

/* ---- meta table --------------------------------------------------------------------- */

int suc_meta_get(suc_cache *c, MDB_txn *txn, const char *name, uint64_t *out) {
    MDB_val k = {strlen(name), (void *)name}, v;
    int rc = mdb_get(txn, c->dbi_meta, &k, &v);
    if (rc) return rc;
    if (v.mv_size != 8) return MDB_CORRUPTED;
    *out = suc_get_u64(v.mv_data);
    return 0;
}

int suc_meta_put(suc_cache *c, MDB_txn *txn, const char *name, uint64_t value) {
    uint8_t buf[8];
    suc_put_u64(buf, value);
    MDB_val k = {strlen(name), (void *)name}, v = {8, buf};
    return suc_txn_put(c, txn, c->dbi_meta, &k, &v, 0);
}

int suc_meta_next_version(suc_cache *c, MDB_txn *txn, uint64_t *out, suc_error *err) {
    uint64_t seq = 0;
    int rc = suc_meta_get(c, txn, "seq", &seq);
    if (rc && rc != MDB_NOTFOUND) return suc_fail_mdb(err, "mdb_get(meta seq)", rc);
    seq++;
    if ((rc = suc_meta_put(c, txn, "seq", seq))) return suc_fail_mdb(err, "mdb_put(meta seq)", rc);
    *out = seq;
    return SUC_OK;
}

/* ---- map size ----------------------------------------------------------------------- */

/* Another process grew the map: adopt its size (lmdb.h: mdb_env_set_mapsize(env, 0)). */
static int adopt_map_size(suc_cache *c, suc_error *err) {
    pthread_rwlock_wrlock(&c->map_lock);
    int rc = mdb_env_set_mapsize(c->env, 0);
    MDB_envinfo info;
    if (!rc && !mdb_env_info(c->env, &info)) c->map_size = info.me_mapsize;
    pthread_rwlock_unlock(&c->map_lock);
    return rc ? suc_fail_mdb(err, "mdb_env_set_mapsize(0)", rc) : SUC_OK;
}

/* MDB_MAP_FULL: double the map up to the cap. Several processes may do this at once; each
 * sets a size at least as large as what it saw, and LMDB keeps the largest in the meta page. */
static int grow_map(suc_cache *c, uint64_t seen_size, int removal_only, suc_error *err) {
    int rc = SUC_OK;
    /* Even a delete needs fresh pages (copy-on-write), so a full index could not shrink itself:
     * transactions that only remove may grow past the cap by a small reserve. */
    uint64_t reserve = c->opts.map_size_max / 16 > (1u << 20) ? c->opts.map_size_max / 16 : (1u << 20);
    uint64_t cap = c->opts.map_size_max + (removal_only ? reserve : 0);
    pthread_rwlock_wrlock(&c->map_lock);
    if (c->map_size > seen_size) goto out; /* another thread of ours already grew it */
    if (c->map_size >= cap) {
        rc = suc_fail(err, SUC_EINDEXFULL, "mdb_env_set_mapsize", 0, MDB_MAP_FULL,
                      "index is full at its maximum map size of %llu bytes",
                      (unsigned long long)c->opts.map_size_max);
        goto out;
    }
    uint64_t next = c->map_size * 2;
    if (next > cap) next = cap;
    int mrc = mdb_env_set_mapsize(c->env, (size_t)next);
    if (mrc) {
        rc = suc_fail_mdb(err, "mdb_env_set_mapsize", mrc);
        goto out;
    }
    MDB_envinfo info;
    c->map_size = mdb_env_info(c->env, &info) ? next : info.me_mapsize;
out:
    pthread_rwlock_unlock(&c->map_lock);
    return rc;
}

/* ---- transactions ------------------------------------------------------------------- */

int suc_rtxn_begin(suc_cache *c, MDB_txn **out, suc_error *err) {
    MDB_txn *txn = NULL;
    int rc = 0;
    /* Another process rewrote the index (generation.c): read the new one. */
    if (suc_gen_moved(c) && (rc = suc_cache_follow(c, err))) return rc;
    for (int attempt = 0; attempt < 4; attempt++) {
        pthread_rwlock_rdlock(&c->map_lock);
        pthread_mutex_lock(&c->pool_mu);
        txn = c->rtxn_count ? c->rtxn_pool[--c->rtxn_count] : NULL;
        pthread_mutex_unlock(&c->pool_mu);
        rc = txn ? mdb_txn_renew(txn) : mdb_txn_begin(c->env, NULL, MDB_RDONLY, &txn);
        if (rc == 0) {
            *out = txn;
            return SUC_OK;
        }
        if (txn) mdb_txn_abort(txn);
        txn = NULL;
        pthread_rwlock_unlock(&c->map_lock);
        if (rc == MDB_MAP_RESIZED) {
            int arc = adopt_map_size(c, err);
            if (arc) return arc;
        } else if (rc == MDB_READERS_FULL) {
            /* Every slot taken: first give back this process's idle pooled ones (another
             * process may be the one waiting), then clear the slots of dead processes. */
            int dead = 0, released = 0;
            pthread_rwlock_rdlock(&c->map_lock);
            pthread_mutex_lock(&c->pool_mu);
            released = c->rtxn_count;
            for (int i = 0; i < c->rtxn_count; i++) mdb_txn_abort(c->rtxn_pool[i]);
            c->rtxn_count = 0;
            pthread_mutex_unlock(&c->pool_mu);
            mdb_reader_check(c->env, &dead);
            pthread_rwlock_unlock(&c->map_lock);
            if (dead == 0 && released == 0 && attempt > 0) break;
        } else {
            break;
        }
    }
    return suc_fail_mdb(err, "mdb_txn_begin(read)", rc);
}

void suc_rtxn_end(suc_cache *c, MDB_txn *txn) {
    mdb_txn_reset(txn);
    pthread_mutex_lock(&c->pool_mu);
    if (c->rtxn_count < SUC_RTXN_POOL_MAX) {
        c->rtxn_pool[c->rtxn_count++] = txn;
        txn = NULL;
    }
    pthread_mutex_unlock(&c->pool_mu);
    if (txn) mdb_txn_abort(txn);
    pthread_rwlock_unlock(&c->map_lock);
}

int suc_write_txn(suc_cache *c, suc_write_fn fn, suc_reset_fn reset, void *ctx, suc_error *err) {
    return suc_write_txn_ex(c, fn, reset, ctx, 0, err);
}

static _Thread_local uint64_t last_lock_ms;

uint64_t suc_last_write_lock_ms(void) { return last_lock_ms; }

/* An upgrade turns a directory of format 1 into 2 under open handles: every write reads the format
 * again (one lookup in `meta`, whose pages the commit writes anyway), so from the upgrade's commit
 * on no process of this release keeps the stored-time order or walks it. */
static void refresh_directory_format(suc_cache *c, MDB_txn *txn) {
    uint64_t format;
    if (suc_meta_get(c, txn, "format", &format) == 0 && suc_directory_format_known(format))
        atomic_store_explicit(&c->directory_format, (int)format, memory_order_relaxed);
}

int suc_write_txn_ex(suc_cache *c, suc_write_fn fn, suc_reset_fn reset, void *ctx, int removal_only, suc_error *err) {
    int reliefs = 0; /* a commit that still does not fit after a relief may try again after another */
    for (int attempt = 0;; attempt++) {
        suc_error local = {0};
        MDB_txn *txn = NULL;
        pthread_rwlock_rdlock(&c->map_lock);
        uint64_t seen = c->map_size;
        int mrc = mdb_txn_begin(c->env, NULL, 0, &txn);
        int64_t locked_at = suc_os_monotonic_ms();
        if (mrc == MDB_MAP_RESIZED) {
            pthread_rwlock_unlock(&c->map_lock);
            int arc = adopt_map_size(c, err);
            if (arc) return arc;
            continue;
        }
        if (mrc) {
            pthread_rwlock_unlock(&c->map_lock);
            return suc_fail_mdb(err, "mdb_txn_begin(write)", mrc);
        }
        /* Checked while holding this index's write lock: once a rewrite has published a new
         * generation, nothing may commit to the old one (generation.c, step 4). */
        if (suc_gen_moved(c)) {
            mdb_txn_abort(txn);
            pthread_rwlock_unlock(&c->map_lock);
            int frc = suc_cache_follow(c, err);
            if (frc) return frc;
            if (reset) reset(ctx);
            continue;
        }
        suc_journal_begin(c, txn);
        refresh_directory_format(c, txn);
        int rc = fn(c, txn, ctx, &local);
        /* A relaxed commit is not synced: the directory says so durably first (unsynced.c). */
        if (rc == SUC_OK && c->unsyncedfd >= 0) rc = suc_unsynced_before_commit(c, txn, &local);
        if (rc == SUC_OK) {
            if (suc_os_fault(SUC_FAULT_COMMIT)) {
                mdb_txn_abort(txn);
                rc = suc_fail_errno(&local, "mdb_txn_commit", errno);
            } else if ((mrc = mdb_txn_commit(txn)) != 0) {
                rc = suc_fail_mdb(&local, "mdb_txn_commit", mrc);
            }
        } else {
            mdb_txn_abort(txn);
        }
        last_lock_ms = (uint64_t)(suc_os_monotonic_ms() - locked_at);
        pthread_rwlock_unlock(&c->map_lock);
        if (rc == SUC_OK) return SUC_OK;
        if (local.lib_rc == MDB_MAP_FULL && attempt < 64) {
            int grc = grow_map(c, seen, removal_only, err);
            if (grc) return grc;
            if (reset) reset(ctx);
            continue;
        }
        /* A full file system: LMDB reports ENOSPC, or EIO for the short write it got instead.
         * Evict (bodies first) and commit again, while that frees something (space.c). */
        if (rc == SUC_EIO && suc_fs_is_full(c)) local.code = rc = SUC_EDISKFULL;
        if (rc == SUC_EDISKFULL && reliefs < 8) {
            reliefs++;
            if (c->relieve_disk_full && c->relieve_disk_full(c, 0)) {
                if (reset) reset(ctx);
                continue;
            }
        }
        if (err) *err = local;
        return rc;
    }
}

/* Whether an index file we did not just create can be handed to LMDB. LMDB trusts the file it
 * maps: garbage where it keeps its meta pages is a wild pointer, and a file shorter than the
 * pages its meta page names is SIGBUS at the first read past the end, in every process that
 * opens it, again after each restart. Both are checked before any page is touched: LMDB's
 * magic where LMDB writes it (the first meta page, after the 16-byte page header). */
#define LMDB_META_MAGIC 0xBEEFC0DEu
enum { HEADER_MISSING, HEADER_DAMAGED, HEADER_VALID, HEADER_UNREADABLE };
static int index_header_state(int rootfd, const char *name, struct stat *out, int *errno_out) {
    int fd = suc_os_openat(rootfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
    if (fd < 0) {
        *errno_out = errno;
        return errno == ENOENT ? HEADER_MISSING : errno == ELOOP ? HEADER_DAMAGED : HEADER_UNREADABLE;
    }
    uint8_t head[24];
    int state;
    ssize_t n;
    /* Damage is what was read and is wrong; a call that failed tells nothing (a transient error
     * must never make a good index look damaged: it would be replaced). */
    if (suc_os_fstat(fd, out) < 0 || (S_ISREG(out->st_mode) && (n = suc_os_pread_full(fd, head, sizeof head, 0)) < 0)) {
        *errno_out = errno;
        state = HEADER_UNREADABLE;
    } else {
        state = S_ISREG(out->st_mode) && n == (ssize_t)sizeof head && suc_get_u32(head + 16) == LMDB_META_MAGIC
                    ? HEADER_VALID
                    : HEADER_DAMAGED;
    }
    suc_os_close(fd);
    return state;
}

/* The free list's table as the newer of LMDB's two meta pages records it (read with pread, never
 * mapped): its depth, overflow pages and root page. Offsets of LMDB 0.9's MDB_meta after the
 * 16-byte page header: the free list's MDB_db at 24 (depth at +6, overflow pages at +24, root at
 * +40), the transaction id at 128. */
typedef struct free_list_shape {
    uint64_t root, overflow_pages;
    unsigned depth;
} free_list_shape;
static int read_free_list_shape(int fd, unsigned psize, free_list_shape *out) {
    uint64_t best_txn = 0;
    int found = 0;
    for (unsigned m = 0; m < 2; m++) {
        uint8_t meta[16 + 136];
        if (suc_os_pread_full(fd, meta, sizeof meta, (off_t)m * psize) != (ssize_t)sizeof meta ||
            suc_get_u32(meta + 16) != LMDB_META_MAGIC)
            continue;
        uint64_t txn = suc_get_u64(meta + 16 + 128);
        if (found && txn <= best_txn) continue;
        best_txn = txn;
        found = 1;
        out->depth = suc_get_u16(meta + 16 + 24 + 6);
        out->overflow_pages = suc_get_u64(meta + 16 + 24 + 24);
        out->root = suc_get_u64(meta + 16 + 24 + 40);
    }
    return found;
}

/* Whether every page from `first` to `last` is in the index's free list (LMDB's FREE_DBI, table
 * 0: a transaction id → the pages it freed, as a count then the page numbers). A free list that
 * cannot be read, or a gap too large to track, says no. */
#define TAIL_CHECK_MAX_PAGES (1u << 20)
static int tail_is_free(MDB_env *env, uint64_t first, uint64_t last) {
    if (last < first || last - first + 1 > TAIL_CHECK_MAX_PAGES) return 0;
    size_t count = (size_t)(last - first + 1), found = 0;
    uint8_t *seen = calloc(count, 1);
    MDB_txn *txn = NULL;
    MDB_cursor *cur = NULL;
    if (!seen || mdb_txn_begin(env, NULL, MDB_RDONLY, &txn) || mdb_cursor_open(txn, 0, &cur)) goto out;
    MDB_val k, v;
    int mrc;
    for (mrc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); mrc == 0; mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        size_t n = 0;
        if (v.mv_size < sizeof n) break;
        memcpy(&n, v.mv_data, sizeof n);
        if (n > v.mv_size / sizeof n - 1) break; /* not a page list: damage */
        for (size_t i = 1; i <= n; i++) {
            size_t pg;
            memcpy(&pg, (uint8_t *)v.mv_data + i * sizeof pg, sizeof pg);
            if (pg >= first && pg <= last && !seen[pg - first]) seen[pg - first] = 1, found++;
        }
    }
out:
    if (cur) mdb_cursor_close(cur);
    if (txn) mdb_txn_abort(txn);
    free(seen);
    return found == count;
}

/* After LMDB opened `name` by path: the file it opened is the one we checked (no symlink or
 * other file swapped in between), and it holds every page its meta page names. */
static int index_file_matches(MDB_env *env, const struct stat *checked, const char *name, suc_error *err) {
    int fd;
    struct stat st;
    MDB_envinfo info;
    MDB_stat est;
    /* The meta page first, the file's size after: another process's commit writes its pages
     * before the meta page that names them, so pages named by the meta read here are in the
     * file by the time of the fstat. The other order mistook a commit in between for damage. */
    if (mdb_env_info(env, &info) || mdb_env_stat(env, &est))
        return suc_fail(err, SUC_EIO, "mdb_env_info", 0, 0, "cannot read index file %s's meta page", name);
    if (mdb_env_get_fd(env, &fd) || fstat(fd, &st) < 0)
        return suc_fail(err, SUC_EIO, "fstat(index)", errno, 0, "cannot stat index file %s", name);
    if (checked && (st.st_dev != checked->st_dev || st.st_ino != checked->st_ino))
        return suc_fail(err, SUC_EUNSAFE, "open(index)", 0, 0, "%s was replaced while it was opened", name);
    uint64_t need = ((uint64_t)info.me_last_pgno + 1) * est.ms_psize;
    if ((uint64_t)st.st_size >= need) return SUC_OK;
    /* Shorter than its meta page says. A commit that allocated pages and freed them again before
     * it ended (LMDB's "loose" pages) counts them in the meta page's last page without writing
     * them, so the missing tail may be free pages LMDB never reads: a healthy index, which must
     * not be moved aside (mdb.c on the meta page's last page: "the file may be shorter if the
     * freeDB lists the final pages"). It is healthy when every missing page is in the free list,
     * read only where that touches no missing page: a free list of one leaf inside the file.
     * Otherwise (a larger free list, or pages in use missing) it is treated as damaged. */
    uint64_t have = (uint64_t)st.st_size / est.ms_psize;
    free_list_shape shape;
    if (read_free_list_shape(fd, est.ms_psize, &shape) && shape.depth == 1 && shape.overflow_pages == 0 &&
        shape.root < have && tail_is_free(env, have, info.me_last_pgno))
        return SUC_OK;
    return suc_fail(err, SUC_ECORRUPT, "fstat(index)", 0, 0, "index file %s is damaged: %llu bytes, its pages need %llu",
                    name, (unsigned long long)st.st_size, (unsigned long long)need);
}

/* LMDB's open waits without a bound (F_SETLKW) while another process holds an exclusive lock on
 * the lock file. LMDB itself holds it only while the first opener sets the file up, for
 * milliseconds; any member of the group can hold it forever. So wait here, bounded, while one is
 * held; a lock taken between this check and LMDB's is the one window left. */
#define LOCK_FILE_WAIT_MS 2000
static int wait_for_lock_file(suc_cache *c, const char *lock, suc_error *err) {
    int fd = suc_os_openat(c->rootfd, lock, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
    if (fd < 0) return SUC_OK; /* LMDB's open reports it */
    int64_t deadline = suc_os_now_ms() + LOCK_FILE_WAIT_MS;
    int rc = SUC_OK;
    for (;;) {
        /* Asked as a shared lock: the shared locks of processes that have it open never conflict. */
        struct flock fl = {.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
        if (fcntl(fd, F_GETLK, &fl) < 0 || fl.l_type == F_UNLCK) break;
        if (suc_os_now_ms() >= deadline) {
            rc = suc_fail(err, SUC_EBUSY, "fcntl(index lock)", EWOULDBLOCK, 0,
                          "process %d holds %s exclusively", (int)fl.l_pid, lock);
            break;
        }
        usleep(5000);
    }
    suc_os_close(fd);
    return rc;
}

/* LMDB sizes its lock file with ftruncate, so its header and reader table start as a hole, and
 * LMDB writes them through a shared mapping: on a full file system the first write to an
 * unallocated page is SIGBUS instead of an error (seen on a full tmpfs, inside mdb_env_open of a
 * new generation). So every block is allocated before LMDB opens the file: a no-op for a file
 * that has them, SUC_EDISKFULL for a new lock file on a full file system, where the caller can
 * still say no. A new file gets exactly the size LMDB would give it, (readers - 1) reader slots
 * of 64 bytes after a 192-byte header; an existing one keeps its size, which every process that
 * maps it derives its reader count from. */
#define LMDB_READER_SLOT 64u
#define LMDB_LOCK_HEADER 192u
int suc_allocate_lock_file(int rootfd, const char *lock, uint32_t max_readers, suc_error *err) {
    int fd = suc_os_openat(rootfd, lock, O_RDWR | O_NOFOLLOW | O_NONBLOCK, 0);
    if (fd < 0) return suc_fail_errno(err, "openat(index lock)", errno);
    struct stat st;
    int rc = SUC_OK, e = 0;
    if (suc_os_fstat(fd, &st) < 0) {
        rc = suc_fail_errno(err, "fstat(index lock)", errno);
    } else {
        off_t size = st.st_size ? st.st_size : (off_t)(max_readers - 1) * LMDB_READER_SLOT + LMDB_LOCK_HEADER;
        if ((uint64_t)st.st_blocks * 512 < (uint64_t)size && (e = posix_fallocate(fd, 0, size)) != 0 &&
            e != EOPNOTSUPP && e != EINVAL)
            rc = suc_fail_errno(err, "posix_fallocate(index lock)", e);
    }
    suc_os_close(fd);
    return rc;
}

/* Opens the LMDB environment of generation `gen` into *out. With `create` the data file may be
 * made (generation 0 of a new directory); otherwise a missing file is SUC_ENOENT (a rewrite
 * switched generations under us: the caller reads the generation file again), and a damaged one
 * SUC_ECORRUPT (replace_damaged_index). */
int suc_open_generation_env(suc_cache *c, uint64_t gen, int create, MDB_env **out, suc_error *err) {
    char data[SUC_INDEX_NAME_LEN], lock[SUC_INDEX_NAME_LEN + 5], path[4096];
    suc_index_file_name(gen, data);
    snprintf(lock, sizeof lock, "%s-lock", data);
    int rc = suc_prepare_index_file(c->rootfd, data, create, create, err);
    /* A symlink or other non-file where the published index should be is damage like garbage. */
    if (rc == SUC_EUNSAFE && !create)
        return suc_fail(err, SUC_ECORRUPT, "openat(index)", 0, 0, "index file %s is not a regular file", data);
    if (rc || (rc = suc_prepare_index_file(c->rootfd, lock, 1, 1, err)) || (rc = wait_for_lock_file(c, lock, err)) ||
        (rc = suc_allocate_lock_file(c->rootfd, lock, c->opts.max_readers, err)))
        return rc;
    struct stat checked;
    int header_errno = 0;
    int header = index_header_state(c->rootfd, data, &checked, &header_errno);
    if (header == HEADER_MISSING)
        return suc_fail(err, SUC_ENOENT, "openat(index)", ENOENT, 0, "index file %s is missing", data);
    if (header == HEADER_UNREADABLE) return suc_fail_errno(err, "read(index)", header_errno);
    /* An empty file is what `create` makes; any other file must look like LMDB's. */
    if (header == HEADER_DAMAGED && !(create && checked.st_size == 0 && S_ISREG(checked.st_mode)))
        return suc_fail(err, SUC_ECORRUPT, "read(index)", 0, 0, "index file %s is damaged (no LMDB meta page)", data);
    MDB_env *env = NULL;
    if ((rc = mdb_env_create(&env))) return suc_fail_mdb(err, "mdb_env_create", rc);
    if ((rc = mdb_env_set_maxdbs(env, 8)) || (rc = mdb_env_set_maxreaders(env, c->opts.max_readers)) ||
        (rc = mdb_env_set_mapsize(env, (size_t)c->opts.map_size_initial))) {
        mdb_env_close(env);
        return suc_fail_mdb(err, "mdb_env_set", rc);
    }
    suc_index_path(c, data, path, sizeof path);
    /* Never MDB_WRITEMAP (SIGBUS on a full disk, stray writes); MDB_NOTLS for Swift tasks that
     * hop threads; MDB_NORDAHEAD because lookups are random. */
    unsigned flags = MDB_NOSUBDIR | MDB_NOTLS | MDB_NORDAHEAD;
    /* Relaxed commits skip the sync only once the unsynced marker is open (unsynced.c); until
     * then, as during a new directory's first commits, they are synced as in the default mode. */
    if (c->opts.durability == SUC_DURABILITY_RELAXED && c->unsyncedfd >= 0) flags |= MDB_NOSYNC;
    else if (c->opts.durability != SUC_DURABILITY_DURABLE) flags |= MDB_NOMETASYNC;
    if ((rc = mdb_env_open(env, path, flags, 0660))) {
        mdb_env_close(env);
        return suc_fail_mdb(err, "mdb_env_open", rc);
    }
    if ((rc = index_file_matches(env, header == HEADER_VALID ? &checked : NULL, data, err))) {
        mdb_env_close(env);
        return rc;
    }
    int dead = 0;
    mdb_reader_check(env, &dead);
    *out = env;
    return SUC_OK;
}

void suc_adopt_env(suc_cache *c, MDB_env *env, uint64_t gen) {
    c->env = env;
    __atomic_store_n(&c->gen, gen, __ATOMIC_RELEASE);
    MDB_envinfo info;
    c->map_size = mdb_env_info(env, &info) == 0 ? info.me_mapsize : c->opts.map_size_initial;
}

/* Opens the tables of a generation another process wrote (they exist: the rewrite made all). */
static int open_tables_read(MDB_env *env, MDB_dbi dbis[4], suc_error *err) {
    MDB_txn *txn;
    int rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);
    if (rc) return suc_fail_mdb(err, "mdb_txn_begin(follow)", rc);
    static const char *names[4] = {"main", "by_time", "by_use", "meta"};
    for (int i = 0; i < 4 && !rc; i++) rc = mdb_dbi_open(txn, names[i], 0, &dbis[i]);
    if (rc) {
        mdb_txn_abort(txn);
        return suc_fail(err, SUC_ECORRUPT, "mdb_dbi_open(follow)", 0, rc, "the index generation lacks its tables");
    }
    /* A read-only transaction must commit for its table handles to outlive it (lmdb.h). */
    if ((rc = mdb_txn_commit(txn))) return suc_fail_mdb(err, "mdb_txn_commit(follow)", rc);
    return SUC_OK;
}

/* ---- closing a retired generation ----------------------------------------------------------
 * The compactor unlinks a retired generation's files, so the last process to close that
 * environment frees the file's blocks and drops its page cache inside mdb_env_close: at a
 * million entries that close took 270 ms, spent inside whichever store happened to follow
 * (Benchmarks/RESULTS.md, compaction beside a storing service). So a follow hands the close to a
 * thread of its own, and the handle keeps track of it: one at a time (a second retirement waits
 * for the first before it starts another, so threads never pile up), and whoever must see the
 * old descriptors and mapping gone waits for it (suc_cache_await_retired): the handle's close,
 * and the compactor, which has no store latency to protect. The environment is no longer the
 * handle's when it is handed over and no transaction of this process is open on it, so the
 * thread touches nothing else of the handle than retire_mu and retire_cv. It is detached: a
 * process may end without closing its handle, and nothing is left to join. If no thread can be
 * started, the close happens here. */

static void *close_retired(void *arg) {
    suc_cache *c = arg;
    mdb_env_close(c->retiring); /* set before the thread started, cleared only below */
    pthread_mutex_lock(&c->retire_mu);
    c->retiring = NULL;
    pthread_cond_broadcast(&c->retire_cv);
    /* The last touch of the handle: a waiter may free it once this unlock is done. */
    pthread_mutex_unlock(&c->retire_mu);
    return NULL;
}

static void retire_env(suc_cache *c, MDB_env *env, uint64_t gen) {
    pthread_mutex_lock(&c->retire_mu);
    while (c->retiring) pthread_cond_wait(&c->retire_cv, &c->retire_mu);
    c->retiring = env;
    c->retiring_gen = gen;
    pthread_attr_t attr;
    int started = 0;
    if (pthread_attr_init(&attr) == 0) {
        /* The thread takes none of the application's asynchronous signals: it starts with them
         * blocked (faults stay deliverable, to the process's crash handlers). */
        sigset_t blocked, saved;
        sigfillset(&blocked);
        static const int synchronous[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGSYS};
        for (size_t i = 0; i < sizeof synchronous / sizeof synchronous[0]; i++) sigdelset(&blocked, synchronous[i]);
        int masked = pthread_sigmask(SIG_BLOCK, &blocked, &saved) == 0;
        pthread_t thread;
        started = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) == 0 &&
                  pthread_create(&thread, &attr, close_retired, c) == 0;
        if (masked) pthread_sigmask(SIG_SETMASK, &saved, NULL);
        pthread_attr_destroy(&attr);
    }
    if (!started) {
        mdb_env_close(env);
        c->retiring = NULL;
    }
    pthread_mutex_unlock(&c->retire_mu);
}

void suc_cache_await_retired(suc_cache *c) {
    pthread_mutex_lock(&c->retire_mu);
    while (c->retiring) pthread_cond_wait(&c->retire_cv, &c->retire_mu);
    pthread_mutex_unlock(&c->retire_mu);
}

/* The process must never have two environments on one index file: closing the older clears
 * every reader slot carrying its pid, the newer one's too, and drops its fcntl locks on the lock
 * file (lmdb.h caveats; cache.c keeps handles apart the same way). A generation file that goes
 * back to a generation this handle just left (a neighbour's damage, or a repair) would make a
 * follow open that generation's files again while the thread still closes them: wait for it. */
static void await_generation_closed(suc_cache *c, uint64_t gen) {
    pthread_mutex_lock(&c->retire_mu);
    while (c->retiring && c->retiring_gen == gen) pthread_cond_wait(&c->retire_cv, &c->retire_mu);
    pthread_mutex_unlock(&c->retire_mu);
}

int suc_cache_follow(suc_cache *c, suc_error *err) {
    if (!suc_gen_moved(c)) return SUC_OK;
    int rc = SUC_OK;
    enum { ATTEMPTS = 16 };
    struct {
        MDB_env *env;
        uint64_t gen;
    } retired[ATTEMPTS]; /* one at most per attempt */
    int retired_count = 0;
    /* Exclusive: no transaction of this process may be open on the environment we leave. */
    pthread_rwlock_wrlock(&c->map_lock);
    for (int attempt = 0; attempt < ATTEMPTS && suc_gen_moved(c); attempt++) {
        uint64_t g = suc_gen_published_settled(c);
        if (g == suc_gen_current(c)) break; /* back where it was by the second look */
        /* Back to a generation left in this loop (no transaction is open on it: closed now) or
         * by an earlier follow (closing on its thread: waited for). */
        for (int i = 0; i < retired_count; i++) {
            if (retired[i].gen != g) continue;
            mdb_env_close(retired[i].env);
            retired[i] = retired[--retired_count];
            break;
        }
        await_generation_closed(c, g);
        MDB_env *env = NULL;
        MDB_dbi dbis[4];
        rc = suc_open_generation_env(c, g, 0, &env, err);
        if (!rc && (rc = open_tables_read(env, dbis, err))) mdb_env_close(env);
        /* Switched again: the file of `g` was retired before we opened it (SUC_ENOENT), or
         * between our check and LMDB's open, which then made an empty one (no tables; the next
         * compaction removes it with the other retired generations). Follow the newer one. */
        if (rc && suc_gen_published(c) != g) continue;
        /* Only damage found again counts, as at open (a file seen mid-commit by another process
         * must not fail this operation): look once more after a moment before reporting it. */
        if (rc == SUC_ECORRUPT && attempt < 3) {
            usleep(1000u << (2 * attempt));
            continue;
        }
        if (rc) break;
        pthread_mutex_lock(&c->pool_mu);
        for (int i = 0; i < c->rtxn_count; i++) mdb_txn_abort(c->rtxn_pool[i]);
        c->rtxn_count = 0;
        pthread_mutex_unlock(&c->pool_mu);
        retired[retired_count].env = c->env;
        retired[retired_count++].gen = suc_gen_current(c);
        suc_adopt_env(c, env, g);
        c->dbi_main = dbis[0], c->dbi_by_time = dbis[1], c->dbi_by_use = dbis[2], c->dbi_meta = dbis[3];
    }
    pthread_rwlock_unlock(&c->map_lock);
    /* Outside the lock: a retirement that waits for an earlier close holds up no lookup. */
    for (int i = 0; i < retired_count; i++) retire_env(c, retired[i].env, retired[i].gen);
    return rc;
}

/* Creates what a new directory holds, under the creation lock: the layout's directories, the
 * generation-0 index with its tables, and last the generation file, whose presence tells every
 * later opener that the directory is complete (concurrent first opens, docs/Capacity.md). */


int suc_cache_stats(suc_cache *c, suc_stats *out, suc_error *err) {
    int rc = suc_cache_check_fork(c, err);
    if (rc) return rc;
    memset(out, 0, sizeof *out);
    MDB_txn *txn;
    if ((rc = suc_rtxn_begin(c, &txn, err))) return rc;
    uint64_t v;
    if (!suc_meta_get(c, txn, "entries", &v)) out->entries = v;
    if (!suc_meta_get(c, txn, "body_bytes", &v)) out->body_bytes = v;
    if (!suc_meta_get(c, txn, "stored_bytes", &v)) out->stored_bytes = v;
    if (!suc_meta_get(c, txn, "record_bytes", &v)) out->record_bytes = v;
    if (!suc_meta_get(c, txn, "evictions", &v)) out->evictions = v;
    if (!suc_meta_get(c, txn, "corrupt_purges", &v)) out->corrupt_purges = v;
    if (!suc_meta_get(c, txn, "stores", &v)) out->stores = v;
    if (!suc_meta_get(c, txn, "hits", &v)) out->hits = v;
    if (!suc_meta_get(c, txn, "misses", &v)) out->misses = v;
    /* This process's counts not yet written are part of the truth too. */
    out->hits += atomic_load(&c->pending_hits);
    out->misses += atomic_load(&c->pending_misses);
    /* The record, not this handle's copy: an upgrade by another process changes it, and this
     * handle learns of that only at its next write. */
    out->directory_format = (uint32_t)suc_directory_format(c);
    if (!suc_meta_get(c, txn, "format", &v) && suc_directory_format_known(v)) out->directory_format = (uint32_t)v;
    MDB_envinfo info;
    MDB_stat est;
    if (!mdb_env_info(c->env, &info) && !mdb_env_stat(c->env, &est)) {
        out->map_size = info.me_mapsize;
        out->map_used = (uint64_t)(info.me_last_pgno + 1) * est.ms_psize;
        out->readers_used = info.me_numreaders;
        out->readers_max = info.me_maxreaders;
    }
    suc_rtxn_end(c, txn);
    return SUC_OK;
}