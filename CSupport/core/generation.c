/*
 * generation.c — index generations: how the index file shrinks while every process keeps
 * using the directory (docs/Capacity.md, "Index generations").
 *
 * LMDB never returns pages to the file system: after compaction evicts entries, index.lmdb
 * keeps its size. So the index is rewritten compactly into a new file, the next generation,
 * and every process switches to it:
 *
 *   1. The compactor turns the journal on (journal.c, one small write transaction): from the
 *      next commit on, every write transaction of every process also notes the keys it changed.
 *      Then it copies every table, in key order with MDB_APPEND (full pages, no free pages),
 *      into index.g<N+1>.lmdb, from read snapshots (one per 20,000 keys), and replays the
 *      journal into the copy (each noted key's value as it is then, or its absence) until few
 *      rows are left. Stores and lookups go on all the while.
 *   2. It takes the current index's write lock (an ordinary write transaction), so no store
 *      can commit to it from here on, in any process; replays the last rows and syncs the new
 *      file and the directory. This is the only pause stores see: milliseconds.
 *   3. Holding the new index's write lock, it publishes N+1 in the `generation` file (one
 *      pwrite of the whole file, then fdatasync): from this instant every process's next
 *      operation sees the new number, and no store can commit to N+1 until the number is
 *      durable (a power loss must not take the published generation back under it).
 *   4. It ends the write transaction. A writer of any process that gets the old index's write
 *      lock from now on finds the generation changed before it writes, aborts, follows and
 *      retries in the new index: no acknowledged store can land in the old file.
 *   5. The old files are unlinked; processes that still map them keep reading a consistent
 *      snapshot until their next operation, which follows (and closes the old index on a thread
 *      of its own: txn.c, "closing a retired generation").
 *
 * When the journal fills up before the copy is done (its row limit: twice the entries plus
 * 100,000), the copy is made again under the write lock, as before the journal existed.
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

#define COPY_CHUNK 20000      /* entries per transaction of the new index while it is built */
#define COPY_CHUNK_BYTES (4u << 20) /* or bytes: each chunk is written back before the next */
#define CATCH_UP_ROUNDS 32    /* replays of the journal without the write lock, at most */
#define CATCH_UP_LEFT 2000    /* rows few enough to replay under the write lock */
#define JOURNAL_ROWS_MIN 100000

/* ---- the rewrite ----------------------------------------------------------------------- */

typedef struct rewrite_ctx {
    uint64_t old_gen, new_gen;
    uint64_t entries;
    MDB_env *dst;
    MDB_dbi dst_dbi[SUC_JOURNAL_TABLES];
    uint64_t token, next_row; /* the journal this rewrite started, and its next row to replay */
    int online;               /* copied from snapshots while the journal ran (else under the lock) */
    int journal_lost;         /* the journal filled up during the copy: copy under the lock */
    int deferral, pid;        /* refused at the switch: SUC_REWRITE_DEFERRED_*, and whose */
} rewrite_ctx;

/* Copies one table into `dst` in key order (MDB_APPEND: every page filled). From `src` when
 * given (the write transaction: the copy under the lock); else from a fresh read snapshot per
 * chunk (20,000 keys or 4 MiB), so no snapshot pins the old index's pages for the whole copy: a key changed between
 * two chunks is in the journal, and the replay puts its value as it is then. The journal's own
 * rows are not copied. */
