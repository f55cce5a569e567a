/*
 * bulk_remove.c — remove-since-date and remove-all: walks of a time order or of the main table
 * in write transactions of a bounded number of entries each.
 */
#include "operations.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Bulk removals run in transactions of at most this many entries, fewer when that holds the
 * write lock too long (pace.c), so concurrent writers wait briefly and the freelist stays small
 * (docs/Reliability.md §4.3 rule 4). */
#define BULK_BATCH 1000
/* A walk that checks stored times looks at most this many keys per entry a transaction may
 * remove (it skips the entries stored before the date). */
#define BULK_LOOK_PER_ENTRY 4

/* What a transaction walks. Remove-all: the main table. Remove-since, chosen again by every
 * transaction, since an upgrade can change the directory's format between two of them: the
 * stored-time order from the date (format 1); the use order from the date, checking each
 * record's stored time (format 2); the main table, checking every record (format 2 while its
 * upgrade has not finished, when the use order may not yet hold every entry at or after its
 * stored time). */
typedef enum bulk_walk { WALK_STORED_ORDER, WALK_USE_ORDER, WALK_MAIN_CHECKED, WALK_MAIN } bulk_walk;

typedef struct bulk_ctx {
    int since;        /* remove-since (else remove-all) */
    int64_t since_ms;
    bulk_walk walk;   /* this transaction's */
    /* A walk that skips entries goes on after the last key the previous committed transaction
     * looked at, when that transaction walked the same table. */
    bulk_walk after_walk;
    uint8_t after[SUC_TKEY_LEN], next_after[SUC_TKEY_LEN];
    int have_after;
    suc_op op;        /* collects removed count and dead ids of the current transaction */
    size_t seen;      /* keys looked at in this transaction */
    uint32_t batch;   /* entries this transaction removes at most (pace.c) */
} bulk_ctx;

static void bulk_reset(void *vctx) {
    bulk_ctx *ctx = vctx;
    ctx->op.removed = 0;
    ctx->op.dead_count = 0;
    ctx->seen = 0;
}

static bulk_walk choose_walk(suc_cache *c, MDB_txn *txn, const bulk_ctx *ctx) {
    if (!ctx->since) return WALK_MAIN;
    if (suc_time_order_kept(c, SUC_ORDER_STORED)) return WALK_STORED_ORDER;
    return suc_format_upgrade_unfinished(c, txn) ? WALK_MAIN_CHECKED : WALK_USE_ORDER;
}

static MDB_dbi walk_table(suc_cache *c, bulk_walk walk) {
    switch (walk) {
    case WALK_STORED_ORDER: return suc_time_order_dbi(c, SUC_ORDER_STORED);
    case WALK_USE_ORDER: return suc_time_order_dbi(c, SUC_ORDER_USE);
    default: return c->dbi_main;
    }
}

/* Whether a checked walk removes the entry whose ikey `key` names. A record that is gone (a
 * stray key of the use order: dropped), of another release, that does not decode (its stored
 * time is unknown; a lookup purges it) or stored before the date stays. */
typedef enum verdict { KEEP, REMOVE, STRAY } verdict;
static verdict judge(suc_cache *c, MDB_txn *txn, const uint8_t *ikey, int64_t since_ms) {
    suc_record r;
    int rc = suc_index_record_get(c, txn, ikey, &r, NULL);
    if (rc == SUC_ECORRUPT) return KEEP;
    if (rc) return STRAY;
    return r.stored_at_ms >= since_ms ? REMOVE : KEEP;
}

/* Positions `cur` where this transaction's walk starts: after the previous transaction's last
 * key when it walked the same table and skips entries, else at the date (a time order) or at the
 * first key. */
static int walk_start(bulk_ctx *ctx, MDB_cursor *cur, MDB_val *k, MDB_val *v) {
    int resume = ctx->have_after && ctx->after_walk == ctx->walk &&
                 (ctx->walk == WALK_USE_ORDER || ctx->walk == WALK_MAIN_CHECKED);
    size_t klen = ctx->walk == WALK_USE_ORDER || ctx->walk == WALK_STORED_ORDER ? SUC_TKEY_LEN : SUC_IKEY_LEN;
    if (resume) {
        k->mv_size = klen;
        k->mv_data = ctx->after;
        int mrc = mdb_cursor_get(cur, k, v, MDB_SET_RANGE);
        if (mrc == 0 && k->mv_size == klen && !memcmp(k->mv_data, ctx->after, klen))
            mrc = mdb_cursor_get(cur, k, v, MDB_NEXT);
        return mrc;
    }
    if (klen == SUC_IKEY_LEN) return mdb_cursor_get(cur, k, v, MDB_FIRST);
    static const uint8_t zero[SUC_IKEY_LEN];
    suc_tkey_make(ctx->since_ms, zero, ctx->next_after); /* scratch: the key to start from */
    k->mv_size = SUC_TKEY_LEN;
    k->mv_data = ctx->next_after;
    return mdb_cursor_get(cur, k, v, MDB_SET_RANGE);
}

