/*
 * bulk_remove.c — remove-since-date and remove-all: walks of a time order or of the main table
 * in write transactions of a bounded number of entries each.
 */
#include "operations.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Bulk removals run in transactions of at most this many entries, so concurrent writers wait
 * briefly and the freelist stays small (docs/Reliability.md §4.3 rule 4). */
#define BULK_BATCH 1000
/* A walk of the use order looks at most this many keys a transaction (it skips the entries used
 * since the date but stored before it). */
#define BULK_LOOK (4 * BULK_BATCH)

/* Which walk: the stored-time order from `since` (format 1), the use order from `since` with each
 * record's stored time checked (format 2), or the main table from the start (remove-all). */
typedef enum bulk_walk { WALK_STORED_ORDER, WALK_USE_ORDER, WALK_MAIN } bulk_walk;

typedef struct bulk_ctx {
    bulk_walk walk;
    int64_t since_ms;
    /* the use-order walk goes on after this key (the last it looked at in a committed batch) */
    uint8_t after[SUC_TKEY_LEN], next_after[SUC_TKEY_LEN];
    int have_after;
    suc_op op;        /* collects removed count and dead ids of the current transaction */
    size_t seen;      /* keys looked at in this transaction */
} bulk_ctx;

static void bulk_reset(void *vctx) {
    bulk_ctx *ctx = vctx;
    ctx->op.removed = 0;
    ctx->op.dead_count = 0;
    ctx->seen = 0;
}

/* Whether the use order's key names an entry stored since the date. A key whose record is gone
 * is a stray (dropped); another release's record, one that does not decode, or one stored
 * before the date stays. */
typedef enum use_key_verdict { KEEP, REMOVE, STRAY } use_key_verdict;
static use_key_verdict judge_use_key(suc_cache *c, MDB_txn *txn, const uint8_t *tkey, int64_t since_ms) {
    MDB_val mk = {SUC_IKEY_LEN, (uint8_t *)tkey + 8}, mv;
    if (mdb_get(txn, c->dbi_main, &mk, &mv)) return STRAY;
    suc_record r;
    int drc = suc_record_decode(mv.mv_data, mv.mv_size, &r);
    if (drc == SUC_EVERSION) return KEEP;
    if (drc) return KEEP; /* its stored time is unknown; a lookup purges it */
    return r.stored_at_ms >= since_ms ? REMOVE : KEEP;
}

