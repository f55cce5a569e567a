/*
 * quota.c — setting, removing and enforcing partition byte quotas (the counters and the
 * per-partition last-use order they rest on are in partitions.c).
 *
 * A quota lives in its partition's counter value in `meta`, so every process of this release
 * reads it in the same lookup that keeps the counters, at no extra cost per store. Setting one
 * first marks the quota (from that commit on every put, removal and touch keeps the partition's
 * last-use order), then walks the entries in write transactions of PART_BATCH to put the
 * partition's existing entries into that order, then evicts down to the quota, in transactions
 * paced by their hold of the write lock (pace.c). Between two transactions of any of these walks a
 * waiting store of any process takes the lock.
 */
#include "operations.h"
#include "os.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define PART_BATCH 1000

typedef struct mark_ctx {
    const uint8_t *name; size_t len;
    uint8_t pkey[SUC_PART_KEY_LEN];
    uint64_t max_bytes;
    uint32_t flags;
} mark_ctx;

static int mark_apply(suc_cache *c, MDB_txn *txn, void *vctx, suc_error *err) {
    mark_ctx *ctx = vctx;
    MDB_val k = {SUC_PART_KEY_LEN, ctx->pkey}, v;
    int mrc = mdb_get(txn, c->dbi_meta, &k, &v);
    if (mrc && mrc != MDB_NOTFOUND) return suc_fail_mdb(err, "mdb_get(partition)", mrc);
    if (mrc == MDB_NOTFOUND && ctx->max_bytes && !(ctx->flags & SUC_QUOTA_NEW_PARTITION))
        return suc_fail(err, SUC_ENOTFOUND, "suc_partition_set_quota", 0, 0,
                        "the directory has no entries in partition '%.*s' (set it anyway: new partition)",
                        (int)(ctx->len > 200 ? 200 : ctx->len), (const char *)ctx->name);
    if (mrc == MDB_NOTFOUND && !ctx->max_bytes) return SUC_OK; /* nothing to remove */
    uint8_t *value = malloc(mrc == 0 && v.mv_size > SUC_PART_VALUE_FIXED ? v.mv_size : SUC_PART_VALUE_FIXED + ctx->len);
    if (!value) return suc_fail(err, SUC_ENOMEM, "malloc(partition)", ENOMEM, 0, "out of memory");
    size_t len;
    if (mrc == 0 && v.mv_size >= SUC_PART_VALUE_FIXED) {
        memcpy(value, v.mv_data, v.mv_size);
        len = v.mv_size;
    } else {
        memset(value, 0, SUC_PART_VALUE_FIXED);
        if (ctx->len) memcpy(value + SUC_PART_VALUE_FIXED, ctx->name, ctx->len);
        len = SUC_PART_VALUE_FIXED + ctx->len;
    }
    suc_put_u64(value + 40, ctx->max_bytes);
    MDB_val nv = {len, value};
    if (!ctx->max_bytes && suc_get_u64(value) == 0) mrc = suc_txn_del(c, txn, c->dbi_meta, &k);
    else mrc = suc_txn_put(c, txn, c->dbi_meta, &k, &nv, 0);
    free(value);
    return mrc && mrc != MDB_NOTFOUND ? suc_fail_mdb(err, "mdb_put(partition)", mrc) : SUC_OK;
}

/* One batch of the walk that puts a partition's entries into its last-use order. */
typedef struct index_ctx {
    uint8_t pkey[SUC_PART_KEY_LEN];
    uint8_t after[SUC_IKEY_LEN]; int have_after;
    uint8_t last[SUC_IKEY_LEN];
    size_t seen;
    uint64_t indexed;
} index_ctx;

/* Before every batch, and before a retried transaction starts over: each batch counts only
 * the entries it indexed (the report adds them up). */
static void index_reset(void *vctx) {
    index_ctx *ctx = vctx;
    ctx->seen = 0;
    ctx->indexed = 0;
}

