/*
 * purge.c — purges driven by postings: the walk both purge by tag (tags.c) and purge by URL
 * prefix (key_order.c) run, so batching, resuming and soft purge have one home.
 *
 * A purge reads the postings under a prefix of the `meta` table in write transactions of at
 * most PURGE_BATCH postings, fewer when that holds the write lock too long (pace.c: services
 * storing meanwhile wait briefly, and take the lock between two), asks the posting's owner
 * which entries it names, and removes them (or marks them stale). A posting whose entries are
 * gone is dropped: it was left by an earlier release, which removes entries without postings.
 */
#include "index.h"
#include "os.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define PURGE_BATCH 1000

typedef struct purge_ctx {
    const suc_posting_purge *spec;
    uint32_t now_s;
    uint8_t resume[SUC_POSTING_MAX]; size_t resume_len; /* last posting of the committed batch */
    uint8_t last[SUC_POSTING_MAX]; size_t last_len;     /* last posting of this batch */
    suc_op op;              /* removed count and dead body ids of this batch only */
    suc_purge_report batch; /* this batch's counts, added on commit */
    size_t seen;
    uint32_t per_txn; /* postings a transaction takes at most (pace.c) */
} purge_ctx;

/* Empties the batch's results: before every batch, and before a retried transaction starts
 * over. Each batch's own count is added to the total and only its own bodies are unlinked, so
 * a purge of N entries unlinks N files and holds at most one batch of body ids. */
static void purge_reset(void *vctx) {
    purge_ctx *ctx = vctx;
    ctx->op.removed = 0;
    ctx->op.dead_count = 0;
    memset(&ctx->batch, 0, sizeof ctx->batch);
    ctx->seen = 0;
}

/* Copies up to ctx->per_txn postings after the resume point into slots of SUC_POSTING_MAX. */
static int collect_postings(suc_cache *c, MDB_txn *txn, purge_ctx *ctx, uint8_t *slots, size_t *lens, size_t *out_n,
                            suc_error *err) {
    const suc_posting_purge *spec = ctx->spec;
    MDB_cursor *cur;
    int mrc = mdb_cursor_open(txn, c->dbi_meta, &cur);
    if (mrc) return suc_fail_mdb(err, "mdb_cursor_open(meta)", mrc);
    MDB_val k = ctx->resume_len ? (MDB_val){ctx->resume_len, ctx->resume}
                                : (MDB_val){spec->prefix_len, (void *)spec->prefix},
            v;
    size_t n = 0;
    for (mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); mrc == 0 && n < ctx->per_txn;
         mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size < spec->prefix_len || memcmp(k.mv_data, spec->prefix, spec->prefix_len) != 0) break;
        if (k.mv_size > SUC_POSTING_MAX) continue;
        if (ctx->resume_len && k.mv_size == ctx->resume_len && memcmp(k.mv_data, ctx->resume, k.mv_size) == 0)
            continue;
        memcpy(slots + n * SUC_POSTING_MAX, k.mv_data, k.mv_size);
        lens[n++] = k.mv_size;
    }
    mdb_cursor_close(cur);
    *out_n = n;
    return mrc && mrc != MDB_NOTFOUND ? suc_fail_mdb(err, "mdb_cursor_get(meta)", mrc) : SUC_OK;
}

/* Removes or marks the entries one posting names; drops the posting when it is stale. */
static int apply_posting(suc_cache *c, MDB_txn *txn, purge_ctx *ctx, const uint8_t *posting, size_t len,
                         suc_ikey_list *targets, suc_counters *d, uint64_t *seq, int *seq_read, suc_error *err) {
    int stale = 0, rc, mrc;
    targets->count = 0;
    if ((rc = ctx->spec->resolve(ctx->spec->ctx, c, txn, posting, len, targets, &stale, &ctx->batch.records_read, err)))
        return rc;
    if (stale) {
        MDB_val pk = {len, (void *)posting};
        if ((mrc = suc_txn_del(c, txn, c->dbi_meta, &pk)) && mrc != MDB_NOTFOUND) return suc_fail_mdb(err, "mdb_del(posting)", mrc);
        ctx->batch.stale_postings++;
        return SUC_OK;
    }
    for (size_t i = 0; i < targets->count; i++) {
        const uint8_t *ikey = targets->ikeys + i * SUC_IKEY_LEN;
        if (!ctx->spec->soft) {
            rc = suc_index_delete(c, txn, ikey, &ctx->op, d, err); /* drops its postings too */
            if (rc == MDB_NOTFOUND) rc = SUC_OK;
            if (rc) return rc;
            continue;
        }
        if (!*seq_read) {
            rc = suc_meta_get(c, txn, "seq", seq);
            if (rc && rc != MDB_NOTFOUND) return suc_fail_mdb(err, "mdb_get(meta seq)", rc);
            *seq_read = 1;
        }
        int marked = 0;
        if ((rc = suc_index_invalidate(c, txn, ikey, ctx->now_s, seq, &marked, err))) return rc;
        ctx->batch.invalidated += (uint64_t)marked;
    }
    return SUC_OK;
}