static int bulk_apply(suc_cache *c, MDB_txn *txn, void *vctx, suc_error *err) {
    bulk_ctx *ctx = vctx;
    /* Keys as found in the walked table: time-order keys (56 bytes) or ikeys (48). */
    size_t klen = ctx->walk == WALK_MAIN ? SUC_IKEY_LEN : SUC_TKEY_LEN;
    uint8_t *keys = malloc(BULK_BATCH * SUC_TKEY_LEN);
    uint8_t *strays = ctx->walk == WALK_USE_ORDER ? malloc(BULK_BATCH * SUC_TKEY_LEN) : NULL;
    if (!keys || (ctx->walk == WALK_USE_ORDER && !strays)) {
        free(keys);
        free(strays);
        return suc_fail(err, SUC_ENOMEM, "malloc(bulk)", ENOMEM, 0, "out of memory");
    }
    size_t n = 0, nstray = 0;
    int rc = SUC_OK;
    MDB_dbi dbi = ctx->walk == WALK_STORED_ORDER ? suc_time_order_dbi(c, SUC_ORDER_STORED)
                  : ctx->walk == WALK_USE_ORDER  ? suc_time_order_dbi(c, SUC_ORDER_USE)
                                                 : c->dbi_main;
    MDB_cursor *cur;
    int mrc = mdb_cursor_open(txn, dbi, &cur);
    if (mrc) {
        free(keys);
        free(strays);
        return suc_fail_mdb(err, "mdb_cursor_open", mrc);
    }
    uint8_t start[SUC_TKEY_LEN];
    MDB_val k, v;
    if (ctx->walk == WALK_MAIN) {
        mrc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
    } else {
        if (ctx->have_after) {
            memcpy(start, ctx->after, SUC_TKEY_LEN);
        } else {
            uint8_t zero[SUC_IKEY_LEN] = {0};
            suc_tkey_make(ctx->since_ms, zero, start);
        }
        k.mv_size = SUC_TKEY_LEN;
        k.mv_data = start;
        mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
        if (mrc == 0 && ctx->have_after && k.mv_size == SUC_TKEY_LEN && !memcmp(k.mv_data, ctx->after, SUC_TKEY_LEN))
            mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    }
    for (; mrc == 0 && n < BULK_BATCH && nstray < BULK_BATCH && ctx->seen < BULK_LOOK;
         mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != klen) continue;
        ctx->seen++;
        if (ctx->walk == WALK_USE_ORDER) {
            memcpy(ctx->next_after, k.mv_data, SUC_TKEY_LEN);
            use_key_verdict verdict = judge_use_key(c, txn, k.mv_data, ctx->since_ms);
            if (verdict == KEEP) continue;
            if (verdict == STRAY) {
                memcpy(strays + nstray++ * SUC_TKEY_LEN, k.mv_data, SUC_TKEY_LEN);
                continue;
            }
        }
        memcpy(keys + n * SUC_TKEY_LEN, k.mv_data, klen);
        n++;
    }
    mdb_cursor_close(cur);
    if (mrc && mrc != MDB_NOTFOUND) rc = suc_fail_mdb(err, "mdb_cursor_get", mrc);
    suc_counters d = {0};
    for (size_t i = 0; rc == SUC_OK && i < nstray; i++)
        rc = suc_time_order_drop_stray(c, txn, SUC_ORDER_USE, strays + i * SUC_TKEY_LEN, err);
    for (size_t i = 0; rc == SUC_OK && i < n; i++) {
        uint8_t *key = keys + i * SUC_TKEY_LEN;
        rc = suc_index_delete(c, txn, ctx->walk == WALK_MAIN ? key : key + 8, &ctx->op, &d, err);
        if (rc == MDB_NOTFOUND) {
            rc = SUC_OK;
            if (ctx->walk == WALK_STORED_ORDER) /* a time-order key whose record is gone: drop the stray */
                rc = suc_time_order_drop_stray(c, txn, SUC_ORDER_STORED, key, err);
        }
    }
    free(keys);
    free(strays);
    if (rc) return rc;
    return suc_meta_add_counters(c, txn, &d, err);
}

static int bulk_remove(suc_cache *c, bulk_walk walk, int64_t since_ms, uint64_t *out_removed, suc_error *err) {
    int rc = suc_cache_check_fork(c, err);
    if (rc) return rc;
    uint64_t total = 0;
    bulk_ctx ctx = {0};
    ctx.walk = walk;
    ctx.since_ms = since_ms;
    for (;;) {
        memset(&ctx.op, 0, sizeof ctx.op);
        ctx.seen = 0;
        rc = suc_write_txn_ex(c, bulk_apply, bulk_reset, &ctx, 1, err);
        if (rc == SUC_OK) {
            suc_body_unlink_ids(c, ctx.op.dead_ids, ctx.op.dead_count);
            total += ctx.op.removed;
            if (ctx.seen) { /* the next batch goes on after what this one looked at */
                memcpy(ctx.after, ctx.next_after, SUC_TKEY_LEN);
                ctx.have_after = walk == WALK_USE_ORDER;
            }
        }
        suc_op_release(&ctx.op);
        if (rc || ctx.seen == 0) break;
    }
    if (out_removed) *out_removed = total;
    return rc;
}

int suc_remove_since(suc_cache *c, int64_t since_ms, uint64_t *out_removed, suc_error *err) {
    return bulk_remove(c, suc_time_order_kept(c, SUC_ORDER_STORED) ? WALK_STORED_ORDER : WALK_USE_ORDER, since_ms,
                       out_removed, err);
}

int suc_remove_all(suc_cache *c, uint64_t *out_removed, suc_error *err) {
    return bulk_remove(c, WALK_MAIN, 0, out_removed, err);
}

