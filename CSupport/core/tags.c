/*
 * tags.c — tag postings, purge by tag, and soft purge (marking entries stale).
 *
 * A store whose entry has tags writes one posting per tag in the same commit, so a purge by tag
 * reads the postings of that tag and those entries' records, never the rest of the directory.
 *
 * Where the postings live: in the `meta` table, under keys no counter name can take:
 *     0x00 'T' ‖ SHA-256(tag)[0..16] ‖ ikey (48)        value: empty
 * Every release that rewrites the index copies `meta` whole and reads it only by name, so an
 * earlier release sharing the directory keeps the postings through its rewrites (a new table
 * would be dropped by them). An earlier release also removes entries without their postings;
 * such a posting, and one whose tag hash collides, is found stale when the purge reads the
 * record (it must list the tag) and is dropped then (docs/Formats.md, "Tags and soft purge").
 */
#include "internal.h"
#include "os.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define POSTING_PREFIX_LEN (2 + 16)
#define POSTING_LEN (POSTING_PREFIX_LEN + SUC_IKEY_LEN)
/* Postings handled per write transaction, so services storing meanwhile wait briefly. */
#define PURGE_BATCH 1000

static void posting_prefix(const uint8_t *tag, size_t tag_len, uint8_t out[POSTING_PREFIX_LEN]) {
    uint8_t h[32];
    suc_sha256(tag, tag_len, h);
    out[0] = 0;
    out[1] = 'T';
    memcpy(out + 2, h, 16);
}

/* Calls fn for each tag of a record's list (each ended by '\n'). */
static int for_each_tag(const suc_record *r, int (*fn)(const uint8_t *, size_t, void *), void *ctx) {
    const uint8_t *p = r->tags, *end = r->tags + r->tags_len;
    while (p < end) {
        const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) break;
        if (nl > p) {
            int rc = fn(p, (size_t)(nl - p), ctx);
            if (rc) return rc;
        }
        p = nl + 1;
    }
    return SUC_OK;
}

typedef struct posting_ctx {
    suc_cache *c;
    MDB_txn *txn;
    const uint8_t *ikey;
    int put;
    suc_error *err;
} posting_ctx;

static int posting_apply(const uint8_t *tag, size_t len, void *vctx) {
    posting_ctx *ctx = vctx;
    uint8_t key[POSTING_LEN];
    posting_prefix(tag, len, key);
    memcpy(key + POSTING_PREFIX_LEN, ctx->ikey, SUC_IKEY_LEN);
    MDB_val k = {POSTING_LEN, key}, empty = {0, NULL};
    if (ctx->put) {
        int mrc = mdb_put(ctx->txn, ctx->c->dbi_meta, &k, &empty, 0);
        return mrc ? suc_fail_mdb(ctx->err, "mdb_put(tag)", mrc) : SUC_OK;
    }
    int mrc = mdb_del(ctx->txn, ctx->c->dbi_meta, &k, NULL);
    return mrc && mrc != MDB_NOTFOUND ? suc_fail_mdb(ctx->err, "mdb_del(tag)", mrc) : SUC_OK;
}

int suc_tags_index(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN], const suc_record *r, int put,
                   suc_error *err) {
    if (!r->tags_len) return SUC_OK;
    posting_ctx ctx = {c, txn, ikey, put, err};
    return for_each_tag(r, posting_apply, &ctx);
}

int suc_tags_check(const void *tags, size_t len, suc_error *err) {
    if (!len) return SUC_OK;
    if (!tags) return suc_fail(err, SUC_EINVAL, "tags", 0, 0, "NULL pointer with a length");
    if (len > SUC_TAGS_MAX_BYTES)
        return suc_fail(err, SUC_ETOOLARGE, "tags", 0, 0, "tags exceed the limit of %d bytes", SUC_TAGS_MAX_BYTES);
    const uint8_t *p = tags, *end = p + len;
    if (end[-1] != '\n') return suc_fail(err, SUC_EINVAL, "tags", 0, 0, "every tag must end with a newline");
    while (p < end) {
        const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = (size_t)(nl - p);
        if (n == 0 || n > SUC_TAG_MAX_BYTES || memchr(p, 0, n))
            return suc_fail(err, SUC_EINVAL, "tags", 0, 0, "a tag must be 1 to %d bytes without NUL", SUC_TAG_MAX_BYTES);
        p = nl + 1;
    }
    return SUC_OK;
}