static int copy_table(suc_cache *c, MDB_txn *src, unsigned id, MDB_env *dst, const char *name, uint64_t old_gen,
                      uint64_t *copied, suc_error *err) {
    uint8_t last[512];
    size_t last_len = 0;
    int started = 0, rc = SUC_OK, mrc = 0;
    MDB_dbi ddbi;
    for (;;) {
        MDB_txn *from = src;
        if (!src) {
            if ((rc = suc_rtxn_begin(c, &from, err))) return rc;
            if (suc_gen_current(c) != old_gen) {
                suc_rtxn_end(c, from);
                return suc_fail(err, SUC_EBUSY, "rewrite(index)", 0, 0, "the index generation changed during the copy");
            }
        }
        MDB_txn *t = NULL;
        MDB_cursor *cur = NULL;
        if ((mrc = mdb_cursor_open(from, suc_journal_table(c, id), &cur)) || (mrc = mdb_txn_begin(dst, NULL, 0, &t)) ||
            (mrc = mdb_dbi_open(t, name, MDB_CREATE, &ddbi))) {
            rc = suc_fail_mdb(err, "rewrite(begin)", mrc);
        }
        MDB_val k = {last_len, last}, v;
        if (!rc) {
            mrc = mdb_cursor_get(cur, &k, &v, started ? MDB_SET_RANGE : MDB_FIRST);
            if (started && mrc == 0 && k.mv_size == last_len && !memcmp(k.mv_data, last, last_len))
                mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
        }
        uint64_t n = 0, bytes = 0;
        int full = 0;
        for (; !rc && mrc == 0 && !full; mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
            if (id == 3 && suc_journal_key(&k)) continue;
            int prc = mdb_put(t, ddbi, &k, &v, MDB_APPEND);
            if (prc) rc = suc_fail_mdb(err, "mdb_put(rewrite)", prc);
            n++;
            bytes += k.mv_size + v.mv_size;
            full = n == COPY_CHUNK || (!src && bytes >= COPY_CHUNK_BYTES);
            if (k.mv_size <= sizeof last) memcpy(last, k.mv_data, last_len = k.mv_size);
        }
        started = 1;
        if (!rc && mrc && mrc != MDB_NOTFOUND) rc = suc_fail_mdb(err, "mdb_cursor_get(rewrite)", mrc);
        if (cur) mdb_cursor_close(cur);
        if (!src) suc_rtxn_end(c, from);
        if (t) {
            if (rc) mdb_txn_abort(t);
            else if ((mrc = mdb_txn_commit(t))) rc = suc_fail_mdb(err, "mdb_txn_commit(rewrite)", mrc);
        }
        /* Written back a chunk at a time: one flush of the whole copy at the end would queue
         * hundreds of megabytes ahead of every store's fdatasync, on the same disk. */
        if (!rc && !src && (mrc = mdb_env_sync(dst, 1))) rc = suc_fail_mdb(err, "mdb_env_sync(new index)", mrc);
        *copied += n;
        if (rc || !full) return rc;
    }
}

/* Generation 0 is index.lmdb, which releases before generations also open; one of them would
 * go on writing to it after it is retired. SUC_EBUSY while one may be attached, and when that
 * cannot be told: compaction then evicts without rewriting (docs/Capacity.md). */
static int refuse_if_earlier_release(suc_cache *c, int *deferral, int *out_pid, suc_error *err) {
    int pid = 0;
    int rc = suc_refuse_while_earlier_release(c, "rewrite(index)", "the index is rewritten",
                                              "not rewritten; compact from the host's namespace", &pid, err);
    if (pid != 0) *deferral = pid > 0 ? SUC_REWRITE_DEFERRED_EARLIER_RELEASE : SUC_REWRITE_DEFERRED_CANNOT_TELL;
    if (pid > 0) *out_pid = pid;
    return rc;
}

/* Makes the next generation's files and opens them (not yet published). */
static int create_next(suc_cache *c, rewrite_ctx *ctx, suc_error *err) {
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
        suc_allocate_lock_file(c->rootfd, lock, c->opts.max_readers, err))
        return err ? err->code : SUC_EIO;
    char path[4096];
    suc_index_path(c, data, path, sizeof path);
    int mrc;
    if ((mrc = mdb_env_create(&ctx->dst))) return suc_fail_mdb(err, "mdb_env_create(new index)", mrc);
    if ((mrc = mdb_env_set_maxdbs(ctx->dst, 8)) || (mrc = mdb_env_set_maxreaders(ctx->dst, c->opts.max_readers)) ||
        (mrc = mdb_env_set_mapsize(ctx->dst, (size_t)c->map_size)) ||
        (mrc = mdb_env_open(ctx->dst, path, MDB_NOSUBDIR | MDB_NOTLS | MDB_NORDAHEAD | MDB_NOSYNC, 0660)))
        return suc_fail_mdb(err, "mdb_env_open(new index)", mrc);
    return SUC_OK;
}

/* Whether the tables the journal knows are every table the index has: one it did not know
 * would be left out of the copy. */
