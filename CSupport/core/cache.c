/*
 * cache.c — opening a cache directory, the per-process environment registry, transactions,
 * map growth, counters and the lazy last-use queue.
 *
 * The lmdb.h caveats this file exists to honour:
 * > "Do not have open an LMDB database twice in the same process at the same time. Not even
 * >  from a plain open() call - close()ing it breaks flock() advisory locking."
 *   → one handle per (device, inode) per process, reference-counted (the registry below).
 * > "Use an MDB_env* in the process which opened it, not after fork()."
 *   → a fork generation; every call from a child fails with SUC_EFORKED.
 * > "A process that crashes inside a read transaction leaves a stale reader slot."
 *   → mdb_reader_check() at open and whenever MDB_READERS_FULL comes back.
 * > mdb_env_set_mapsize: "may only be called if no transactions are active in the current
 * >  process" and, after another process grew the map, "pass 0 to adopt the new size".
 *   → every transaction holds map_lock shared; growth and adoption hold it exclusive.
 */
#include "internal.h"
#include "os.h"

#include <dirent.h>
#include <stdatomic.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define SUC_FORMAT_VERSION ((unsigned)SUC_DIRECTORY_FORMAT)

/* One handle per directory per process (lmdb.h: an environment must not be opened twice in a
 * process). The mutex guards the list only: opening a directory (which may wait for another
 * process's flock or write lock) happens outside it, under an `opening` entry that other
 * threads opening the same directory wait for, so a directory that is slow to open never holds
 * up the opening of any other. */
static pthread_mutex_t g_registry_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_registry_cv = PTHREAD_COND_INITIALIZER;
static suc_cache *g_registry;
static uint64_t g_fork_gen;
static pthread_once_t g_atfork_once = PTHREAD_ONCE_INIT;

/* In a forked child the parent's handles are never used again (every call fails with
 * SUC_EFORKED) and never closed through LMDB: mdb_env_close would clear the parent's reader
 * slots, which carry the parent's pid. What the child must not keep is what outlives the parent
 * through it: its copies of the descriptors that carry flock and open-file-description locks
 * (the generation file's shared lock, request leases: a lease held by a parent that died would
 * otherwise stay held for the child's whole life). Those are closed. The index mapping stays
 * (LMDB gives no way to unmap it without closing the environment) but the child never touches
 * it, so a neighbour's damage to the file cannot fault the child. The registry lock is taken
 * around fork() so the child never sees the list half changed. */
static void atfork_prepare(void) { pthread_mutex_lock(&g_registry_mu); }

static void atfork_parent(void) { pthread_mutex_unlock(&g_registry_mu); }

static void atfork_child(void) {
    for (suc_cache *c = g_registry; c; c = c->next) {
        if (c->fork_gen != g_fork_gen) continue;
        if (c->genfd >= 0) close(c->genfd);
        if (c->leasefd >= 0) close(c->leasefd);
    }
    g_fork_gen++;
    g_registry = NULL;
    pthread_mutex_init(&g_registry_mu, NULL);
    pthread_cond_init(&g_registry_cv, NULL);
}

static void install_atfork(void) { pthread_atfork(atfork_prepare, atfork_parent, atfork_child); }

int suc_cache_check_fork(suc_cache *c, suc_error *err) {
    if (!c) return suc_fail(err, SUC_EINVAL, "suc_cache", 0, 0, "NULL cache handle");
    if (c->fork_gen != g_fork_gen)
        return suc_fail(err, SUC_EFORKED, "suc_cache", 0, 0,
                        "cache handle opened before fork(); open the directory again in the child");
    return SUC_OK;
}

void suc_options_init(suc_options *o) {
    memset(o, 0, sizeof *o);
    o->durability = SUC_DURABILITY_DEFAULT;
    o->map_size_initial = 64ull << 20;
    o->map_size_max = 64ull << 30;
    o->max_body_bytes = 64ull << 20;
    o->max_key_bytes = 16u << 10;
    o->max_head_bytes = 256u << 10;
    o->max_user_info_bytes = 64u << 10;
    o->inline_max_bytes = 8192;
    o->max_readers = 1024;
    o->compression_level = 1;
    o->touch_interval_ms = 60000;
    o->relaxed_sync_interval_ms = 1000;
}