/* Whether the record's tag list holds exactly `tag`. */
static int record_has_tag(const suc_record *r, const uint8_t *tag, size_t len) {
    const uint8_t *p = r->tags, *end = r->tags + r->tags_len;
    while (p < end) {
        const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) return 0;
        if ((size_t)(nl - p) == len && memcmp(p, tag, len) == 0) return 1;
        p = nl + 1;
    }
    return 0;
}

int suc_index_invalidate(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN], uint32_t now_s,
                         uint64_t *seq, int *out_marked, suc_error *err) {
    *out_marked = 0;
    MDB_val k = {SUC_IKEY_LEN, (void *)ikey}, v;
    int mrc = mdb_get(txn, c->dbi_main, &k, &v);
    if (mrc == MDB_NOTFOUND) return SUC_OK;
    if (mrc) return suc_fail_mdb(err, "mdb_get(main)", mrc);
    suc_record r;
    /* Another release's record (or a damaged one) is not ours to mark. */
    if (suc_record_decode(v.mv_data, v.mv_size, &r) != SUC_OK || r.invalidated_at_s) return SUC_OK;
    /* A copy: the value points into the map, which this transaction must not write through. */
    uint8_t *copy = malloc(v.mv_size);
    if (!copy) return suc_fail(err, SUC_ENOMEM, "malloc(record)", ENOMEM, 0, "out of memory");
    memcpy(copy, v.mv_data, v.mv_size);
    suc_record_patch_invalidated(copy, now_s ? now_s : 1);
    suc_record_patch_version(copy, ++*seq);
    MDB_val nv = {v.mv_size, copy};
    mrc = mdb_put(txn, c->dbi_main, &k, &nv, 0);
    free(copy);
    if (mrc) return suc_fail_mdb(err, "mdb_put(main)", mrc);
    *out_marked = 1;
    return SUC_OK;
}

/* ---- purge by tag ------------------------------------------------------------------- */

typedef struct purge_ctx {
    uint8_t prefix[POSTING_PREFIX_LEN];
    const uint8_t *tag; size_t tag_len;
    const uint8_t *partition; size_t partition_len; int any_partition;
    int soft;
    uint32_t now_s;
    uint8_t resume[POSTING_LEN]; int resuming; /* the last posting of the committed batch before */
    uint8_t last[POSTING_LEN];                 /* the last posting of this batch */
    suc_op op;                                 /* removed count and dead body ids of this batch */
    suc_purge_report batch;                    /* this batch's counts, added on commit */
    size_t seen;
} purge_ctx;

static void purge_reset(void *vctx) {
    purge_ctx *ctx = vctx;
    ctx->op.removed = 0;
    ctx->op.dead_count = 0;
    memset(&ctx->batch, 0, sizeof ctx->batch);
    ctx->seen = 0;
}

/* What to do with the entry a posting names: 0 leave (another partition), 1 act, -1 stale. */
static int posting_verdict(purge_ctx *ctx, MDB_txn *txn, suc_cache *c, const uint8_t *ikey) {
    MDB_val k = {SUC_IKEY_LEN, (void *)ikey}, v;
    if (mdb_get(txn, c->dbi_main, &k, &v)) return -1;
    ctx->batch.records_read++;
    suc_record r;
    if (suc_record_decode(v.mv_data, v.mv_size, &r) != SUC_OK) return 0; /* another release's */
    if (!record_has_tag(&r, ctx->tag, ctx->tag_len)) return -1;
    if (!ctx->any_partition &&
        (r.partition_len != ctx->partition_len || memcmp(r.partition, ctx->partition, ctx->partition_len) != 0))
        return 0;
    return 1;
}

