/*
 * format_upgrade.c — turning a directory of format 1 (two time orders) into format 2 (the use
 * order alone, time_orders.c) while services keep using it.
 *
 * 1. One transaction writes format 2 and the SUC_META_FORMAT_UPGRADING marker. Every write
 *    transaction of this release reads the format (txn.c), so from this commit on no process
 *    keeps the stored-time order; while the marker is there, remove-since walks the main table
 *    (bulk_remove.c), which needs no order.
 * 2. The main table is walked in read snapshots, and an entry whose last use is before its stored
 *    time (a stored time ahead of the clock) moves in the use order to its stored time, in a
 *    write transaction per batch that has one: format 2's place for it, which remove-since
 *    relies on.
 * 3. The stored-time order's keys are dropped in batches.
 * 4. One transaction removes the marker: remove-since walks the use order from then on.
 * Each step is idempotent, so an upgrade stopped anywhere (a crash, a kill) is finished by the
 * next run; a directory already of format 2 without the marker is left as it is.
 *
 * Who must be gone first: a process that opened the directory as format 1 and does not read the
 * format again would go on walking the stored-time order for remove-since. A release before
 * index generations is found from /proc/locks (at generation 0, the only one it can open) and
 * the upgrade refuses while one is attached; the releases between generations and format 2 hold
 * the same locks as this one and cannot be told apart, which docs/Formats.md says.
 */
#include "operations.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define UPGRADE_BATCH 1000
/* Between two write transactions: a store waiting for the write lock takes it now (released and
 * taken straight back, a mutex mostly goes to the thread that released it; maintenance.c). */
#define YIELD_US 500

static int begin_apply(suc_cache *c, MDB_txn *txn, void *vctx, suc_error *err) {
    (void)vctx;
    int mrc = suc_meta_put(c, txn, SUC_META_FORMAT_UPGRADING, 1);
    if (!mrc) mrc = suc_meta_put(c, txn, "format", 2);
    return mrc ? suc_fail_mdb(err, "mdb_put(meta)", mrc) : SUC_OK;
}

/* One batch: keys collected under a cursor, then changed with the cursor closed, each through
 * suc_txn_put / suc_txn_del so that a rewrite copying the index meanwhile carries them. */
typedef struct batch_ctx {
    /* the walk of main goes on after `after` (the last key of the last batch; `next_after` is this
     * batch's until it is done) */
    uint8_t after[SUC_IKEY_LEN], next_after[SUC_IKEY_LEN];
    int have_after;
    size_t seen, found, changed;
    uint8_t keys[UPGRADE_BATCH][SUC_TKEY_LEN];
} batch_ctx;

static void batch_reset(void *vctx) {
    batch_ctx *ctx = vctx;
    ctx->changed = 0;
}

/* In a read snapshot, without the write lock: the next UPGRADE_BATCH records of main, keeping the
 * index keys of those whose last use is before their stored time (a stored time ahead of the
 * clock), the entries whose place in the use order format 2 moves. */
static int find_stored_ahead(suc_cache *c, batch_ctx *ctx, suc_error *err) {
    MDB_txn *txn;
    int rc = suc_rtxn_begin(c, &txn, err);
    if (rc) return rc;
    ctx->seen = ctx->found = 0;
    MDB_cursor *cur;
    int mrc = mdb_cursor_open(txn, c->dbi_main, &cur);
    if (!mrc) {
        MDB_val k = {SUC_IKEY_LEN, ctx->after}, v;
        mrc = mdb_cursor_get(cur, &k, &v, ctx->have_after ? MDB_SET_RANGE : MDB_FIRST);
        if (mrc == 0 && ctx->have_after && k.mv_size == SUC_IKEY_LEN && !memcmp(k.mv_data, ctx->after, SUC_IKEY_LEN))
            mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
        for (; mrc == 0 && ctx->seen < UPGRADE_BATCH; mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
            if (k.mv_size != SUC_IKEY_LEN) continue;
            ctx->seen++;
            memcpy(ctx->next_after, k.mv_data, SUC_IKEY_LEN);
            suc_record r;
            if (suc_record_decode(v.mv_data, v.mv_size, &r) || r.last_used_ms >= r.stored_at_ms) continue;
            memcpy(ctx->keys[ctx->found++], k.mv_data, SUC_IKEY_LEN);
        }
        mdb_cursor_close(cur);
    }
    suc_rtxn_end(c, txn);
    return mrc && mrc != MDB_NOTFOUND ? suc_fail_mdb(err, "mdb_cursor_get(main)", mrc) : SUC_OK;
}

/* Moves each found entry's use-order key from its last use (format 1's place) to its stored time
 * (format 2's), as the record is now: it may have been stored again or used since the read. */
