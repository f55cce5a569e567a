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
#include "index.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define POSTING_PREFIX_LEN (2 + 16)
#define POSTING_LEN (POSTING_PREFIX_LEN + SUC_IKEY_LEN)

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
        int mrc = suc_txn_put(ctx->c, ctx->txn, ctx->c->dbi_meta, &k, &empty, 0);
        return mrc ? suc_fail_mdb(ctx->err, "mdb_put(tag)", mrc) : SUC_OK;
    }
    int mrc = suc_txn_del(ctx->c, ctx->txn, ctx->c->dbi_meta, &k);
    return mrc && mrc != MDB_NOTFOUND ? suc_fail_mdb(ctx->err, "mdb_del(tag)", mrc) : SUC_OK;
}

/* Writes (put = 1) or drops (put = 0) the postings of record `r` at `ikey`. */
static int postings_change(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN], const suc_record *r, int put,
                           suc_error *err) {
    if (!r->tags_len) return SUC_OK;
    posting_ctx ctx = {c, txn, ikey, put, err};
    return for_each_tag(r, posting_apply, &ctx);
}

static int tags_put(suc_cache *c, MDB_txn *txn, suc_change *ch, suc_error *err) {
    int rc = ch->old ? postings_change(c, txn, ch->ikey, ch->old, 0, err) : SUC_OK;
    return rc ? rc : postings_change(c, txn, ch->ikey, ch->new_rec, 1, err);
}

static int tags_delete(suc_cache *c, MDB_txn *txn, suc_change *ch, suc_error *err) {
    return postings_change(c, txn, ch->ikey, ch->old, 0, err);
}

/* Stale postings (an earlier release's removals, hash collisions) are dropped by the purge that
 * meets them, so there is nothing for verify to check or a recount to rebuild. */
const suc_secondary suc_tags_secondary = {.name = "tags", .on_put = tags_put, .on_delete = tags_delete};

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
    suc_record r;
    int mrc = suc_index_record_get(c, txn, ikey, &r, &v);
    /* Another release's record (or a damaged one) is not ours to mark. */
    if (mrc == MDB_NOTFOUND || mrc == SUC_ECORRUPT || (mrc == 0 && r.invalidated_at_s)) return SUC_OK;
    if (mrc) return suc_fail_mdb(err, "mdb_get(main)", mrc);
    /* A copy: the value points into the map, which this transaction must not write through. */
    uint8_t *copy = malloc(v.mv_size);
    if (!copy) return suc_fail(err, SUC_ENOMEM, "malloc(record)", ENOMEM, 0, "out of memory");
    memcpy(copy, v.mv_data, v.mv_size);
    suc_record_patch_invalidated(copy, now_s ? now_s : 1);
    suc_record_patch_version(copy, ++*seq);
    MDB_val nv = {v.mv_size, copy};
    mrc = suc_txn_put(c, txn, c->dbi_main, &k, &nv, 0);
    free(copy);
    if (mrc) return suc_fail_mdb(err, "mdb_put(main)", mrc);
    *out_marked = 1;
    return SUC_OK;
}

/* ---- purge by tag ------------------------------------------------------------------- */

typedef struct tag_purge {
    const uint8_t *tag; size_t tag_len;
    const uint8_t *partition; size_t partition_len; int any_partition;
} tag_purge;

/* The entry a tag posting names, unless it is in another partition; stale when the entry is
 * gone or no longer lists the tag (an earlier release's removal, or a tag hash collision). */
static int tag_resolve(void *vctx, suc_cache *c, MDB_txn *txn, const uint8_t *posting, size_t len,
                       suc_ikey_list *targets, int *stale, uint64_t *records_read, suc_error *err) {
    tag_purge *ctx = vctx;
    if (len != POSTING_LEN) return SUC_OK;
    const uint8_t *ikey = posting + POSTING_PREFIX_LEN;
    suc_record r;
    int mrc = suc_index_record_get(c, txn, ikey, &r, NULL);
    if (mrc && mrc != SUC_ECORRUPT) {
        *stale = 1;
        return SUC_OK;
    }
    ++*records_read;
    if (mrc) return SUC_OK; /* another release's */
    if (!record_has_tag(&r, ctx->tag, ctx->tag_len)) {
        *stale = 1;
        return SUC_OK;
    }
    if (!ctx->any_partition &&
        (r.partition_len != ctx->partition_len || memcmp(r.partition, ctx->partition, ctx->partition_len) != 0))
        return SUC_OK;
    return suc_ikey_list_add(targets, ikey, err);
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
    uint8_t prefix[POSTING_PREFIX_LEN];
    posting_prefix(tag, tag_len, prefix);
    tag_purge ctx = {tag, tag_len, partition, partition_len, partition == NULL};
    suc_posting_purge spec = {prefix, POSTING_PREFIX_LEN, (flags & SUC_PURGE_SOFT) != 0, tag_resolve, &ctx};
    return suc_purge_postings(c, &spec, out, err);
}
