/*
 * cache.c — the public handle: opening a cache directory (checks, layout, the current index
 * generation, recovery of a damaged or unsynced index), the per-process registry, close, flush
 * and sync. The top layer of the core: it calls every layer below and none calls it
 * (scripts/core-layers.py; the environment and transactions are txn.c).
 *
 * The lmdb.h caveat this file exists to honour:
 * > "Do not have open an LMDB database twice in the same process at the same time. Not even
 * >  from a plain open() call - close()ing it breaks flock() advisory locking."
 *   → one handle per (device, inode) per process, reference-counted (the registry below).
 */
#include "operations.h"
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
        /* A handle closing in the parent: its descriptors may be closed, their numbers reused. */
        if (c->fork_gen != suc_fork_generation() || c->closing) continue;
        if (c->genfd >= 0) close(c->genfd);
        if (c->leasefd >= 0) close(c->leasefd);
        if (c->handofffd >= 0) close(c->handofffd); /* its locks are the parent's */
        if (c->ghostfd >= 0) close(c->ghostfd);
    }
    suc_fork_happened();
    g_registry = NULL;
    pthread_mutex_init(&g_registry_mu, NULL);
    pthread_cond_init(&g_registry_cv, NULL);
}

/* Takes `c` out of the list; the caller holds g_registry_mu. */
static void registry_remove(suc_cache *c) {
    for (suc_cache **p = &g_registry; *p; p = &(*p)->next) {
        if (*p == c) {
            *p = c->next;
            return;
        }
    }
}

static void install_atfork(void) { pthread_atfork(atfork_prepare, atfork_parent, atfork_child); }

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

/* The index's named tables, opened into the handle (with MDB_CREATE, made where missing). */
static int open_named_tables(suc_cache *c, MDB_txn *txn, unsigned flags) {
    int rc;
    if ((rc = mdb_dbi_open(txn, "main", flags, &c->dbi_main)) ||
        (rc = mdb_dbi_open(txn, "by_time", flags, &c->dbi_by_time)) ||
        (rc = mdb_dbi_open(txn, "by_use", flags, &c->dbi_by_use)))
        return rc;
    return mdb_dbi_open(txn, "meta", flags, &c->dbi_meta);
}

/* Whether init_tables would write nothing to an index whose tables are open: a format record
 * this build reads (into *format), the file_bytes counter and the partition counters are there.
 * init_tables writes exactly what this finds missing, so the two change together. */
static int needs_no_init(suc_cache *c, MDB_txn *txn, uint64_t *format) {
    uint64_t file_bytes = 0;
    return suc_meta_get(c, txn, "format", format) == 0 && suc_directory_format_known(*format) &&
           suc_meta_get(c, txn, "file_bytes", &file_bytes) == 0 && suc_partitions_counted(c, txn);
}

static int init_tables(suc_cache *c, MDB_txn *txn, void *vctx, suc_error *err) {
    init_ctx *ctx = vctx;
    int rc;
    if ((rc = open_named_tables(c, txn, MDB_CREATE))) return suc_fail_mdb(err, "mdb_dbi_open", rc);
    uint64_t format = 0, file_bytes = 0;
    if (needs_no_init(c, txn, &format)) {
        atomic_store_explicit(&c->directory_format, (int)format, memory_order_relaxed);
        return SUC_OK;
    }
    /* Something is missing: each step below writes what it finds missing. */
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
    if (!suc_directory_format_known(format))
        return suc_fail(err, SUC_EVERSION, "meta", 0, 0,
                        "cache format %llu is not supported (this build reads %u to %u)",
                        (unsigned long long)format, SUC_DIRECTORY_FORMAT_OLDEST, SUC_FORMAT_VERSION);
    atomic_store_explicit(&c->directory_format, (int)format, memory_order_relaxed);
    if (suc_meta_get(c, txn, "file_bytes", &file_bytes) == MDB_NOTFOUND) {
        if ((rc = count_file_bytes(c, txn, &file_bytes)) || (rc = suc_meta_put(c, txn, "file_bytes", file_bytes)))
            return suc_fail_mdb(err, "recount(file_bytes)", rc);
    }
    /* A directory written before partition counters gets them counted once, by this walk. */
    if (!suc_partitions_counted(c, txn) && (rc = suc_partitions_recount(c, txn, err))) return rc;
    return SUC_OK;
}