static int index_apply(suc_cache *c, MDB_txn *txn, void *vctx, suc_error *err) {
    index_ctx *ctx = vctx;
    uint64_t quota = 0, bytes = 0;
    int mrc = suc_partition_quota(c, txn, ctx->pkey, &quota, &bytes);
    if (mrc) return suc_fail_mdb(err, "mdb_get(partition)", mrc);
    if (!quota) return SUC_OK; /* removed meanwhile: nothing to keep */
    MDB_cursor *cur;
    if ((mrc = mdb_cursor_open(txn, c->dbi_main, &cur))) return suc_fail_mdb(err, "mdb_cursor_open", mrc);
    MDB_val k = {SUC_IKEY_LEN, ctx->after}, v;
    mrc = ctx->have_after ? mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE) : mdb_cursor_get(cur, &k, &v, MDB_FIRST);
    if (mrc == 0 && ctx->have_after && k.mv_size == SUC_IKEY_LEN && !memcmp(k.mv_data, ctx->after, SUC_IKEY_LEN))
        mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    int rc = SUC_OK;
    for (; mrc == 0 && ctx->seen < PART_BATCH; mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != SUC_IKEY_LEN) continue;
        ctx->seen++;
        memcpy(ctx->last, k.mv_data, SUC_IKEY_LEN);
        suc_record r;
        uint8_t pkey[SUC_PART_KEY_LEN];
        if (suc_record_decode(v.mv_data, v.mv_size, &r) != SUC_OK) continue;
        suc_partition_key(r.partition, r.partition_len, pkey);
        if (memcmp(pkey, ctx->pkey, SUC_PART_KEY_LEN) != 0) continue;
        uint8_t uk[SUC_PART_KEY_LEN + SUC_TKEY_LEN];
        memcpy(uk, pkey, SUC_PART_KEY_LEN);
        uk[1] = 'U';
        suc_tkey_make(r.last_used_ms, k.mv_data, uk + SUC_PART_KEY_LEN);
        MDB_val ukv = {sizeof uk, uk}, empty = {0, NULL};
        if ((rc = suc_txn_put(c, txn, c->dbi_meta, &ukv, &empty, 0))) {
            rc = suc_fail_mdb(err, "mdb_put(partition use)", rc);
            break;
        }
        ctx->indexed++;
    }
    mdb_cursor_close(cur);
    if (!rc && mrc && mrc != MDB_NOTFOUND) rc = suc_fail_mdb(err, "mdb_cursor_get", mrc);
    return rc;
}

/* One batch of removing a partition's last-use order (its quota is gone). */
typedef struct unindex_ctx {
    uint8_t prefix[SUC_PART_KEY_LEN];
    size_t seen;
} unindex_ctx;

static int unindex_apply(suc_cache *c, MDB_txn *txn, void *vctx, suc_error *err) {
    unindex_ctx *ctx = vctx;
    ctx->seen = 0;
    enum { LEN = SUC_PART_KEY_LEN + SUC_TKEY_LEN };
    uint8_t *keys = malloc((size_t)PART_BATCH * LEN);
    if (!keys) return suc_fail(err, SUC_ENOMEM, "malloc(partition keys)", ENOMEM, 0, "out of memory");
    MDB_cursor *cur;
    int mrc = mdb_cursor_open(txn, c->dbi_meta, &cur);
    if (mrc) {
        free(keys);
        return suc_fail_mdb(err, "mdb_cursor_open(meta)", mrc);
    }
    MDB_val k = {SUC_PART_KEY_LEN, ctx->prefix}, v;
    for (mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); mrc == 0 && ctx->seen < PART_BATCH;
         mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != LEN || memcmp(k.mv_data, ctx->prefix, SUC_PART_KEY_LEN) != 0) break;
        memcpy(keys + ctx->seen++ * LEN, k.mv_data, LEN);
    }
    mdb_cursor_close(cur);
    int rc = SUC_OK;
    for (size_t i = 0; i < ctx->seen && !rc; i++) {
        MDB_val dk = {LEN, keys + i * LEN};
        if ((mrc = suc_txn_del(c, txn, c->dbi_meta, &dk)) && mrc != MDB_NOTFOUND) rc = suc_fail_mdb(err, "mdb_del(partition use)", mrc);
    }
    free(keys);
    return rc;
}

/* One batch of evictions holding a partition to its quota. */
typedef struct enforce_ctx {
    uint8_t pkey[SUC_PART_KEY_LEN];
    uint32_t batch;
    suc_op op;
    uint64_t evicted;
} enforce_ctx;

static void enforce_reset(void *vctx) {
    enforce_ctx *ctx = vctx;
    ctx->op.dead_count = 0;
    ctx->evicted = 0;
}

static int enforce_apply(suc_cache *c, MDB_txn *txn, void *vctx, suc_error *err) {
    enforce_ctx *ctx = vctx;
    uint64_t quota = 0, bytes = 0;
    int mrc = suc_partition_quota(c, txn, ctx->pkey, &quota, &bytes);
    if (mrc) return suc_fail_mdb(err, "mdb_get(partition)", mrc);
    if (!quota || bytes <= quota) return SUC_OK;
    suc_counters d = {0};
    int rc = suc_partition_evict(c, txn, ctx->pkey, quota, ctx->batch, NULL, &ctx->op, &d, &ctx->evicted, err);
    return rc ? rc : suc_meta_add_counters(c, txn, &d, err);
}

/* Evicts in batches until the partition is under its quota, or its last-use order is empty. */
static int enforce_one(suc_cache *c, const uint8_t pkey[SUC_PART_KEY_LEN], uint32_t batch, uint64_t *evicted,
                       uint64_t *transactions, suc_error *err) {
    uint32_t most = batch ? batch : PART_BATCH, per = suc_pace_first(most);
    for (;;) {
        enforce_ctx ctx = {0};
        memcpy(ctx.pkey, pkey, SUC_PART_KEY_LEN);
        ctx.batch = per;
        int rc = suc_write_txn_ex(c, enforce_apply, enforce_reset, &ctx, 1, err);
        if (rc == SUC_OK) {
            suc_body_unlink_ids(c, ctx.op.dead_ids, ctx.op.dead_count); /* delete order: commit, then unlink */
            *evicted += ctx.evicted;
            *transactions += 1;
        }
        suc_op_release(&ctx.op);
        if (rc || ctx.evicted < ctx.batch) return rc;
        per = suc_pace_next(per, most); /* a waiting store of any process goes first */
    }
}