static void normalize_options(suc_options *o, const suc_options *in) {
    suc_options d;
    suc_options_init(&d);
    *o = in ? *in : d;
    if (!o->map_size_initial) o->map_size_initial = d.map_size_initial;
    if (!o->map_size_max) o->map_size_max = d.map_size_max;
    if (o->map_size_max < o->map_size_initial) o->map_size_max = o->map_size_initial;
    if (!o->max_body_bytes) o->max_body_bytes = d.max_body_bytes;
    if (!o->max_key_bytes) o->max_key_bytes = d.max_key_bytes;
    if (!o->max_head_bytes) o->max_head_bytes = d.max_head_bytes;
    if (!o->max_user_info_bytes) o->max_user_info_bytes = d.max_user_info_bytes;
    if (!o->inline_max_bytes) o->inline_max_bytes = d.inline_max_bytes;
    if (!o->max_readers) o->max_readers = d.max_readers;
    if (o->compression_level < 1 || o->compression_level > 9) o->compression_level = d.compression_level;
    if (!o->touch_interval_ms) o->touch_interval_ms = d.touch_interval_ms;
    if (!o->relaxed_sync_interval_ms) o->relaxed_sync_interval_ms = d.relaxed_sync_interval_ms;
    if (o->durability != SUC_DURABILITY_DURABLE && o->durability != SUC_DURABILITY_RELAXED)
        o->durability = SUC_DURABILITY_DEFAULT;
}

/* ---- directory checks ---------------------------------------------------------------- */

static int in_group(gid_t gid) {
    if (gid == getegid()) return 1;
    gid_t groups[256];
    int n = getgroups(256, groups);
    for (int i = 0; i < n; i++)
        if (groups[i] == gid) return 1;
    return 0;
}

/* docs/Reliability.md §3.4: refuse a world-writable root and one owned by a group we are not in. */
static int check_root(int rootfd, const char *path, suc_error *err) {
    struct stat st;
    if (suc_os_fstat(rootfd, &st) < 0) return suc_fail_errno(err, "fstat(root)", errno);
    if (!S_ISDIR(st.st_mode))
        return suc_fail(err, SUC_ENOTCACHE, "fstat(root)", 0, 0, "%s is not a directory", path);
    if (st.st_mode & S_IWOTH)
        return suc_fail(err, SUC_EUNSAFE, "fstat(root)", 0, 0, "%s is world-writable", path);
    if (geteuid() != 0 && st.st_uid != geteuid() && !in_group(st.st_gid))
        return suc_fail(err, SUC_EUNSAFE, "fstat(root)", 0, 0,
                        "%s belongs to a user and group this process is not", path);
    return SUC_OK;
}

/* A directory with no index may only hold what an interrupted creation leaves behind. */
static int check_empty_or_ours(int rootfd, const char *path, suc_error *err) {
    int fd = dup(rootfd);
    if (fd < 0) return suc_fail_errno(err, "dup(root)", errno);
    DIR *d = fdopendir(fd);
    if (!d) {
        int e = errno;
        close(fd);
        return suc_fail_errno(err, "fdopendir(root)", e);
    }
    rewinddir(d);
    int rc = SUC_OK;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        const char *n = de->d_name;
        if (!strcmp(n, ".") || !strcmp(n, "..") || !strcmp(n, "bodies") || !strcmp(n, "tmp") ||
            suc_is_index_file(n) || suc_is_control_file(n) || !strncmp(n, ".generation-", 12))
            continue;
        rc = suc_fail(err, SUC_ENOTCACHE, "readdir(root)", 0, 0,
                      "%s is not empty and holds no cache index (found '%s')", path, n);
        break;
    }
    closedir(d);
    return rc;
}

/* mkdirat + fchmod(2770) when we created it, so the umask cannot take the group's access. */
int suc_make_dir(int dirfd, const char *name, int *out_fd, suc_error *err) {
    int created = suc_os_mkdirat(dirfd, name, 02770) == 0;
    if (!created && errno != EEXIST) return suc_fail_errno(err, "mkdirat", errno);
    int fd = suc_os_openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
    if (fd < 0) {
        int e = errno;
        /* O_NOFOLLOW|O_DIRECTORY on a symlink fails with ENOTDIR (or ELOOP): hostile, not I/O. */
        if (e == ENOTDIR || e == ELOOP)
            return suc_fail(err, SUC_EUNSAFE, "openat(dir)", e, 0, "%s is not a real directory", name);
        return suc_fail_errno(err, "openat(dir)", e);
    }
    if (created) {
        (void)suc_os_fchmod(fd, 02770);
        suc_adopt_owner(dirfd, fd);
    }
    if (out_fd) *out_fd = fd;
    else suc_os_close(fd);
    return SUC_OK;
}

void suc_adopt_owner(int rootfd, int fd) {
    if (geteuid() != 0) return;
    struct stat root, st;
    if (suc_os_fstat(rootfd, &root) < 0 || suc_os_fstat(fd, &st) < 0) return;
    if (st.st_uid != root.st_uid || st.st_gid != root.st_gid) (void)fchown(fd, root.st_uid, root.st_gid);
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
    return mdb_put(txn, c->dbi_meta, &k, &v, 0);
}