static int rekey_apply(suc_cache *c, MDB_txn *txn, void *vctx, suc_error *err) {
    batch_ctx *ctx = vctx;
    for (size_t i = 0; i < ctx->found; i++) {
        suc_record r;
        if (suc_index_record_get(c, txn, ctx->keys[i], &r, NULL) || r.last_used_ms >= r.stored_at_ms) continue;
        int rc = suc_use_order_rekey(c, txn, ctx->keys[i], r.last_used_ms, r.stored_at_ms, err);
        if (rc) return rc;
        ctx->changed++;
    }
    return SUC_OK;
}

/* Drops the stored-time order's first UPGRADE_BATCH keys: format 2 reads none of them. */
static int drop_apply(suc_cache *c, MDB_txn *txn, void *vctx, suc_error *err) {
    batch_ctx *ctx = vctx;
    MDB_dbi by_time = suc_time_order_dbi(c, SUC_ORDER_STORED);
    MDB_cursor *cur;
    int mrc = mdb_cursor_open(txn, by_time, &cur);
    if (mrc) return suc_fail_mdb(err, "mdb_cursor_open(by_time)", mrc);
    MDB_val k, v;
    size_t n = 0;
    for (mrc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); mrc == 0 && n < UPGRADE_BATCH;
         mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != SUC_TKEY_LEN) continue; /* not one of ours: left alone */
        memcpy(ctx->keys[n++], k.mv_data, SUC_TKEY_LEN);
    }
    mdb_cursor_close(cur);
    if (mrc && mrc != MDB_NOTFOUND) return suc_fail_mdb(err, "mdb_cursor_get(by_time)", mrc);
    ctx->seen = n;
    for (size_t i = 0; i < n; i++) {
        MDB_val key = {SUC_TKEY_LEN, ctx->keys[i]};
        int drc = suc_txn_del(c, txn, by_time, &key);
        if (drc && drc != MDB_NOTFOUND) return suc_fail_mdb(err, "mdb_del(by_time)", drc);
        ctx->changed++;
    }
    return SUC_OK;
}

static int finish_apply(suc_cache *c, MDB_txn *txn, void *vctx, suc_error *err) {
    (void)vctx;
    MDB_val k = {strlen(SUC_META_FORMAT_UPGRADING), (void *)SUC_META_FORMAT_UPGRADING};
    int mrc = suc_txn_del(c, txn, c->dbi_meta, &k);
    return mrc && mrc != MDB_NOTFOUND ? suc_fail_mdb(err, "mdb_del(meta)", mrc) : SUC_OK;
}

/* The directory's format and whether an upgrade of it has not finished, in a read snapshot. */
static int read_state(suc_cache *c, uint64_t *format, int *upgrading, suc_error *err) {
    MDB_txn *txn;
    int rc = suc_rtxn_begin(c, &txn, err);
    if (rc) return rc;
    *format = 0;
    (void)suc_meta_get(c, txn, "format", format);
    *upgrading = suc_format_upgrade_unfinished(c, txn);
    suc_rtxn_end(c, txn);
    return SUC_OK;
}

int suc_directory_upgrade(suc_cache *c, suc_upgrade_report *out, suc_error *err) {
    int rc = suc_cache_check_fork(c, err);
    if (rc) return rc;
    memset(out, 0, sizeof *out);
    uint64_t format;
    int upgrading;
    if ((rc = read_state(c, &format, &upgrading, err))) return rc;
    out->format_before = (uint32_t)format;
    if (format == 1) {
        int pid;
        if ((rc = suc_refuse_while_earlier_release(c, "upgrade", "the directory is upgraded",
                                                   "not upgraded; upgrade from the host's namespace", &pid, err)))
            return rc;
        if ((rc = suc_write_txn_ex(c, begin_apply, NULL, NULL, 0, err))) return rc;
        atomic_store_explicit(&c->directory_format, 2, memory_order_relaxed);
    } else if (!upgrading) {
        out->format_after = (uint32_t)format;
        return SUC_OK; /* format 2 already (or refused at open) */
    }
    batch_ctx *b = calloc(1, sizeof *b);
    if (!b) return suc_fail(err, SUC_ENOMEM, "calloc(upgrade)", ENOMEM, 0, "out of memory");
    do {
        if ((rc = find_stored_ahead(c, b, err))) break;
        if (b->found) {
            batch_reset(b);
            if ((rc = suc_write_txn_ex(c, rekey_apply, batch_reset, b, 0, err))) break;
            out->rekeyed_entries += b->changed;
            usleep(YIELD_US);
        }
        memcpy(b->after, b->next_after, SUC_IKEY_LEN);
        b->have_after = 1;
    } while (b->seen == UPGRADE_BATCH);
    while (!rc) {
        batch_reset(b);
        if ((rc = suc_write_txn_ex(c, drop_apply, batch_reset, b, 1, err))) break;
        out->dropped_keys += b->changed;
        if (b->seen < UPGRADE_BATCH) break;
        usleep(YIELD_US);
    }
    free(b);
    if (rc) return rc;
    if ((rc = suc_write_txn_ex(c, finish_apply, NULL, NULL, 1, err))) return rc;
    out->format_after = 2;
    return SUC_OK;
}