static int bulk_apply(suc_cache *c, MDB_txn *txn, void *vctx, suc_error *err) {
    bulk_ctx *ctx = vctx;
    ctx->walk = choose_walk(c, txn, ctx);
    int checked = ctx->walk == WALK_USE_ORDER || ctx->walk == WALK_MAIN_CHECKED;
    /* Keys as found in the walked table: time-order keys (56 bytes) or ikeys (48). */
    size_t klen = ctx->walk == WALK_USE_ORDER || ctx->walk == WALK_STORED_ORDER ? SUC_TKEY_LEN : SUC_IKEY_LEN;
    size_t ikey_at = klen == SUC_TKEY_LEN ? 8 : 0;
    uint8_t *keys = malloc(BULK_BATCH * SUC_TKEY_LEN);
    /* only the use-order walk drops strays as it goes */
    uint8_t *strays = ctx->walk == WALK_USE_ORDER ? malloc(BULK_BATCH * SUC_TKEY_LEN) : NULL;
    if (!keys || (ctx->walk == WALK_USE_ORDER && !strays)) {
        free(keys);
        free(strays);
        return suc_fail(err, SUC_ENOMEM, "malloc(bulk)", ENOMEM, 0, "out of memory");
    }
    size_t n = 0, nstray = 0;
    int rc = SUC_OK;
    MDB_cursor *cur;
    int mrc = mdb_cursor_open(txn, walk_table(c, ctx->walk), &cur);
    if (mrc) {
        free(keys);
        free(strays);
        return suc_fail_mdb(err, "mdb_cursor_open", mrc);
    }
    MDB_val k, v;
    for (mrc = walk_start(ctx, cur, &k, &v);
         mrc == 0 && n < ctx->batch && nstray < ctx->batch && ctx->seen < BULK_LOOK_PER_ENTRY * (size_t)ctx->batch;
         mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != klen) continue;
        ctx->seen++;
        if (checked) {
            memcpy(ctx->next_after, k.mv_data, klen);
            verdict d = judge(c, txn, (const uint8_t *)k.mv_data + ikey_at, ctx->since_ms);
            if (d == KEEP) continue;
            if (d == STRAY) {
                if (ctx->walk == WALK_USE_ORDER) memcpy(strays + nstray++ * SUC_TKEY_LEN, k.mv_data, SUC_TKEY_LEN);
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
        rc = suc_index_delete(c, txn, key + ikey_at, &ctx->op, &d, err);
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

static int bulk_remove(suc_cache *c, int since, int64_t since_ms, uint64_t *out_removed, suc_error *err) {
    int rc = suc_cache_check_fork(c, err);
    if (rc) return rc;
    uint64_t total = 0;
    bulk_ctx ctx = {0};
    ctx.since = since;
    ctx.since_ms = since_ms;
    ctx.batch = suc_pace_first(BULK_BATCH);
    for (;;) {
        memset(&ctx.op, 0, sizeof ctx.op);
        ctx.seen = 0;
        rc = suc_write_txn_ex(c, bulk_apply, bulk_reset, &ctx, 1, err);
        if (rc == SUC_OK) {
            suc_body_unlink_ids(c, ctx.op.dead_ids, ctx.op.dead_count);
            total += ctx.op.removed;
            if (ctx.seen) { /* where the next transaction goes on, if it walks the same table */
                memcpy(ctx.after, ctx.next_after, SUC_TKEY_LEN);
                ctx.after_walk = ctx.walk;
                ctx.have_after = 1;
            }
        }
        suc_op_release(&ctx.op);
        if (rc || ctx.seen == 0) break;
        ctx.batch = suc_pace_next(ctx.batch, BULK_BATCH); /* a waiting store of any process goes first */
    }
    /* Everything removed walked the main table: the use-order keys its entries had moved from
     * are still there, which the next evictions would otherwise walk through in one commit. */
    if (rc == SUC_OK && !since) rc = suc_use_order_drain(c, err);
    if (out_removed) *out_removed = total;
    return rc;
}

int suc_remove_since(suc_cache *c, int64_t since_ms, uint64_t *out_removed, suc_error *err) {
    return bulk_remove(c, 1, since_ms, out_removed, err);
}

int suc_remove_all(suc_cache *c, uint64_t *out_removed, suc_error *err) {
    return bulk_remove(c, 0, 0, out_removed, err);
}