int suc_meta_add_counters(suc_cache *c, MDB_txn *txn, const suc_counters *d, suc_error *err) {
    static const char *names[10] = {"entries", "body_bytes", "stored_bytes", "record_bytes", "evictions",
                                    "corrupt_purges", "stores", "hits", "misses", "file_bytes"};
    const int64_t deltas[10] = {d->entries, d->body_bytes, d->stored_bytes, d->record_bytes, d->evictions,
                                d->corrupt_purges, d->stores, d->hits, d->misses, d->file_bytes};
    if (d->entries) {
        int rc = suc_key_order_count(c, txn, d->entries, err);
        if (rc) return rc;
    }
    for (int i = 0; i < 10; i++) {
        if (!deltas[i]) continue;
        uint64_t cur = 0;
        int rc = suc_meta_get(c, txn, names[i], &cur);
        if (rc && rc != MDB_NOTFOUND) return suc_fail_mdb(err, "mdb_get(meta)", rc);
        int64_t next = (int64_t)cur + deltas[i];
        if (next < 0) next = 0; /* only after undecodable records were purged; verify recomputes */
        if ((rc = suc_meta_put(c, txn, names[i], (uint64_t)next))) return suc_fail_mdb(err, "mdb_put(meta)", rc);
    }
    return SUC_OK;
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

int suc_write_txn_ex(suc_cache *c, suc_write_fn fn, suc_reset_fn reset, void *ctx, int removal_only, suc_error *err) {
    int reliefs = 0; /* a commit that still does not fit after a relief may try again after another */
    for (int attempt = 0;; attempt++) {
        suc_error local = {0};
        MDB_txn *txn = NULL;
        pthread_rwlock_rdlock(&c->map_lock);
        uint64_t seen = c->map_size;
        int mrc = mdb_txn_begin(c->env, NULL, 0, &txn);
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
            if (suc_relieve_disk_full(c, 0)) {
                if (reset) reset(ctx);
                continue;
            }
        }
        if (err) *err = local;
        return rc;
    }
}

/* ---- touches ------------------------------------------------------------------------ */

void suc_touch_queue(suc_cache *c, const uint8_t ikey[SUC_IKEY_LEN], int64_t when_ms) {
    pthread_mutex_lock(&c->touch_mu);
    if (c->touches && c->touch_count < SUC_TOUCH_MAX) {
        /* Past the cap new touches are dropped: last-use is an eviction hint, not data. */
        memcpy(c->touches[c->touch_count].ikey, ikey, SUC_IKEY_LEN);
        c->touches[c->touch_count].when_ms = when_ms;
        c->touch_count++;
    }
    pthread_mutex_unlock(&c->touch_mu);
}

int suc_touch_apply(suc_cache *c, MDB_txn *txn, suc_touch *list, size_t count, suc_error *err) {
    uint8_t *copy = NULL;
    size_t copy_cap = 0;
    int rc = SUC_OK;
    /* Partitions with a quota keep a last-use order of their own; without any, no lookups. */
    int partition_orders = count && suc_partition_any_use_keys(c, txn);
    for (size_t i = 0; i < count; i++) {
        MDB_val k = {SUC_IKEY_LEN, list[i].ikey}, v;
        int mrc = mdb_get(txn, c->dbi_main, &k, &v);
        if (mrc == MDB_NOTFOUND) continue;
        if (mrc) {
            rc = suc_fail_mdb(err, "mdb_get(touch)", mrc);
            break;
        }
        suc_record r;
        if (suc_record_decode(v.mv_data, v.mv_size, &r) || r.last_used_ms >= list[i].when_ms) continue;
        if (v.mv_size > copy_cap) {
            uint8_t *p = realloc(copy, v.mv_size);
            if (!p) {
                rc = suc_fail(err, SUC_ENOMEM, "realloc(touch)", ENOMEM, 0, "out of memory");
                break;
            }
            copy = p;
            copy_cap = v.mv_size;
        }
        memcpy(copy, v.mv_data, v.mv_size);
        if (partition_orders && (rc = suc_partition_touch(c, txn, list[i].ikey, &r, list[i].when_ms, err))) break;
        suc_record_patch_last_used(copy, list[i].when_ms);
        uint8_t old_t[SUC_TKEY_LEN], new_t[SUC_TKEY_LEN];
        suc_tkey_make(r.last_used_ms, list[i].ikey, old_t);
        suc_tkey_make(list[i].when_ms, list[i].ikey, new_t);
        MDB_val ok = {SUC_TKEY_LEN, old_t}, nk = {SUC_TKEY_LEN, new_t}, empty = {0, NULL};
        MDB_val nv = {v.mv_size, copy};
        mrc = mdb_del(txn, c->dbi_by_use, &ok, NULL);
        if (mrc && mrc != MDB_NOTFOUND) {
            rc = suc_fail_mdb(err, "mdb_del(by_use)", mrc);
            break;
        }
        if ((mrc = mdb_put(txn, c->dbi_by_use, &nk, &empty, 0)) ||
            (mrc = mdb_put(txn, c->dbi_main, &k, &nv, 0))) {
            rc = suc_fail_mdb(err, "mdb_put(touch)", mrc);
            break;
        }
    }
    free(copy);
    return rc;
}