static int purge_apply(suc_cache *c, MDB_txn *txn, void *vctx, suc_error *err) {
    purge_ctx *ctx = vctx;
    uint8_t *slots = malloc((size_t)ctx->per_txn * SUC_POSTING_MAX);
    size_t *lens = malloc(ctx->per_txn * sizeof *lens);
    suc_ikey_list targets = {0};
    int rc = SUC_OK;
    if (!slots || !lens) rc = suc_fail(err, SUC_ENOMEM, "malloc(purge)", ENOMEM, 0, "out of memory");
    size_t n = 0;
    if (!rc) rc = collect_postings(c, txn, ctx, slots, lens, &n, err);
    ctx->seen = n;
    suc_counters d = {0};
    uint64_t seq = 0;
    int seq_read = 0;
    for (size_t i = 0; rc == SUC_OK && i < n; i++)
        rc = apply_posting(c, txn, ctx, slots + i * SUC_POSTING_MAX, lens[i], &targets, &d, &seq, &seq_read, err);
    if (!rc && n) {
        memcpy(ctx->last, slots + (n - 1) * SUC_POSTING_MAX, lens[n - 1]);
        ctx->last_len = lens[n - 1];
    }
    free(slots);
    free(lens);
    free(targets.ikeys);
    if (rc) return rc;
    int mrc;
    if (seq_read && (mrc = suc_meta_put(c, txn, "seq", seq))) return suc_fail_mdb(err, "mdb_put(meta seq)", mrc);
    return suc_meta_add_counters(c, txn, &d, err);
}

int suc_ikey_list_add(suc_ikey_list *list, const uint8_t ikey[SUC_IKEY_LEN], suc_error *err) {
    if (list->count == list->cap) {
        size_t cap = list->cap ? list->cap * 2 : 8;
        uint8_t *p = realloc(list->ikeys, cap * SUC_IKEY_LEN);
        if (!p) return suc_fail(err, SUC_ENOMEM, "realloc(purge targets)", ENOMEM, 0, "out of memory");
        list->ikeys = p;
        list->cap = cap;
    }
    memcpy(list->ikeys + list->count++ * SUC_IKEY_LEN, ikey, SUC_IKEY_LEN);
    return SUC_OK;
}

int suc_purge_postings(suc_cache *c, const suc_posting_purge *spec, suc_purge_report *out, suc_error *err) {
    purge_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return suc_fail(err, SUC_ENOMEM, "malloc(purge)", ENOMEM, 0, "out of memory");
    ctx->spec = spec;
    ctx->now_s = (uint32_t)(suc_os_now_ms() / 1000);
    ctx->per_txn = suc_pace_first(PURGE_BATCH);
    suc_purge_report total = {0};
    int rc;
    for (;;) {
        purge_reset(ctx);
        rc = suc_write_txn_ex(c, purge_apply, purge_reset, ctx, !spec->soft, err);
        if (rc) break;
        suc_body_unlink_ids(c, ctx->op.dead_ids, ctx->op.dead_count); /* delete order: commit, then unlink */
        total.removed += ctx->op.removed;
        total.invalidated += ctx->batch.invalidated;
        total.records_read += ctx->batch.records_read;
        total.stale_postings += ctx->batch.stale_postings;
        if (ctx->seen < ctx->per_txn) break; /* fewer than it could take: none left */
        memcpy(ctx->resume, ctx->last, ctx->last_len); /* only now: a retried transaction starts over */
        ctx->resume_len = ctx->last_len;
        ctx->per_txn = suc_pace_next(ctx->per_txn, PURGE_BATCH); /* a waiting store of any process goes first */
    }
    suc_op_release(&ctx->op);
    free(ctx);
    if (out) *out = total;
    return rc;
}