static int journal_knows_every_table(const suc_cache *c) {
    const char *names[SUC_INDEX_TABLES_MAX];
    MDB_dbi dbis[SUC_INDEX_TABLES_MAX];
    size_t count = suc_index_tables(c, names, dbis);
    if (count != SUC_JOURNAL_TABLES) return 0;
    for (size_t i = 0; i < count; i++) {
        int found = 0;
        for (unsigned id = 0; id < SUC_JOURNAL_TABLES && !found; id++)
            found = !strcmp(names[i], suc_journal_table_name(id)) && dbis[i] == suc_journal_table(c, id);
        if (!found) return 0;
    }
    return 1;
}

/* Every table, main first; from `src`, or from read snapshots when NULL. */
static int copy_tables(suc_cache *c, MDB_txn *src, rewrite_ctx *ctx, suc_error *err) {
    ctx->entries = 0;
    if (!journal_knows_every_table(c))
        return suc_fail(err, SUC_EINDEX, "rewrite(index)", 0, 0,
                        "the index has a table the rewrite journal does not know (journal.c): not rewritten");
    int rc = SUC_OK;
    for (unsigned id = 0; id < SUC_JOURNAL_TABLES && !rc; id++) {
        uint64_t n = 0;
        rc = copy_table(c, src, id, ctx->dst, suc_journal_table_name(id), ctx->old_gen, &n, err);
        if (id == 0) ctx->entries = n;
    }
    MDB_txn *t = NULL;
    int mrc = rc ? 0 : mdb_txn_begin(ctx->dst, NULL, MDB_RDONLY, &t);
    for (unsigned id = 0; id < SUC_JOURNAL_TABLES && !rc && !mrc; id++)
        mrc = mdb_dbi_open(t, suc_journal_table_name(id), 0, &ctx->dst_dbi[id]);
    if (t) mdb_txn_commit(t); /* keeps the handles for the replays */
    return rc ? rc : mrc ? suc_fail_mdb(err, "mdb_dbi_open(new index)", mrc) : SUC_OK;
}

/* ---- the replay of the journal --------------------------------------------------------- */

typedef struct replay_ctx {
    suc_cache *c;
    MDB_txn *src, *dst;
    const MDB_dbi *dst_dbi;
} replay_ctx;

/* One changed key: its value as `src` sees it now, or its absence, into the new index. */
static int replay_row(void *vctx, unsigned table, const MDB_val *key) {
    replay_ctx *r = vctx;
    MDB_val k = *key, v;
    int mrc = mdb_get(r->src, suc_journal_table(r->c, table), &k, &v);
    if (mrc == 0) return mdb_put(r->dst, r->dst_dbi[table], &k, &v, 0);
    if (mrc != MDB_NOTFOUND) return mrc;
    mrc = mdb_del(r->dst, r->dst_dbi[table], &k, NULL);
    return mrc == MDB_NOTFOUND ? 0 : mrc;
}

/* Replays the journal's rows from ctx->next_row as `src` sees them, in one transaction of the
 * new index. *rows: how many. When the journal stopped (it filled up), ctx->journal_lost. */
static int replay(suc_cache *c, MDB_txn *src, rewrite_ctx *ctx, uint64_t *rows, suc_error *err) {
    replay_ctx r = {c, src, NULL, ctx->dst_dbi};
    int mrc = mdb_txn_begin(ctx->dst, NULL, 0, &r.dst);
    if (mrc) return suc_fail_mdb(err, "mdb_txn_begin(replay)", mrc);
    uint64_t next = ctx->next_row;
    mrc = suc_journal_walk(c, src, ctx->token, ctx->next_row, replay_row, &r, &next, rows);
    if (mrc) {
        mdb_txn_abort(r.dst);
        if (mrc == MDB_NOTFOUND) {
            ctx->journal_lost = 1;
            return suc_fail(err, SUC_EBUSY, "rewrite(journal)", 0, 0, "the journal filled up during the copy");
        }
        return suc_fail_mdb(err, "rewrite(replay)", mrc);
    }
    if ((mrc = mdb_txn_commit(r.dst))) return suc_fail_mdb(err, "mdb_txn_commit(replay)", mrc);
    ctx->next_row = next;
    return SUC_OK;
}