/* ---- open / close ------------------------------------------------------------------- */

typedef struct init_ctx {
    int fresh_ok; /* the directory had no index file before this open */
} init_ctx;

/* Sums the block-rounded body files of every record: directories written before the
 * file_bytes counter existed get it on their first open by this release. */
static int count_file_bytes(suc_cache *c, MDB_txn *txn, uint64_t *out) {
    MDB_cursor *cur;
    int mrc = mdb_cursor_open(txn, c->dbi_main, &cur);
    if (mrc) return mrc;
    MDB_val k, v;
    uint64_t sum = 0;
    for (mrc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); mrc == 0; mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        suc_record r;
        if (suc_record_decode(v.mv_data, v.mv_size, &r) == SUC_OK) sum += suc_record_file_bytes(&r, v.mv_size);
    }
    mdb_cursor_close(cur);
    *out = sum;
    return mrc == MDB_NOTFOUND ? 0 : mrc;
}

static int init_tables(suc_cache *c, MDB_txn *txn, void *vctx, suc_error *err) {
    init_ctx *ctx = vctx;
    int rc;
    if ((rc = mdb_dbi_open(txn, "main", MDB_CREATE, &c->dbi_main)) ||
        (rc = mdb_dbi_open(txn, "by_time", MDB_CREATE, &c->dbi_by_time)) ||
        (rc = mdb_dbi_open(txn, "by_use", MDB_CREATE, &c->dbi_by_use)) ||
        (rc = mdb_dbi_open(txn, "meta", MDB_CREATE, &c->dbi_meta)))
        return suc_fail_mdb(err, "mdb_dbi_open", rc);
    uint64_t format = 0, file_bytes = 0;
    rc = suc_meta_get(c, txn, "format", &format);
    if (rc == MDB_NOTFOUND) {
        MDB_stat st;
        mdb_stat(txn, c->dbi_main, &st);
        if (st.ms_entries > 0 && !ctx->fresh_ok)
            return suc_fail(err, SUC_ENOTCACHE, "meta", 0, 0, "index has entries but no format record");
        if ((rc = suc_meta_put(c, txn, "format", SUC_FORMAT_VERSION))) return suc_fail_mdb(err, "mdb_put(meta)", rc);
        /* An index made where one was lost (or damaged): the body files written before now are
         * what a rebuild may restore; any written later that the index does not know are dead
         * (replaced or removed with their unlink lost), never restored (maintenance.c). */
        if (ctx->fresh_ok && (rc = suc_meta_put(c, txn, SUC_META_REBUILD_BEFORE, (uint64_t)suc_os_now_ms())))
            return suc_fail_mdb(err, "mdb_put(meta)", rc);
        format = SUC_FORMAT_VERSION;
    } else if (rc) {
        return suc_fail(err, SUC_ECORRUPT, "meta", 0, rc, "format record is unreadable");
    }
    if (format != SUC_FORMAT_VERSION)
        return suc_fail(err, SUC_EVERSION, "meta", 0, 0,
                        "cache format %llu is not supported (this build reads %u)",
                        (unsigned long long)format, SUC_FORMAT_VERSION);
    if (suc_meta_get(c, txn, "file_bytes", &file_bytes) == MDB_NOTFOUND) {
        if ((rc = count_file_bytes(c, txn, &file_bytes)) || (rc = suc_meta_put(c, txn, "file_bytes", file_bytes)))
            return suc_fail_mdb(err, "recount(file_bytes)", rc);
    }
    /* A directory written before partition counters gets them counted once, by this walk. */
    if (!suc_partitions_counted(c, txn) && (rc = suc_partitions_recount(c, txn, err))) return rc;
    return SUC_OK;
}

static void cache_free(suc_cache *c) {
    if (!c) return;
    for (int i = 0; i < c->rtxn_count; i++) mdb_txn_abort(c->rtxn_pool[i]);
    if (c->env) mdb_env_close(c->env);
    for (int i = 0; i < c->deflater_count; i++) {
        deflateEnd(c->deflaters[i]);
        free(c->deflaters[i]);
    }
    for (int i = 0; i < c->inflater_count; i++) {
        inflateEnd(c->inflaters[i]);
        free(c->inflaters[i]);
    }
    suc_gen_detach(c);
    suc_os_close(c->bodiesfd);
    suc_os_close(c->tmpfd);
    suc_os_close(c->unsyncedfd);
    suc_os_close(c->leasefd);
    suc_os_close(c->rootfd);
    free(c->touches);
    free(c->root_path);
    pthread_rwlock_destroy(&c->map_lock);
    pthread_mutex_destroy(&c->pool_mu);
    pthread_mutex_destroy(&c->commit_mu);
    pthread_cond_destroy(&c->commit_cv);
    pthread_mutex_destroy(&c->touch_mu);
    pthread_mutex_destroy(&c->lease_mu);
    free(c);
}