static int purge_apply(suc_cache *c, MDB_txn *txn, void *vctx, suc_error *err) {
    purge_ctx *ctx = vctx;
    uint8_t *keys = malloc((size_t)PURGE_BATCH * POSTING_LEN);
    if (!keys) return suc_fail(err, SUC_ENOMEM, "malloc(purge)", ENOMEM, 0, "out of memory");
    MDB_cursor *cur;
    int mrc = mdb_cursor_open(txn, c->dbi_meta, &cur);
    if (mrc) {
        free(keys);
        return suc_fail_mdb(err, "mdb_cursor_open(meta)", mrc);
    }
    MDB_val k, v;
    if (ctx->resuming) {
        k.mv_size = POSTING_LEN;
        k.mv_data = ctx->resume;
    } else {
        k.mv_size = POSTING_PREFIX_LEN;
        k.mv_data = ctx->prefix;
    }
    size_t n = 0;
    for (mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); mrc == 0 && n < PURGE_BATCH;
         mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size < POSTING_PREFIX_LEN || memcmp(k.mv_data, ctx->prefix, POSTING_PREFIX_LEN) != 0) break;
        if (k.mv_size != POSTING_LEN) continue;
        if (ctx->resuming && memcmp(k.mv_data, ctx->resume, POSTING_LEN) == 0) continue;
        memcpy(keys + n * POSTING_LEN, k.mv_data, POSTING_LEN);
        n++;
    }
    mdb_cursor_close(cur);
    int rc = SUC_OK;
    if (mrc && mrc != MDB_NOTFOUND) rc = suc_fail_mdb(err, "mdb_cursor_get(meta)", mrc);
    ctx->seen = n;
    suc_counters d = {0};
    uint64_t seq = 0;
    int seq_read = 0;
    for (size_t i = 0; rc == SUC_OK && i < n; i++) {
        const uint8_t *posting = keys + i * POSTING_LEN, *ikey = posting + POSTING_PREFIX_LEN;
        int verdict = posting_verdict(ctx, txn, c, ikey);
        if (verdict < 0) {
            MDB_val pk = {POSTING_LEN, (void *)posting};
            if ((mrc = mdb_del(txn, c->dbi_meta, &pk, NULL)) && mrc != MDB_NOTFOUND)
                rc = suc_fail_mdb(err, "mdb_del(tag)", mrc);
            ctx->batch.stale_postings++;
        } else if (verdict > 0 && !ctx->soft) {
            rc = suc_index_delete(c, txn, ikey, &ctx->op, &d, err); /* drops its postings too */
            if (rc == MDB_NOTFOUND) rc = SUC_OK;
        } else if (verdict > 0) {
            if (!seq_read) {
                rc = suc_meta_get(c, txn, "seq", &seq);
                if (rc == MDB_NOTFOUND) rc = SUC_OK;
                else if (rc) rc = suc_fail_mdb(err, "mdb_get(meta seq)", rc);
                seq_read = 1;
            }
            int marked = 0;
            if (!rc) rc = suc_index_invalidate(c, txn, ikey, ctx->now_s, &seq, &marked, err);
            ctx->batch.invalidated += (uint64_t)marked;
        }
    }
    if (!rc && n) memcpy(ctx->last, keys + (n - 1) * POSTING_LEN, POSTING_LEN);
    free(keys);
    if (rc) return rc;
    if (seq_read && (mrc = suc_meta_put(c, txn, "seq", seq))) return suc_fail_mdb(err, "mdb_put(meta seq)", mrc);
    return suc_meta_add_counters(c, txn, &d, err);
}

int suc_purge_tag(suc_cache *c, const void *tag, size_t tag_len, const void *partition, size_t partition_len,
                  uint32_t flags, suc_purge_report *out, suc_error *err) {
    if (out) memset(out, 0, sizeof *out);
    int rc = suc_cache_check_fork(c, err);
    if (rc) return rc;
    if (!tag || tag_len == 0 || tag_len > SUC_TAG_MAX_BYTES || memchr(tag, '\n', tag_len) ||
        (partition_len && !partition))
        return suc_fail(err, SUC_EINVAL, "suc_purge_tag", 0, 0, "a tag is 1 to %d bytes without a newline",
                        SUC_TAG_MAX_BYTES);
    purge_ctx ctx = {0};
    posting_prefix(tag, tag_len, ctx.prefix);
    ctx.tag = tag;
    ctx.tag_len = tag_len;
    ctx.partition = partition;
    ctx.partition_len = partition_len;
    ctx.any_partition = partition == NULL;
    ctx.soft = (flags & SUC_PURGE_SOFT) != 0;
    ctx.now_s = (uint32_t)(suc_os_now_ms() / 1000);
    suc_purge_report total = {0};
    for (;;) {
        rc = suc_write_txn_ex(c, purge_apply, purge_reset, &ctx, !ctx.soft, err);
        if (rc) break;
        suc_body_unlink_ids(c, ctx.op.dead_ids, ctx.op.dead_count); /* delete order: commit, then unlink */
        total.removed += ctx.op.removed;
        total.invalidated += ctx.batch.invalidated;
        total.records_read += ctx.batch.records_read;
        total.stale_postings += ctx.batch.stale_postings;
        if (ctx.seen < PURGE_BATCH) break;
        memcpy(ctx.resume, ctx.last, POSTING_LEN); /* only now: a retried transaction starts over */
        ctx.resuming = 1;
    }
    suc_op_release(&ctx.op);
    if (out) *out = total;
    return rc;
}