/* Brings the copy close to the index without the lock: replays in snapshots until few rows are
 * left, and syncs the new file, so what the lock has to cover is small. */
static int catch_up(suc_cache *c, rewrite_ctx *ctx, suc_error *err) {
    for (int round = 0; round < CATCH_UP_ROUNDS; round++) {
        MDB_txn *snap;
        int rc = suc_rtxn_begin(c, &snap, err);
        if (rc) return rc;
        uint64_t rows = 0;
        if (suc_gen_current(c) != ctx->old_gen)
            rc = suc_fail(err, SUC_EBUSY, "rewrite(index)", 0, 0, "the index generation changed during the copy");
        else
            rc = replay(c, snap, ctx, &rows, err);
        suc_rtxn_end(c, snap);
        if (rc) return rc;
        if (rows < CATCH_UP_LEFT) break;
    }
    int mrc = mdb_env_sync(ctx->dst, 1);
    if (mrc) return suc_fail_mdb(err, "mdb_env_sync(new index)", mrc);
    /* The new files' names, durable before the lock: the switch then syncs only what it replays. */
    return suc_os_fsync(c->rootfd) < 0 ? suc_fail_errno(err, "fsync(root)", errno) : SUC_OK;
}


/* ---- the switch ---------------------------------------------------------------------- */

/* Steps 2–4 inside the current index's write transaction `txn`: the copy (the rest of the
 * journal when the copy was made online, else every table), then the publish. */
static int switch_apply(suc_cache *c, MDB_txn *txn, void *vctx, suc_error *err) {
    rewrite_ctx *ctx = vctx;
    if (suc_gen_current(c) != ctx->old_gen)
        return suc_fail(err, SUC_EBUSY, "rewrite(index)", 0, 0, "the index generation changed during the copy");
    int rc;
    if (ctx->online) {
        uint64_t rows;
        rc = replay(c, txn, ctx, &rows, err);
    } else {
        rc = create_next(c, ctx, err);
        if (!rc) rc = copy_tables(c, txn, ctx, err);
    }
    int mrc;
    if (!rc && suc_os_fault(SUC_FAULT_REWRITE)) rc = suc_fail_errno(err, "rewrite(copied)", errno);
    if (!rc && (mrc = mdb_env_sync(ctx->dst, 1))) rc = suc_fail_mdb(err, "mdb_env_sync(new index)", mrc);
    if (!rc && !ctx->online && suc_os_fsync(c->rootfd) < 0) rc = suc_fail_errno(err, "fsync(root)", errno);
    /* Again just before the switch: a process of an earlier release may have opened index.lmdb
     * while the copy was made. */
    if (!rc) rc = refuse_if_earlier_release(c, &ctx->deferral, &ctx->pid, err);
    MDB_txn *hold = NULL;
    if (!rc && (mrc = mdb_txn_begin(ctx->dst, NULL, 0, &hold))) rc = suc_fail_mdb(err, "mdb_txn_begin(new index)", mrc);
    if (!rc) rc = suc_gen_publish(c, ctx->new_gen, err);
    if (hold) mdb_txn_abort(hold);
    if (ctx->dst) mdb_env_close(ctx->dst);
    ctx->dst = NULL;
    /* Killed here: published, the old write lock released by the process's death. */
    if (!rc && suc_os_fault(SUC_FAULT_REWRITE)) rc = suc_fail_errno(err, "rewrite(published)", errno);
    return rc;
}

/* Step 1 without the lock: the journal on, the copy from snapshots, the catch-up. */
static int copy_online(suc_cache *c, rewrite_ctx *ctx, suc_error *err) {
    uint64_t entries = 0;
    MDB_txn *r;
    int rc = suc_rtxn_begin(c, &r, err);
    if (rc) return rc;
    (void)suc_meta_get(c, r, "entries", &entries);
    suc_rtxn_end(c, r);
    rc = suc_journal_begin_rewrite(c, JOURNAL_ROWS_MIN + 2 * entries, &ctx->token, &ctx->next_row, err);
    if (!rc) rc = create_next(c, ctx, err);
    if (!rc) rc = copy_tables(c, NULL, ctx, err);
    if (!rc && suc_os_fault(SUC_FAULT_REWRITE)) rc = suc_fail_errno(err, "rewrite(snapshot copied)", errno);
    if (!rc) rc = catch_up(c, ctx, err);
    if (!rc && suc_os_fault(SUC_FAULT_REWRITE)) rc = suc_fail_errno(err, "rewrite(caught up)", errno);
    return rc;
}