static suc_cache *cache_alloc(void) {
    suc_cache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->rootfd = c->bodiesfd = c->tmpfd = c->genfd = c->unsyncedfd = c->leasefd = -1;
    pthread_mutex_init(&c->lease_mu, NULL);
    pthread_rwlockattr_t ra;
    pthread_rwlockattr_init(&ra);
    /* Map growth must not starve behind a stream of lookups. */
    pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&c->map_lock, &ra);
    pthread_rwlockattr_destroy(&ra);
    pthread_mutex_init(&c->pool_mu, NULL);
    pthread_mutex_init(&c->commit_mu, NULL);
    pthread_cond_init(&c->commit_cv, NULL);
    pthread_mutex_init(&c->touch_mu, NULL);
    c->touches = malloc(sizeof(suc_touch) * SUC_TOUCH_MAX);
    c->fork_gen = g_fork_gen;
    return c;
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
    if ((uint64_t)st.st_size < ((uint64_t)info.me_last_pgno + 1) * est.ms_psize)
        return suc_fail(err, SUC_ECORRUPT, "fstat(index)", 0, 0,
                        "index file %s is damaged: %llu bytes, its pages need %llu", name,
                        (unsigned long long)st.st_size,
                        (unsigned long long)(((uint64_t)info.me_last_pgno + 1) * est.ms_psize));
    return SUC_OK;
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
static int open_generation_env(suc_cache *c, uint64_t gen, int create, MDB_env **out, suc_error *err) {
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

static void adopt_env(suc_cache *c, MDB_env *env, uint64_t gen) {
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

int suc_cache_follow(suc_cache *c, suc_error *err) {
    if (!suc_gen_moved(c)) return SUC_OK;
    int rc = SUC_OK;
    /* Exclusive: no transaction of this process may be open on the environment we close. */
    pthread_rwlock_wrlock(&c->map_lock);
    for (int attempt = 0; attempt < 16 && suc_gen_moved(c); attempt++) {
        uint64_t g = suc_gen_published_settled(c);
        MDB_env *env = NULL;
        MDB_dbi dbis[4];
        rc = open_generation_env(c, g, 0, &env, err);
        if (!rc && (rc = open_tables_read(env, dbis, err))) mdb_env_close(env);
        /* Switched again: the file of `g` was retired before we opened it (SUC_ENOENT), or
         * between our check and LMDB's open, which then made an empty one (no tables; the next
         * compaction removes it with the other retired generations). Follow the newer one. */
        if (rc && suc_gen_published(c) != g) continue;
        if (rc) break;
        pthread_mutex_lock(&c->pool_mu);
        for (int i = 0; i < c->rtxn_count; i++) mdb_txn_abort(c->rtxn_pool[i]);
        c->rtxn_count = 0;
        pthread_mutex_unlock(&c->pool_mu);
        mdb_env_close(c->env);
        adopt_env(c, env, g);
        c->dbi_main = dbis[0], c->dbi_by_time = dbis[1], c->dbi_by_use = dbis[2], c->dbi_meta = dbis[3];
    }
    pthread_rwlock_unlock(&c->map_lock);
    return rc;
}

/* Creates what a new directory holds, under the creation lock: the layout's directories, the
 * generation-0 index with its tables, and last the generation file, whose presence tells every
 * later opener that the directory is complete (concurrent first opens, docs/Capacity.md). */
static int create_layout(suc_cache *c, const char *path, int create, suc_error *err) {
    struct stat ist;
    int has_index = fstatat(c->rootfd, "index.lmdb", &ist, AT_SYMLINK_NOFOLLOW) == 0;
    if (!has_index) {
        if (!create) return suc_fail(err, SUC_ENOTCACHE, "fstatat(index)", ENOENT, 0, "%s holds no cache index", path);
        int rc = check_empty_or_ours(c->rootfd, path, err);
        if (rc) return rc;
    }
    /* The fan-out directories (bodies/00 … ff) are made by the first store that needs each
     * (suc_body_open_fanout): made up front, 256 directories of a block each were 1 MiB in `du`
     * before the first entry, and a cache of small, inline bodies never needs one. */
    int rc = suc_make_dir(c->rootfd, "bodies", NULL, err);
    if (!rc) rc = suc_make_dir(c->rootfd, "tmp", NULL, err);
    MDB_env *env = NULL;
    if (!rc) rc = open_generation_env(c, 0, 1, &env, err);
    if (rc) return rc;
    adopt_env(c, env, 0);
    init_ctx ictx = {!has_index};
    if ((rc = suc_write_txn(c, init_tables, NULL, &ictx, err))) return rc;
    return suc_gen_create(c->rootfd, 0, err);
}

static int is_fanout_name(const char *name) {
    static const char hex[] = "0123456789abcdef";
    return name[0] && strchr(hex, name[0]) && name[1] && strchr(hex, name[1]) && !name[2];
}

/* How many fan-out directories exist now: the estimated disk usage counts their blocks. One
 * read of `bodies/` (a few getdents calls) rather than a stat per possible name, so an open
 * of a short-lived process stays cheap. Only an estimate: if it cannot be read, 0. */
static void count_fanout_dirs(suc_cache *c) {
    uint32_t n = 0;
    int fd = dup(c->bodiesfd);
    DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
    if (!dir && fd >= 0) close(fd);
    if (dir) {
        rewinddir(dir); /* the duplicate shares the original's offset */
        for (struct dirent *e; (e = readdir(dir)) != NULL;) {
            if (!is_fanout_name(e->d_name)) continue;
            struct stat st;
            if (e->d_type == DT_DIR ||
                (e->d_type == DT_UNKNOWN && fstatat(c->bodiesfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                 S_ISDIR(st.st_mode)))
                n++;
        }
        closedir(dir);
    }
    atomic_store(&c->fanout_dirs, n);
}

int suc_index_start_over(suc_cache *c, uint64_t g, int keep_aside, suc_error *err) {
    uint64_t next = g + 1;
    char data[SUC_INDEX_NAME_LEN], aside[SUC_INDEX_NAME_LEN + 16], lock[SUC_INDEX_NAME_LEN + 5];
    suc_index_file_name(g, data);
    snprintf(aside, sizeof aside, "damaged-%s", data);
    snprintf(lock, sizeof lock, "%s-lock", data);
    if (!keep_aside || suc_os_renameat(c->rootfd, data, c->rootfd, aside) < 0) (void)suc_os_unlinkat(c->rootfd, data, 0);
    if (!keep_aside) (void)suc_os_unlinkat(c->rootfd, lock, 0);
    suc_gen_unlink(c, next); /* an unpublished attempt of a rewrite, if any */
    MDB_env *env = NULL;
    int rc = open_generation_env(c, next, 1, &env, err);
    if (rc) return rc;
    MDB_txn *txn = NULL;
    int mrc = mdb_txn_begin(env, NULL, 0, &txn);
    if (mrc) {
        mdb_env_close(env);
        return suc_fail_mdb(err, "mdb_txn_begin(new index)", mrc);
    }
    if (c->env) {
        for (int i = 0; i < c->rtxn_count; i++) mdb_txn_abort(c->rtxn_pool[i]);
        c->rtxn_count = 0;
        mdb_env_close(c->env);
    }
    adopt_env(c, env, next);
    init_ctx ictx = {1};
    /* The tables are committed before the number is published: a process that follows at once
     * opens them. */
    if ((rc = init_tables(c, txn, &ictx, err))) {
        mdb_txn_abort(txn);
        return rc;
    }
    if ((mrc = mdb_txn_commit(txn))) return suc_fail_mdb(err, "mdb_txn_commit(new index)", mrc);
    return suc_gen_publish(c, next, err);
}

/* The published generation's index file is damaged: moved aside, and a new, empty generation
 * published in its place, so that this process, every process restarted after a crash it
 * caused, and every running process at its next operation use a good index again. The bodies
 * stay: `urlcache verify --rebuild` restores their entries (docs/Reliability.md). Under the
 * root's creation lock, so that of several processes finding the damage one replaces it and the
 * others follow. Returns SUC_OK with nothing done when another process got there first. */
static int replace_damaged_index(suc_cache *c, uint64_t g, int root_locked, suc_error *err) {
    if (!root_locked && suc_os_flock_bounded(c->rootfd, LOCK_EX, SUC_ROOT_LOCK_WAIT_MS) < 0)
        return suc_fail(err, SUC_EBUSY, "flock(root)", errno, 0, "another process holds the directory's creation lock");
    int rc = SUC_OK;
    uint64_t published;
    if (!suc_gen_read(c, &published) || published != g) goto out;
    /* Looked at again under the lock: only damage found twice replaces an index. */
    MDB_env *again = NULL;
    suc_error ignored = {0};
    int rerc = open_generation_env(c, g, 0, &again, &ignored);
    if (rerc == SUC_OK) mdb_env_close(again);
    if (rerc == SUC_ECORRUPT) rc = suc_index_start_over(c, g, 1, err);
out:
    if (!root_locked) flock(c->rootfd, LOCK_UN);
    return rc;
}

/* Opens the current generation; a rewrite may switch it between reading and opening. An index
 * file that is gone for good (deleted by hand, lost) is made anew when `create` asks, as for a
 * new directory: `urlcache verify --rebuild` then restores entries from the body files. A
 * damaged one is replaced (replace_damaged_index). */
static int open_current(suc_cache *c, int create, int root_locked, const char *path, suc_error *err) {
    int rc = SUC_OK;
    for (int attempt = 0; attempt < 16; attempt++) {
        uint64_t g = suc_gen_published_settled(c);
        if (c->env && suc_gen_current(c) == g) break;
        MDB_env *env = NULL;
        rc = open_generation_env(c, g, 0, &env, err);
        /* Any failure once `g` is no longer the published generation is the retirement race
         * (the file gone, or one LMDB made after it went, which then fails the inode check):
         * take the newer generation. */
        if (rc && suc_gen_published(c) != g) continue;
        if (rc == SUC_ECORRUPT) {
            if ((rc = replace_damaged_index(c, g, root_locked, err))) return rc;
            continue;
        }
        int lost = rc == SUC_ENOENT;
        if (lost && create) rc = open_generation_env(c, g, 1, &env, err);
        else if (lost) rc = suc_fail(err, SUC_ENOTCACHE, "open(index)", ENOENT, 0, "%s holds no cache index", path);
        if (rc) return rc;
        /* As in suc_cache_follow: a rewrite publishes the new generation before it retires the
         * old file, so if `g` is no longer the published one, the file we opened may be an empty
         * one LMDB made after the retirement. Take the newer generation instead of writing tables
         * into that one. */
        if (suc_gen_published(c) != g) {
            mdb_env_close(env);
            continue;
        }
        if (c->env) mdb_env_close(c->env);
        adopt_env(c, env, g);
        init_ctx ictx = {lost};
        if ((rc = suc_write_txn(c, init_tables, NULL, &ictx, err))) return rc;
        break;
    }
    return rc;
}

int suc_cache_open(const char *path, const suc_options *opts, suc_cache **out, suc_error *err) {
    if (!out || !path || !*path) return suc_fail(err, SUC_EINVAL, "suc_cache_open", 0, 0, "path and out are required");
    *out = NULL;
    pthread_once(&g_atfork_once, install_atfork);
    suc_options o;
    normalize_options(&o, opts);

    pthread_mutex_lock(&g_registry_mu);
    int rc = SUC_OK, created = 0, locked = 0;
    suc_cache *c = NULL;
    int rootfd = -1;

    struct stat lst;
    if (lstat(path, &lst) < 0) {
        if (errno != ENOENT) {
            rc = suc_fail_errno(err, "lstat(root)", errno);
            goto out;
        }
        if (!o.create) {
            rc = suc_fail(err, SUC_ENOENT, "lstat(root)", ENOENT, 0, "%s does not exist", path);
            goto out;
        }
        if (mkdir(path, 02770) < 0 && errno != EEXIST) {
            rc = suc_fail_errno(err, "mkdir(root)", errno);
            goto out;
        }
        created = 1;
    } else if (S_ISLNK(lst.st_mode)) {
        rc = suc_fail(err, SUC_EUNSAFE, "lstat(root)", 0, 0, "%s is a symlink", path);
        goto out;
    }
    rootfd = suc_os_openat(AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
    if (rootfd < 0) {
        int e = errno;
        rc = e == ELOOP ? suc_fail(err, SUC_EUNSAFE, "open(root)", e, 0, "%s is a symlink", path)
           : e == ENOTDIR ? suc_fail(err, SUC_ENOTCACHE, "open(root)", e, 0, "%s is not a directory", path)
           : suc_fail_errno(err, "open(root)", e);
        goto out;
    }
    if (created) (void)suc_os_fchmod(rootfd, 02770);
    if ((rc = check_root(rootfd, path, err))) goto out;

    struct stat st;
    if (suc_os_fstat(rootfd, &st) < 0) {
        rc = suc_fail_errno(err, "fstat(root)", errno);
        goto out;
    }
    for (suc_cache *e = g_registry; e;) {
        if (e->dev != st.st_dev || e->ino != st.st_ino) {
            e = e->next;
            continue;
        }
        if (e->opening) { /* another thread is opening it: wait, then look again */
            pthread_cond_wait(&g_registry_cv, &g_registry_mu);
            e = g_registry;
            continue;
        }
        e->refcount++;
        *out = e;
        goto out;
    }

    c = cache_alloc();
    if (!c || !c->touches || !(c->root_path = strdup(path))) {
        rc = suc_fail(err, SUC_ENOMEM, "calloc(cache)", ENOMEM, 0, "out of memory");
        goto out;
    }
    c->opts = o;
    c->dev = st.st_dev;
    c->ino = st.st_ino;
    c->rootfd = rootfd;
    rootfd = -1;
    c->refcount = 1;
    c->opening = 1;
    c->next = g_registry;
    g_registry = c;
    pthread_mutex_unlock(&g_registry_mu);
    int gen_errno = 0;
    if (suc_gen_inspect(c->rootfd, &gen_errno) != SUC_GEN_VALID) {
        /* A new directory (or one written by a release before generations), or a damaged
         * generation file: made or repaired under an exclusive lock on the root, so that
         * processes opening it together never see it half made; whoever comes second finds it
         * complete. The lock's wait is bounded: any member of the group can hold it. */
        if (suc_os_flock_bounded(c->rootfd, LOCK_EX, SUC_ROOT_LOCK_WAIT_MS) < 0) {
            rc = errno == EWOULDBLOCK ? suc_fail(err, SUC_EBUSY, "flock(root)", errno, 0,
                                                 "another process holds %s's creation lock", path)
                                      : suc_fail_errno(err, "flock(root)", errno);
            goto opened;
        }
        locked = 1;
        switch (suc_gen_inspect(c->rootfd, &gen_errno)) {
        case SUC_GEN_VALID: break;
        case SUC_GEN_UNREADABLE: rc = suc_fail_errno(err, "openat(generation)", gen_errno); break;
        case SUC_GEN_DAMAGED:
            rc = suc_gen_repair(c->rootfd, err);
            if (rc != SUC_ENOENT) break;
            /* fall through: no index file to point at, as in a directory without a layout */
        case SUC_GEN_MISSING: rc = create_layout(c, path, o.create, err); break;
        }
        if (rc) goto opened;
    }
    if ((rc = suc_make_dir(c->rootfd, "bodies", &c->bodiesfd, err)) ||
        (rc = suc_make_dir(c->rootfd, "tmp", &c->tmpfd, err)) || (rc = suc_gen_attach(c, err)) ||
        (rc = suc_unsynced_recover(c, &locked, err)) || (rc = suc_gen_hold(c)) ||
        (rc = open_current(c, o.create || c->discarded_unsynced_index, locked, path, err)) ||
        (rc = suc_unsynced_open(c, err)))
        goto opened;
    count_fanout_dirs(c);
    *out = c;

opened:
    if (locked) flock(c->rootfd, LOCK_UN);
    pthread_mutex_lock(&g_registry_mu);
    c->opening = 0;
    if (rc) { /* not opened: out of the registry; a waiter, if any, tries for itself */
        for (suc_cache **p = &g_registry; *p; p = &(*p)->next) {
            if (*p == c) {
                *p = c->next;
                break;
            }
        }
    } else {
        c = NULL;
    }
    pthread_cond_broadcast(&g_registry_cv);
out:
    pthread_mutex_unlock(&g_registry_mu);
    if (rootfd >= 0) suc_os_close(rootfd);
    cache_free(c);
    return rc;
}

void suc_cache_close(suc_cache *c) {
    if (!c) return;
    if (c->fork_gen != g_fork_gen) return; /* a child never touches its parent's handles */
    pthread_mutex_lock(&g_registry_mu);
    int last = --c->refcount == 0;
    if (last) {
        for (suc_cache **p = &g_registry; *p; p = &(*p)->next) {
            if (*p == c) {
                *p = c->next;
                break;
            }
        }
    }
    pthread_mutex_unlock(&g_registry_mu);
    if (!last) return;
    (void)suc_cache_flush(c, NULL);
    (void)suc_unsynced_sync(c, NULL);
    cache_free(c);
}

int suc_cache_flush(suc_cache *c, suc_error *err) {
    int rc = suc_cache_check_fork(c, err);
    if (rc) return rc;
    pthread_mutex_lock(&c->touch_mu);
    size_t pending = c->touch_count;
    pthread_mutex_unlock(&c->touch_mu);
    if (!pending && !atomic_load(&c->pending_hits) && !atomic_load(&c->pending_misses)) return SUC_OK;
    suc_op op = {0};
    op.kind = 0; /* no operation of its own: the batch applies the queued touches */
    rc = suc_index_submit(c, &op, err);
    suc_op_release(&op);
    return rc;
}

int suc_cache_sync(suc_cache *c, suc_error *err) {
    int rc = suc_cache_check_fork(c, err);
    return rc ? rc : suc_unsynced_sync(c, err);
}

int suc_cache_discarded_unsynced_index(const suc_cache *c) { return c && c->discarded_unsynced_index; }

void suc_cache_count_usage(suc_cache *c, uint64_t hits, uint64_t misses) {
    if (!c || c->fork_gen != g_fork_gen) return;
    if (hits) atomic_fetch_add(&c->pending_hits, hits);
    if (misses) atomic_fetch_add(&c->pending_misses, misses);
}

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