/* Whether the index needs none of init_tables' writes (its tables there, and needs_no_init).
 * Then they are opened in a read transaction (committed, so the table handles stay the
 * environment's), and an open takes no write lock: a service starts, and serves lookups, while
 * another process holds the write lock (a process stopped mid-commit holds it until it
 * resumes). 1 when done so. */
static int open_tables_read_only(suc_cache *c) {
    MDB_txn *txn = NULL;
    pthread_rwlock_rdlock(&c->map_lock);
    int ready = mdb_txn_begin(c->env, NULL, MDB_RDONLY, &txn) == 0;
    uint64_t format = 0;
    ready = ready && open_named_tables(c, txn, 0) == 0 && needs_no_init(c, txn, &format);
    if (ready) ready = mdb_txn_commit(txn) == 0;
    else if (txn) mdb_txn_abort(txn);
    pthread_rwlock_unlock(&c->map_lock);
    if (ready) atomic_store_explicit(&c->directory_format, (int)format, memory_order_relaxed);
    return ready;
}

/* Everything of the handle that the kernel and LMDB hold: closed before the handle leaves the
 * registry. Until then another thread opening the directory waits for it, so the process never
 * has two environments on one index file: closing the older would clear every reader slot
 * carrying the process's pid, the newer one's too, and drop the process's fcntl locks on the
 * lock file, which tell other processes that its slots are alive (lmdb.h caveats). */
static void cache_close_files(suc_cache *c) {
    /* A generation left by a follow may still be closing on its thread: every descriptor and
     * mapping of the handle is gone when close returns. */
    suc_cache_await_retired(c);
    for (int i = 0; i < c->rtxn_count; i++) mdb_txn_abort(c->rtxn_pool[i]);
    c->rtxn_count = 0;
    if (c->env) mdb_env_close(c->env);
    c->env = NULL;
    suc_gen_detach(c);
    int *fds[] = {&c->bodiesfd, &c->tmpfd, &c->unsyncedfd, &c->leasefd, &c->handofffd, &c->ghostfd, &c->rootfd};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++) {
        suc_os_close(*fds[i]);
        *fds[i] = -1;
    }
}

/* The handle's memory; its files are closed first (cache_close_files), while it is still in
 * the registry. */
static void cache_free(suc_cache *c) {
    if (!c) return;
    for (int i = 0; i < c->deflater_count; i++) {
        deflateEnd(c->deflaters[i]);
        free(c->deflaters[i]);
    }
    for (int i = 0; i < c->inflater_count; i++) {
        inflateEnd(c->inflaters[i]);
        free(c->inflaters[i]);
    }
    free(c->touches);
    free(c->root_path);
    pthread_rwlock_destroy(&c->map_lock);
    pthread_mutex_destroy(&c->pool_mu);
    pthread_mutex_destroy(&c->retire_mu);
    pthread_cond_destroy(&c->retire_cv);
    pthread_mutex_destroy(&c->commit_mu);
    pthread_cond_destroy(&c->commit_cv);
    pthread_mutex_destroy(&c->touch_mu);
    pthread_mutex_destroy(&c->lease_mu);
    pthread_mutex_destroy(&c->handoff_mu);
    free(c);
}

static suc_cache *cache_alloc(void) {
    suc_cache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->rootfd = c->bodiesfd = c->tmpfd = c->genfd = c->unsyncedfd = c->leasefd = c->handofffd = c->ghostfd = -1;
    pthread_mutex_init(&c->lease_mu, NULL);
    pthread_mutex_init(&c->handoff_mu, NULL);
    pthread_rwlockattr_t ra;
    pthread_rwlockattr_init(&ra);
    /* Map growth must not starve behind a stream of lookups. */
    pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&c->map_lock, &ra);
    pthread_rwlockattr_destroy(&ra);
    pthread_mutex_init(&c->pool_mu, NULL);
    pthread_mutex_init(&c->retire_mu, NULL);
    pthread_cond_init(&c->retire_cv, NULL);
    pthread_mutex_init(&c->commit_mu, NULL);
    pthread_cond_init(&c->commit_cv, NULL);
    pthread_mutex_init(&c->touch_mu, NULL);
    c->touches = malloc(sizeof(suc_touch) * SUC_TOUCH_MAX);
    c->fork_gen = suc_fork_generation();
    c->relieve_disk_full = suc_relieve_disk_full;
    return c;
}

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
    if (!rc) rc = suc_open_generation_env(c, 0, 1, &env, err);
    if (rc) return rc;
    suc_adopt_env(c, env, 0);
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