/* Removes an attempt that was not published (only when the file was read and names another
 * generation: a read that failed says nothing, and removing a published generation would leave
 * every process without one). */
static void discard_attempt(suc_cache *c, rewrite_ctx *ctx) {
    if (ctx->dst) mdb_env_close(ctx->dst);
    ctx->dst = NULL;
    uint64_t now;
    if (suc_gen_read(c, &now) && now != ctx->new_gen) suc_gen_unlink(c, ctx->new_gen);
}

static int index_rewrite(suc_cache *c, uint64_t *out_entries, uint64_t *out_lock_ms, int *deferral, int *pid,
                         suc_error *err) {
    int rc;
    /* Follow first, so the copy starts from the newest generation. */
    if ((rc = suc_cache_follow(c, err))) return rc;
    /* Generation 0 is index.lmdb, which releases before generations also open; one of them
     * would go on writing to it after it is retired. Wait until the last of them is gone. */
    if ((rc = refuse_if_earlier_release(c, deferral, pid, err))) return rc;
    rewrite_ctx ctx = {0};
    ctx.old_gen = suc_gen_current(c);
    ctx.new_gen = ctx.old_gen + 1;
    ctx.online = 1;
    rc = copy_online(c, &ctx, err);
    if (rc == SUC_OK) {
        rc = suc_write_txn_ex(c, switch_apply, NULL, &ctx, 1, err);
    }
    if (rc && ctx.journal_lost) { /* the journal filled up: copy under the lock, as before it existed */
        discard_attempt(c, &ctx);
        ctx.online = 0;
        rc = suc_write_txn_ex(c, switch_apply, NULL, &ctx, 1, err);
    }
    if (out_lock_ms) *out_lock_ms = suc_last_write_lock_ms();
    if (rc) {
        /* Refused at the switch by an earlier release (or by not being able to tell); else a
         * refusal of the copy means another generation was published meanwhile. */
        if (ctx.deferral) {
            *deferral = ctx.deferral;
            *pid = ctx.pid;
        } else if (rc == SUC_EBUSY && suc_gen_current(c) != ctx.old_gen) {
            *deferral = SUC_REWRITE_DEFERRED_GENERATION_CHANGED;
        }
        discard_attempt(c, &ctx);
        suc_journal_end_rewrite(c, ctx.token);
        return rc;
    }
    if (suc_os_fault(SUC_FAULT_REWRITE)) return suc_fail_errno(err, "rewrite(switched)", errno);
    if ((rc = suc_cache_follow(c, err))) return rc;
    if (suc_gen_current(c) != ctx.old_gen) suc_gen_unlink(c, ctx.old_gen);
    if (out_entries) *out_entries = ctx.entries;
    return SUC_OK;
}

int suc_index_rewrite(suc_cache *c, uint64_t *out_entries, uint64_t *out_lock_ms, int *out_deferral, int *out_pid,
                      suc_error *err) {
    int rc = suc_cache_check_fork(c, err);
    if (rc) return rc;
    int deferral = 0, pid = 0;
    rc = index_rewrite(c, out_entries, out_lock_ms, &deferral, &pid, err);
    /* A generation's lock file held past the wait (the follow's, or the new one's). */
    if (rc == SUC_EBUSY && !deferral) deferral = SUC_REWRITE_DEFERRED_LOCK_HELD;
    if (out_deferral) *out_deferral = rc == SUC_EBUSY ? deferral : 0;
    if (out_pid) *out_pid = rc == SUC_EBUSY ? pid : 0;
    /* The old generation this handle followed away from is closed before the rewrite returns
     * (a follow closes it on a thread, to spare a store the wait): whoever asked for the rewrite
     * finds its descriptors and mapping gone, and its blocks freed when this was its last user.
     * A compactor has no store latency to protect. */
    suc_cache_await_retired(c);
    return rc;
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
