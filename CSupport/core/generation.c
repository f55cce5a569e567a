/*
 * generation.c — index generations: how the index file shrinks while every process keeps
 * using the directory (docs/Capacity.md, "Index generations").
 *
 * LMDB never returns pages to the file system: after compaction evicts entries, index.lmdb
 * keeps its size. So the index is rewritten compactly into a new file, the next generation,
 * and every process switches to it:
 *
 *   1. The compactor takes the current index's write lock (an ordinary write transaction), so
 *      no store can commit to it from here on, in any process. Readers go on.
 *   2. It copies every table, in key order with MDB_APPEND (full pages, no free pages), into
 *      index.g<N+1>.lmdb, and syncs the new file and the directory.
 *   3. Holding the new index's write lock, it publishes N+1 in the `generation` file (one
 *      pwrite of the whole file, then fdatasync): from this instant every process's next
 *      operation sees the new number, and no store can commit to N+1 until the number is
 *      durable (a power loss must not take the published generation back under it).
 *   4. It ends the write transaction. A writer of any process that gets the old index's write
 *      lock from now on finds the generation changed before it writes, aborts, follows and
 *      retries in the new index: no acknowledged store can land in the old file.
 *   5. The old files are unlinked; processes that still map them keep reading a consistent
 *      snapshot until their next operation, which follows.
 *
 * A crash before 3 leaves an unpublished file (removed by the next compaction); a crash after
 * 3 leaves the old files (likewise). Generation 0 is the file name every earlier release used,
 * index.lmdb, so a directory that was never rewritten stays readable by them.
 */
#include "operations.h"
#include "os.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/file.h>
#include <sys/sysmacros.h>
#include <sys/stat.h>
#include <unistd.h>

#define COPY_CHUNK 20000 /* entries per transaction of the new index while it is built */

/* ---- the rewrite ----------------------------------------------------------------------- */

typedef struct rewrite_ctx {
    uint64_t new_gen;
    uint64_t entries;
    uint64_t bytes;
} rewrite_ctx;

/* Copies one table of `src` into `dst` in key order (MDB_APPEND: every page filled). */
static int copy_table(MDB_txn *src, MDB_dbi sdbi, MDB_env *dst, const char *name, uint64_t *copied, suc_error *err) {
    MDB_cursor *cur;
    int mrc = mdb_cursor_open(src, sdbi, &cur);
    if (mrc) return suc_fail_mdb(err, "mdb_cursor_open(rewrite)", mrc);
    MDB_txn *t = NULL;
    MDB_dbi ddbi;
    MDB_val k, v;
    uint64_t n = 0;
    int rc = SUC_OK;
    for (mrc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); mrc == 0; mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (!t) {
            int trc = mdb_txn_begin(dst, NULL, 0, &t);
            if (!trc) trc = mdb_dbi_open(t, name, MDB_CREATE, &ddbi);
            if (trc) {
                rc = suc_fail_mdb(err, "mdb_txn_begin(rewrite)", trc);
                break;
            }
        }
        int prc = mdb_put(t, ddbi, &k, &v, MDB_APPEND);
        if (prc) {
            rc = suc_fail_mdb(err, "mdb_put(rewrite)", prc);
            break;
        }
        if (++n % COPY_CHUNK == 0) {
            int crc = mdb_txn_commit(t);
            t = NULL;
            if (crc) {
                rc = suc_fail_mdb(err, "mdb_txn_commit(rewrite)", crc);
                break;
            }
        }
    }
    if (!rc && mrc && mrc != MDB_NOTFOUND) rc = suc_fail_mdb(err, "mdb_cursor_get(rewrite)", mrc);
    mdb_cursor_close(cur);
    if (!rc && !t) { /* an empty table still exists in the copy */
        int trc = mdb_txn_begin(dst, NULL, 0, &t);
        if (!trc) trc = mdb_dbi_open(t, name, MDB_CREATE, &ddbi);
        if (trc) rc = suc_fail_mdb(err, "mdb_dbi_open(rewrite)", trc);
    }
    if (t) {
        if (rc) mdb_txn_abort(t);
        else if ((mrc = mdb_txn_commit(t))) rc = suc_fail_mdb(err, "mdb_txn_commit(rewrite)", mrc);
    }
    *copied += n;
    return rc;
}

/* Generation 0 is index.lmdb, which releases before generations also open; one of them would
 * go on writing to it after it is retired. SUC_EBUSY while one may be attached, and when that
 * cannot be told: compaction then evicts without rewriting (docs/Capacity.md). */
static int refuse_if_earlier_release(suc_cache *c, suc_error *err) {
    if (suc_gen_current(c) != 0) return SUC_OK;
    int pid = suc_earlier_release_attached(c);
    if (pid > 0)
        return suc_fail(err, SUC_EBUSY, "rewrite(index)", 0, 0,
                        "process %d of an earlier release uses index.lmdb: the index is rewritten once it stops", pid);
    if (pid < 0)
        return suc_fail(err, SUC_EBUSY, "rewrite(index)", 0, 0,
                        "cannot tell from /proc/locks whether a process of an earlier release uses index.lmdb "
                        "(this process runs in a pid namespace of its own, /proc/locks is missing, or it does "
                        "not list this process's own lock): not rewritten; compact from the host's namespace");
    return SUC_OK;
}