/* With the root's creation lock held: moves the index of generation `g` aside (as
 * damaged-<name>) or, when `keep_aside` is 0, unlinks it with its lock file, and publishes a new,
 * empty generation that this handle adopts. */
static int start_over(suc_cache *c, uint64_t g, int keep_aside, suc_error *err) {
    uint64_t next = g + 1;
    char data[SUC_INDEX_NAME_LEN], aside[SUC_INDEX_NAME_LEN + 16], lock[SUC_INDEX_NAME_LEN + 5];
    suc_index_file_name(g, data);
    snprintf(aside, sizeof aside, "damaged-%s", data);
    snprintf(lock, sizeof lock, "%s-lock", data);
    if (!keep_aside || suc_os_renameat(c->rootfd, data, c->rootfd, aside) < 0) (void)suc_os_unlinkat(c->rootfd, data, 0);
    if (!keep_aside) (void)suc_os_unlinkat(c->rootfd, lock, 0);
    suc_gen_unlink(c, next); /* an unpublished attempt of a rewrite, if any */
    MDB_env *env = NULL;
    int rc = suc_open_generation_env(c, next, 1, &env, err);
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
    suc_adopt_env(c, env, next);
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
    int rerc = suc_open_generation_env(c, g, 0, &again, &ignored);
    if (rerc == SUC_OK) mdb_env_close(again);
    if (rerc == SUC_ECORRUPT) rc = start_over(c, g, 1, err);
out:
    if (!root_locked) flock(c->rootfd, LOCK_UN);
    return rc;
}

/* A restart may have torn an index left with unsynced commits (unsynced.c decides): started
 * over, under a new generation, before anything reads it. */
static int recover_unsynced(suc_cache *c, int *root_locked, suc_error *err) {
    uint64_t g = 0;
    int found = suc_unsynced_restart_found(c, root_locked, &g, err);
    if (found <= 0) return found;
    int rc = start_over(c, g, 0, err);
    if (!rc) rc = suc_unsynced_clear(c, err);
    if (!rc) c->discarded_unsynced_index = 1;
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
        rc = suc_open_generation_env(c, g, 0, &env, err);
        /* Any failure once `g` is no longer the published generation is the retirement race
         * (the file gone, or one LMDB made after it went, which then fails the inode check):
         * take the newer generation. */
        if (rc && suc_gen_published(c) != g) continue;
        if (rc == SUC_ECORRUPT) {
            if ((rc = replace_damaged_index(c, g, root_locked, err))) return rc;
            continue;
        }
        int lost = rc == SUC_ENOENT;
        if (lost && create) rc = suc_open_generation_env(c, g, 1, &env, err);
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
        suc_adopt_env(c, env, g);
        init_ctx ictx = {lost};
        if (!lost && open_tables_read_only(c)) break;
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
        if (e->opening || e->closing) { /* another thread is opening or closing it: wait, then look again */
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
        (rc = recover_unsynced(c, &locked, err)) || (rc = suc_gen_hold(c)) ||
        (rc = open_current(c, o.create || c->discarded_unsynced_index, locked, path, err)) ||
        (rc = suc_unsynced_open(c, err)))
        goto opened;
    count_fanout_dirs(c);
    *out = c;

opened:
    if (locked) flock(c->rootfd, LOCK_UN);
    if (rc) cache_close_files(c); /* before a waiter, if any, opens the directory for itself */
    pthread_mutex_lock(&g_registry_mu);
    c->opening = 0;
    if (rc) { /* not opened: out of the registry; a waiter, if any, tries for itself */
        registry_remove(c);
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
    if (c->fork_gen != suc_fork_generation()) return; /* a child never touches its parent's handles */
    pthread_mutex_lock(&g_registry_mu);
    int last = --c->refcount == 0;
    if (last) c->closing = 1;
    pthread_mutex_unlock(&g_registry_mu);
    if (!last) return;
    (void)suc_cache_flush(c, NULL);
    (void)suc_unsynced_sync(c, NULL);
    /* Out of the registry only once its environment is closed (cache_close_files). */
    cache_close_files(c);
    pthread_mutex_lock(&g_registry_mu);
    registry_remove(c);
    pthread_cond_broadcast(&g_registry_cv);
    pthread_mutex_unlock(&g_registry_mu);
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
    if (!c || c->fork_gen != suc_fork_generation()) return;
    if (hits) atomic_fetch_add(&c->pending_hits, hits);
    if (misses) atomic_fetch_add(&c->pending_misses, misses);
}
