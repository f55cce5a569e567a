/*
 * bulk_remove.c — remove-since-date and remove-all: walks of the stored-time order or of the
 * main table in write transactions of a bounded number of entries each.
 */
#include "operations.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Bulk removals run in transactions of at most this many entries, so concurrent writers wait
 * briefly and the freelist stays small (docs/Reliability.md §4.3 rule 4). */
#define BULK_BATCH 1000

typedef struct bulk_ctx {
    int by_time;      /* walk by_time from `since`; else walk main from the start */
    int64_t since_ms;
    suc_op op;        /* collects removed count and dead ids of the current transaction */
    size_t seen;
} bulk_ctx;

static void bulk_reset(void *vctx) {
    bulk_ctx *ctx = vctx;
    ctx->op.removed = 0;
    ctx->op.dead_count = 0;
    ctx->seen = 0;
}

static int bulk_apply(suc_cache *c, MDB_txn *txn, void *vctx, suc_error *err) {
    bulk_ctx *ctx = vctx;
    /* Keys as found in the walked table: time-index keys (56 bytes) or ikeys (48). */
    size_t klen = ctx->by_time ? SUC_TKEY_LEN : SUC_IKEY_LEN;
    uint8_t *keys = malloc(BULK_BATCH * SUC_TKEY_LEN);
    if (!keys) return suc_fail(err, SUC_ENOMEM, "malloc(bulk)", ENOMEM, 0, "out of memory");
    size_t n = 0;
    int rc = SUC_OK;
    MDB_cursor *cur;
    int mrc = mdb_cursor_open(txn, ctx->by_time ? suc_time_order_dbi(c, SUC_ORDER_STORED) : c->dbi_main, &cur);
    if (mrc) {
        free(keys);
        return suc_fail_mdb(err, "mdb_cursor_open", mrc);
    }
    uint8_t start[SUC_TKEY_LEN];
    MDB_val k, v;
    if (ctx->by_time) {
        uint8_t zero[SUC_IKEY_LEN] = {0};
        suc_tkey_make(ctx->since_ms, zero, start);
        k.mv_size = SUC_TKEY_LEN;
        k.mv_data = start;
        mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    } else {
        mrc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
    }
    for (; mrc == 0 && n < BULK_BATCH; mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != klen) continue;
        memcpy(keys + n * SUC_TKEY_LEN, k.mv_data, klen);
        n++;
    }
    mdb_cursor_close(cur);
    if (mrc && mrc != MDB_NOTFOUND) rc = suc_fail_mdb(err, "mdb_cursor_get", mrc);
    ctx->seen = n;
    suc_counters d = {0};
    for (size_t i = 0; rc == SUC_OK && i < n; i++) {
        uint8_t *key = keys + i * SUC_TKEY_LEN;
        rc = suc_index_delete(c, txn, ctx->by_time ? key + 8 : key, &ctx->op, &d, err);
        if (rc == MDB_NOTFOUND) {
            rc = SUC_OK;
            if (ctx->by_time) /* a time-order key whose record is gone: drop the stray */
                rc = suc_time_order_drop_stray(c, txn, SUC_ORDER_STORED, key, err);
        }
    }
    free(keys);
    if (rc) return rc;
    return suc_meta_add_counters(c, txn, &d, err);
}

static int bulk_remove(suc_cache *c, int by_time, int64_t since_ms, uint64_t *out_removed, suc_error *err) {
    int rc = suc_cache_check_fork(c, err);
    if (rc) return rc;
    uint64_t total = 0;
    for (;;) {
        bulk_ctx ctx = {0};
        ctx.by_time = by_time;
        ctx.since_ms = since_ms;
        rc = suc_write_txn_ex(c, bulk_apply, bulk_reset, &ctx, 1, err);
        if (rc == SUC_OK) {
            suc_body_unlink_ids(c, ctx.op.dead_ids, ctx.op.dead_count);
            total += ctx.op.removed;
        }
        suc_op_release(&ctx.op);
        if (rc || ctx.seen == 0) break;
    }
    if (out_removed) *out_removed = total;
    return rc;
}

int suc_remove_since(suc_cache *c, int64_t since_ms, uint64_t *out_removed, suc_error *err) {
    return bulk_remove(c, 1, since_ms, out_removed, err);
}

int suc_remove_all(suc_cache *c, uint64_t *out_removed, suc_error *err) {
    return bulk_remove(c, 0, 0, out_removed, err);
}