int suc_partition_set_quota(suc_cache *c, const void *partition, size_t partition_len, uint64_t max_bytes,
                            uint32_t flags, suc_quota_report *out, suc_error *err) {
    if (out) memset(out, 0, sizeof *out);
    int rc = suc_cache_check_fork(c, err);
    if (rc) return rc;
    if (partition_len && !partition)
        return suc_fail(err, SUC_EINVAL, "suc_partition_set_quota", 0, 0, "NULL partition with a length");
    if (max_bytes > (uint64_t)INT64_MAX)
        return suc_fail(err, SUC_EINVAL, "suc_partition_set_quota", 0, 0, "a quota is at most %lld bytes",
                        (long long)INT64_MAX);
    /* Only a process known to be of an earlier release refuses a quota; one that cannot be
     * told (-1) does not: a quota is honoured by every process of this release either way. */
    int pid = max_bytes ? suc_earlier_release_attached(c) : 0;
    if (pid > 0)
        return suc_fail(err, SUC_EVERSION, "suc_partition_set_quota", 0, 0,
                        "process %d of an earlier release has the directory open: it would neither obey a quota "
                        "nor keep the partition counters; stop it first",
                        pid);
    mark_ctx mark = {partition, partition_len, {0}, max_bytes, flags};
    suc_partition_key(partition, partition_len, mark.pkey);
    if ((rc = suc_write_txn(c, mark_apply, NULL, &mark, err))) return rc;
    suc_quota_report report = {0};
    if (!max_bytes) {
        unindex_ctx u = {{0}, 0};
        memcpy(u.prefix, mark.pkey, SUC_PART_KEY_LEN);
        u.prefix[1] = 'U';
        for (;;) {
            rc = suc_write_txn_ex(c, unindex_apply, NULL, &u, 1, err);
            report.transactions++;
            if (rc || u.seen < PART_BATCH) break;
            suc_pace_yield();
        }
    } else {
        index_ctx ix = {0};
        memcpy(ix.pkey, mark.pkey, SUC_PART_KEY_LEN);
        for (;;) {
            index_reset(&ix);
            rc = suc_write_txn(c, index_apply, index_reset, &ix, err);
            if (rc) break;
            report.indexed_entries += ix.indexed;
            report.transactions++;
            if (ix.seen < PART_BATCH) break;
            memcpy(ix.after, ix.last, SUC_IKEY_LEN); /* only now: a retried transaction starts over */
            ix.have_after = 1;
            suc_pace_yield();
        }
        if (!rc) rc = enforce_one(c, mark.pkey, PART_BATCH, &report.evicted_entries, &report.transactions, err);
    }
    if (out) *out = report;
    return rc;
}

int suc_partitions_enforce_quotas(suc_cache *c, uint32_t batch, uint64_t *out_evicted, uint64_t *out_transactions,
                                  suc_error *err) {
    /* The partitions with a quota, from one read transaction (few: an operator set each). */
    uint8_t (*keys)[SUC_PART_KEY_LEN] = NULL;
    size_t n = 0, cap = 0;
    MDB_txn *txn;
    int rc = suc_rtxn_begin(c, &txn, err);
    if (rc) return rc;
    MDB_cursor *cur;
    int mrc = mdb_cursor_open(txn, c->dbi_meta, &cur);
    if (mrc) {
        suc_rtxn_end(c, txn);
        return suc_fail_mdb(err, "mdb_cursor_open(meta)", mrc);
    }
    uint8_t prefix[2] = {0, 'P'};
    MDB_val k = {2, prefix}, v;
    for (mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); mrc == 0; mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size < 2 || memcmp(k.mv_data, prefix, 2) != 0) break;
        if (k.mv_size != SUC_PART_KEY_LEN || v.mv_size < SUC_PART_VALUE_FIXED) continue;
        uint64_t quota = suc_get_u64((uint8_t *)v.mv_data + 40), bytes = suc_get_u64((uint8_t *)v.mv_data + 8) +
                                                                         suc_get_u64((uint8_t *)v.mv_data + 16);
        if (!quota || bytes <= quota) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            void *p = realloc(keys, cap * SUC_PART_KEY_LEN);
            if (!p) {
                rc = suc_fail(err, SUC_ENOMEM, "realloc(quotas)", ENOMEM, 0, "out of memory");
                break;
            }
            keys = p;
        }
        memcpy(keys[n++], k.mv_data, SUC_PART_KEY_LEN);
    }
    mdb_cursor_close(cur);
    suc_rtxn_end(c, txn);
    for (size_t i = 0; !rc && i < n; i++) rc = enforce_one(c, keys[i], batch, out_evicted, out_transactions, err);
    free(keys);
    return rc;
}
