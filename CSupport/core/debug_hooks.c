/*
 * debug_hooks.c — the testing hooks of shared_url_cache_testing.h: raw records, meta keys and
 * use-order values, body paths, a held write lock, a filled reader pool. Never called by the
 * library itself.
 */
#include "operations.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int suc_debug_body_path(suc_cache *c, const void *key, size_t key_len, const void *variant, size_t variant_len,
                        char *buf, size_t buf_len) {
    uint8_t ikey[SUC_IKEY_LEN];
    suc_ikey_make(key, key_len, variant, variant_len, ikey);
    uint8_t *rec_buf = NULL;
    size_t rec_len = 0;
    int rc = suc_index_read_record(c, ikey, &rec_buf, &rec_len, NULL, NULL);
    if (rc) return rc;
    suc_record r;
    rc = suc_record_decode(rec_buf, rec_len, &r);
    if (rc == SUC_OK && (r.flags & SUC_REC_INLINE)) rc = SUC_ENOTFOUND;
    if (rc == SUC_OK) {
        char p[SUC_BODY_PATH_LEN];
        suc_body_path(r.body_id, p);
        if (buf_len < 7 + sizeof p) rc = SUC_EINVAL;
        else {
            memcpy(buf, "bodies/", 7);
            memcpy(buf + 7, p, sizeof p);
        }
    }
    free(rec_buf);
    return rc;
}

int suc_debug_get_raw_record(suc_cache *c, const void *key, size_t key_len, const void *variant,
                             size_t variant_len, uint8_t **out, size_t *out_len) {
    uint8_t ikey[SUC_IKEY_LEN];
    suc_ikey_make(key, key_len, variant, variant_len, ikey);
    return suc_index_read_record(c, ikey, out, out_len, NULL, NULL);
}

typedef struct raw_ctx {
    uint8_t ikey[SUC_IKEY_LEN];
    const void *bytes;
    size_t len;
} raw_ctx;

static int raw_apply(suc_cache *c, MDB_txn *txn, void *vctx, suc_error *err) {
    raw_ctx *ctx = vctx;
    MDB_val k = {SUC_IKEY_LEN, ctx->ikey}, v = {ctx->len, (void *)ctx->bytes};
    int mrc = suc_txn_put(c, txn, c->dbi_main, &k, &v, 0);
    return mrc ? suc_fail_mdb(err, "mdb_put(raw)", mrc) : SUC_OK;
}

/* Runs `apply` in a write transaction on the index key of (key, variant) and the raw bytes. */
static int raw_write(suc_cache *c, const void *key, size_t key_len, const void *variant, size_t variant_len,
                     const void *bytes, size_t len, suc_write_fn apply) {
    raw_ctx ctx = {.bytes = bytes, .len = len};
    suc_ikey_make(key, key_len, variant, variant_len, ctx.ikey);
    return suc_write_txn(c, apply, NULL, &ctx, NULL);
}

int suc_debug_put_raw_record(suc_cache *c, const void *key, size_t key_len, const void *variant,
                             size_t variant_len, const void *bytes, size_t len) {
    return raw_write(c, key, key_len, variant, variant_len, bytes, len, raw_apply);
}

/* The value of the entry's use-order key, whatever its record says (raw_ctx's bytes). */
static int use_value_apply(suc_cache *c, MDB_txn *txn, void *vctx, suc_error *err) {
    raw_ctx *ctx = vctx;
    suc_record r;
    int rc = suc_index_record_get(c, txn, ctx->ikey, &r, NULL);
    if (rc == MDB_NOTFOUND) return SUC_ENOTFOUND;
    if (rc && rc != SUC_ECORRUPT) return suc_fail_mdb(err, "mdb_get(raw use value)", rc);
    return rc ? rc : suc_use_order_value_put(c, txn, &r, ctx->ikey, ctx->bytes, ctx->len, err);
}

int suc_debug_put_raw_use_value(suc_cache *c, const void *key, size_t key_len, const void *variant,
                                size_t variant_len, const void *bytes, size_t len) {
    return raw_write(c, key, key_len, variant, variant_len, bytes, len, use_value_apply);
}

typedef struct raw_meta_ctx {
    const void *key, *value;
    size_t key_len, value_len;
} raw_meta_ctx;

static int raw_meta_apply(suc_cache *c, MDB_txn *txn, void *vctx, suc_error *err) {
    raw_meta_ctx *ctx = vctx;
    MDB_val k = {ctx->key_len, (void *)ctx->key}, v = {ctx->value_len, (void *)ctx->value};
    int mrc = suc_txn_put(c, txn, c->dbi_meta, &k, &v, 0);
    return mrc ? suc_fail_mdb(err, "mdb_put(raw meta)", mrc) : SUC_OK;
}

int suc_debug_put_raw_meta(suc_cache *c, const void *key, size_t key_len, const void *value, size_t value_len) {
    if (!key || !key_len || key_len > 511) return SUC_EINVAL;
    raw_meta_ctx ctx = {key, value, key_len, value_len};
    return suc_write_txn(c, raw_meta_apply, NULL, &ctx, NULL);
}

void suc_debug_index_key(const void *key, size_t key_len, const void *variant, size_t variant_len,
                         uint8_t out[48]) {
    _Static_assert(SUC_IKEY_LEN == 48, "the testing header's index key length");
    suc_ikey_make(key, key_len, variant, variant_len, out);
}

static int hold_apply(suc_cache *c, MDB_txn *txn, void *vctx, suc_error *err) {
    (void)c; (void)txn; (void)err;
    usleep(*(uint32_t *)vctx * 1000u);
    return SUC_OK;
}

int suc_debug_hold_write_lock(suc_cache *c, uint32_t millis) {
    return suc_write_txn(c, hold_apply, NULL, &millis, NULL);
}

int suc_debug_fill_read_pool(suc_cache *c, uint32_t count) {
    MDB_txn *held[256];
    uint32_t n = 0;
    int rc = SUC_OK;
    while (n < count && n < 256 && (rc = suc_rtxn_begin(c, &held[n], NULL)) == SUC_OK) n++;
    for (uint32_t i = 0; i < n; i++) suc_rtxn_end(c, held[i]);
    return rc;
}

int suc_debug_use_order_keys(suc_cache *c, uint64_t *out_keys, uint64_t *out_records) {
    MDB_txn *txn;
    int rc = suc_rtxn_begin(c, &txn, NULL);
    if (rc) return rc;
    MDB_stat keys, records;
    int mrc = mdb_stat(txn, suc_time_order_dbi(c, SUC_ORDER_USE), &keys);
    if (!mrc) mrc = mdb_stat(txn, c->dbi_main, &records);
    suc_rtxn_end(c, txn);
    if (mrc) return suc_fail_mdb(NULL, "mdb_stat", mrc);
    *out_keys = keys.ms_entries;
    *out_records = records.ms_entries;
    return SUC_OK;
}