/* Steps 1–4, inside the current index's write transaction `txn`. */
static int rewrite_apply(suc_cache *c, MDB_txn *txn, void *vctx, suc_error *err) {
    rewrite_ctx *ctx = vctx;
    ctx->new_gen = suc_gen_current(c) + 1;
    ctx->entries = 0;
    char data[SUC_INDEX_NAME_LEN];
    suc_index_file_name(ctx->new_gen, data);
    suc_gen_unlink(c, ctx->new_gen); /* an earlier compaction's unpublished attempt */
    int fd = suc_os_openat(c->rootfd, data, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0660);
    if (fd < 0) return suc_fail_errno(err, "openat(new index)", errno);
    (void)suc_os_fchmod(fd, 0660);
    suc_adopt_owner(c->rootfd, fd);
    suc_os_close(fd);
    if (suc_prepare_index_file(c->rootfd, data, 1, 1, err)) return err ? err->code : SUC_EIO;
    /* The lock file too, before LMDB makes it with this process's umask: processes of the
     * group's other users must be able to open it to follow. */
    char lock[SUC_INDEX_NAME_LEN + 5];
    snprintf(lock, sizeof lock, "%s-lock", data);
    if (suc_prepare_index_file(c->rootfd, lock, 1, 1, err) ||
        suc_allocate_lock_file(c->rootfd, lock, c->opts.max_readers, err)) {
        suc_gen_unlink(c, ctx->new_gen);
        return err ? err->code : SUC_EIO;
    }

    MDB_env *dst = NULL;
    int rc = SUC_OK, mrc;
    char path[4096];
    suc_index_path(c, data, path, sizeof path);
    if ((mrc = mdb_env_create(&dst)) || (mrc = mdb_env_set_maxdbs(dst, 8)) ||
        (mrc = mdb_env_set_maxreaders(dst, c->opts.max_readers)) ||
        (mrc = mdb_env_set_mapsize(dst, (size_t)c->map_size)) ||
        (mrc = mdb_env_open(dst, path, MDB_NOSUBDIR | MDB_NOTLS | MDB_NORDAHEAD | MDB_NOSYNC, 0660))) {
        rc = suc_fail_mdb(err, "mdb_env_open(new index)", mrc);
        goto out;
    }
    MDB_dbi src[SUC_INDEX_TABLES_MAX];
    const char *names[SUC_INDEX_TABLES_MAX];
    size_t count = suc_index_tables(c, names, src);
    for (size_t i = 0; i < count && !rc; i++) {
        uint64_t n = 0;
        rc = copy_table(txn, src[i], dst, names[i], &n, err);
        if (i == 0) ctx->entries = n; /* main comes first */
    }
    if (!rc && suc_os_fault(SUC_FAULT_REWRITE)) rc = suc_fail_errno(err, "rewrite(copied)", errno);
    if (!rc && (mrc = mdb_env_sync(dst, 1))) rc = suc_fail_mdb(err, "mdb_env_sync(new index)", mrc);
    if (!rc && suc_os_fsync(c->rootfd) < 0) rc = suc_fail_errno(err, "fsync(root)", errno);
    /* Again just before the switch: a process of an earlier release may have opened index.lmdb
     * while the copy was made. */
    if (!rc) rc = refuse_if_earlier_release(c, err);
    MDB_txn *hold = NULL;
    if (!rc && (mrc = mdb_txn_begin(dst, NULL, 0, &hold))) rc = suc_fail_mdb(err, "mdb_txn_begin(new index)", mrc);
    if (!rc) rc = suc_gen_publish(c, ctx->new_gen, err);
    if (hold) mdb_txn_abort(hold);
    mdb_env_close(dst);
    dst = NULL;
    /* Killed here: published, the old write lock released by the process's death. */
    if (!rc && suc_os_fault(SUC_FAULT_REWRITE)) rc = suc_fail_errno(err, "rewrite(published)", errno);
out:
    if (dst) mdb_env_close(dst);
    if (rc) {
        /* Only when the file was read and names another generation: a read that failed says
         * nothing, and removing a published generation would leave every process without one. */
        uint64_t now;
        if (suc_gen_read(c, &now) && now != ctx->new_gen) suc_gen_unlink(c, ctx->new_gen);
    }
    return rc;
}

int suc_index_rewrite(suc_cache *c, uint64_t *out_entries, suc_error *err) {
    int rc = suc_cache_check_fork(c, err);
    if (rc) return rc;
    /* Follow first, so the copy starts from the newest generation. */
    if ((rc = suc_cache_follow(c, err))) return rc;
    /* Generation 0 is index.lmdb, which releases before generations also open; one of them
     * would go on writing to it after it is retired. Wait until the last of them is gone. */
    if ((rc = refuse_if_earlier_release(c, err))) return rc;
    rewrite_ctx ctx = {0};
    uint64_t old_gen = suc_gen_current(c);
    rc = suc_write_txn_ex(c, rewrite_apply, NULL, &ctx, 1, err);
    if (rc) return rc;
    if (suc_os_fault(SUC_FAULT_REWRITE)) return suc_fail_errno(err, "rewrite(switched)", errno);
    if ((rc = suc_cache_follow(c, err))) return rc;
    if (suc_gen_current(c) != old_gen) suc_gen_unlink(c, old_gen);
    if (out_entries) *out_entries = ctx.entries;
    return SUC_OK;
}

int suc_remove_stale_generations(suc_cache *c) {
    /* Only under the compaction lock: no other compactor builds a generation meanwhile. Each
     * compaction removes what the one before left, so the last few generations are enough. */
    uint64_t current;
    if (!suc_gen_read(c, &current)) return SUC_OK; /* cannot tell which is current: remove nothing */
    uint64_t from = current > 64 ? current - 64 : 0;
    for (uint64_t g = from; g < current; g++) suc_gen_unlink(c, g);
    if (from > 0) suc_gen_unlink(c, 0);
    suc_gen_unlink(c, current + 1); /* an unpublished attempt */
    return SUC_OK;
}
