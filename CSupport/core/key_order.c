/*
 * key_order.c — key-order postings: the index's keys in URL order, so a purge by URL prefix
 * reads the keys under the prefix, never the rest of the directory.
 *
 * The index finds entries by SHA-256 of their key, which keeps no order. Keys in the URL layout
 * the Swift layers write ('K' 1 ‖ u32 len ‖ partition ‖ u32 len ‖ method ‖ u32 len ‖ URL,
 * big-endian lengths; docs/Formats.md) get one posting per key while any variant of it is
 * stored, in `meta` (every release's index rewrite copies it whole):
 *
 *     0x00 'O' ‖ ordered key                      ""   ordered key: the key without the URL's
 *                                                      length, so one partition's and method's
 *                                                      keys sort by URL
 *     0x00 'O' ‖ ordered key[0..446] ‖ SHA-256(key) "" a key too long for a posting: exactly
 *                                                      SUC_POSTING_MAX bytes, the hash at the end
 *     0x00 'P' 0x01                               u64  entries of the directory when the postings
 *                                                      were last complete, kept with every commit
 *
 * The count sits beside the partition counters, which every store writes anyway, so it dirties
 * no page of its own. An earlier release stores without postings but keeps the `entries`
 * counter: the two differ from then on, and a prefix purge walks instead (docs/Formats.md).
 */
#include "index.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define ORDER_HASH_LEN 32
#define ORDER_CUT (SUC_POSTING_MAX - 2 - ORDER_HASH_LEN)
/* Bound on each field of a purge's prefix (keys hold far shorter ones). */
#define PREFIX_FIELD_MAX (1 << 20)

static const uint8_t posting_kind[2] = {0, 'O'};
static const uint8_t count_key[3] = {0, 'P', 1};

static uint32_t get_be32(const uint8_t *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static void put_be32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

/* Offset of the URL's length field in a URL-layout key, or 0 when `key` is not one. */
static size_t url_length_offset(const uint8_t *key, size_t len) {
    if (len < 2 + 12 || key[0] != 'K' || key[1] != 1) return 0;
    size_t at = 2;
    for (int field = 0; field < 2; field++) {
        if (len - at < 4) return 0;
        uint32_t n = get_be32(key + at);
        if (n > len - at - 4) return 0;
        at += 4 + n;
    }
    if (len - at < 4 || get_be32(key + at) != len - at - 4 || len - at - 4 == 0) return 0;
    return at;
}

/* The posting of a URL-layout key (0 when it is not one); `out` holds SUC_POSTING_MAX bytes. */
static size_t posting_make(const uint8_t *key, size_t len, const uint8_t key_hash[ORDER_HASH_LEN], uint8_t *out) {
    size_t at = url_length_offset(key, len);
    if (!at) return 0;
    size_t ordered = len - 4, n = 2 + ordered;
    memcpy(out, posting_kind, 2);
    if (n < SUC_POSTING_MAX) {
        memcpy(out + 2, key, at);
        memcpy(out + 2 + at, key + at + 4, len - at - 4);
        return n;
    }
    uint8_t *o = out + 2;
    size_t head = at < ORDER_CUT ? at : ORDER_CUT;
    memcpy(o, key, head);
    if (head < ORDER_CUT) memcpy(o + head, key + at + 4, ORDER_CUT - head);
    memcpy(out + 2 + ORDER_CUT, key_hash, ORDER_HASH_LEN);
    return SUC_POSTING_MAX;
}

/* The index's key hash of the key a posting names (0 when the posting is malformed): the
 * hash at the end of a cut posting, or SHA-256 of the whole key rebuilt with its URL's length. */
static int posting_key_hash(const uint8_t *posting, size_t len, uint8_t hash[SUC_KEY_HASH_LEN]) {
    if (len == SUC_POSTING_MAX) {
        memcpy(hash, posting + 2 + ORDER_CUT, ORDER_HASH_LEN);
        return 1;
    }
    if (len < 2 || len > SUC_POSTING_MAX) return 0;
    uint8_t key[SUC_POSTING_MAX + 4];
    const uint8_t *o = posting + 2;
    size_t olen = len - 2, at = 2;
    for (int field = 0; field < 2 && at + 4 <= olen; field++) at += 4 + get_be32(o + at);
    if (at > olen) return 0;
    memcpy(key, o, at);
    put_be32(key + at, (uint32_t)(olen - at));
    memcpy(key + at + 4, o + at, olen - at);
    suc_sha256(key, olen + 4, hash);
    return 1;
}

/* Whether a variant of `ikey`'s key other than `ikey` itself is stored (the delete asking has
 * not removed its record yet). */
static int other_variants_left(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN], int *out, suc_error *err) {
    MDB_cursor *cur;
    int mrc = mdb_cursor_open(txn, c->dbi_main, &cur);
    if (mrc) return suc_fail_mdb(err, "mdb_cursor_open(main)", mrc);
    MDB_val k = {SUC_KEY_HASH_LEN, (void *)ikey}, v;
    *out = 0;
    for (mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); mrc == 0; mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != SUC_IKEY_LEN || memcmp(k.mv_data, ikey, SUC_KEY_HASH_LEN) != 0) break;
        if (memcmp(k.mv_data, ikey, SUC_IKEY_LEN) != 0) {
            *out = 1;
            break;
        }
    }
    mdb_cursor_close(cur);
    if (mrc && mrc != MDB_NOTFOUND) return suc_fail_mdb(err, "mdb_cursor_get(main)", mrc);
    return SUC_OK;
}

/* Whether this directory keeps key-order postings (the count is there). */
static int kept(suc_cache *c, MDB_txn *txn) {
    MDB_val k = {sizeof count_key, (void *)count_key}, v;
    return mdb_get(txn, c->dbi_meta, &k, &v) == 0;
}

/* The posting of record `r`'s key (0: the directory keeps none, or the key is not in the URL
 * layout); `out` holds SUC_POSTING_MAX bytes. */
static size_t posting_of(suc_cache *c, MDB_txn *txn, const suc_record *r, const uint8_t ikey[SUC_IKEY_LEN],
                         uint8_t out[SUC_POSTING_MAX]) {
    if (url_length_offset(r->key, r->key_len) == 0 || !kept(c, txn)) return 0;
    return posting_make(r->key, r->key_len, ikey, out);
}

/* A store writes its key's posting (one key, many variants: one posting). */
static int order_put(suc_cache *c, MDB_txn *txn, suc_change *ch, suc_error *err) {
    uint8_t posting[SUC_POSTING_MAX];
    size_t len = posting_of(c, txn, ch->new_rec, ch->ikey, posting);
    if (!len) return SUC_OK;
    MDB_val k = {len, posting}, empty = {0, NULL};
    /* A key stored before has its posting: leave its page clean. */
    int mrc = suc_txn_put(c, txn, c->dbi_meta, &k, &empty, MDB_NOOVERWRITE);
    return mrc && mrc != MDB_KEYEXIST ? suc_fail_mdb(err, "mdb_put(key order)", mrc) : SUC_OK;
}

/* A removal drops the posting when no other variant of the key is left. */
static int order_delete(suc_cache *c, MDB_txn *txn, suc_change *ch, suc_error *err) {
    uint8_t posting[SUC_POSTING_MAX];
    size_t len = posting_of(c, txn, ch->old, ch->ikey, posting);
    if (!len) return SUC_OK;
    int left = 0, rc = other_variants_left(c, txn, ch->ikey, &left, err);
    if (rc || left) return rc;
    MDB_val k = {len, posting};
    int mrc = suc_txn_del(c, txn, c->dbi_meta, &k);
    return mrc && mrc != MDB_NOTFOUND ? suc_fail_mdb(err, "mdb_del(key order)", mrc) : SUC_OK;
}

/* Keeps the entries count the postings were kept for (every commit that changes the count). */
static int order_count(suc_cache *c, MDB_txn *txn, int64_t delta, suc_error *err) {
    MDB_val k = {sizeof count_key, (void *)count_key}, v;
    int mrc = mdb_get(txn, c->dbi_meta, &k, &v);
    if (mrc == MDB_NOTFOUND) return SUC_OK; /* not kept (yet): nothing to keep exact */
    if (mrc || v.mv_size != 8) return mrc ? suc_fail_mdb(err, "mdb_get(key order count)", mrc) : SUC_OK;
    int64_t next = (int64_t)suc_get_u64(v.mv_data) + delta;
    uint8_t value[8];
    suc_put_u64(value, (uint64_t)(next < 0 ? 0 : next));
    MDB_val nv = {8, value};
    mrc = suc_txn_put(c, txn, c->dbi_meta, &k, &nv, 0);
    return mrc ? suc_fail_mdb(err, "mdb_put(key order count)", mrc) : SUC_OK;
}

static int build(suc_cache *c, MDB_txn *txn, suc_error *err);

static int delete_postings(suc_cache *c, MDB_txn *txn, suc_error *err) {
    MDB_cursor *cur;
    int mrc = mdb_cursor_open(txn, c->dbi_meta, &cur);
    if (mrc) return suc_fail_mdb(err, "mdb_cursor_open(meta)", mrc);
    MDB_val k = {2, (void *)posting_kind}, v;
    for (mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); mrc == 0;) {
        if (k.mv_size < 2 || memcmp(k.mv_data, posting_kind, 2) != 0) break;
        if ((mrc = suc_txn_cursor_del(c, txn, c->dbi_meta, cur))) break;
        mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT); /* after a delete: the item that followed */
    }
    mdb_cursor_close(cur);
    return mrc && mrc != MDB_NOTFOUND ? suc_fail_mdb(err, "mdb_del(key order)", mrc) : SUC_OK;
}

static int order_rebuild(suc_cache *c, MDB_txn *txn, suc_error *err) {
    if (!kept(c, txn)) return SUC_OK;
    return build(c, txn, err);
}

/* Drops every posting, writes them again from the records, and sets the count. */
static int build(suc_cache *c, MDB_txn *txn, suc_error *err) {
    int rc = delete_postings(c, txn, err);
    if (rc) return rc;
    MDB_cursor *cur;
    int mrc = mdb_cursor_open(txn, c->dbi_main, &cur);
    if (mrc) return suc_fail_mdb(err, "mdb_cursor_open(main)", mrc);
    MDB_val k, v, empty = {0, NULL};
    for (mrc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); mrc == 0; mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        suc_record r;
        if (k.mv_size != SUC_IKEY_LEN || suc_record_decode(v.mv_data, v.mv_size, &r) != SUC_OK) continue;
        uint8_t posting[SUC_POSTING_MAX];
        size_t n = posting_make(r.key, r.key_len, k.mv_data, posting);
        if (!n) continue;
        MDB_val pk = {n, posting};
        /* `meta` is another table: putting into it leaves this cursor where it is. */
        if ((mrc = suc_txn_put(c, txn, c->dbi_meta, &pk, &empty, 0))) break;
    }
    mdb_cursor_close(cur);
    if (mrc && mrc != MDB_NOTFOUND) return suc_fail_mdb(err, "rebuild(key order)", mrc);
    uint64_t entries = 0;
    suc_meta_get(c, txn, "entries", &entries);
    uint8_t value[8];
    suc_put_u64(value, entries);
    MDB_val ck = {sizeof count_key, (void *)count_key}, cv = {8, value};
    mrc = suc_txn_put(c, txn, c->dbi_meta, &ck, &cv, 0);
    return mrc ? suc_fail_mdb(err, "mdb_put(key order count)", mrc) : SUC_OK;
}

static int set_apply(suc_cache *c, MDB_txn *txn, void *vctx, suc_error *err) {
    if (*(int *)vctx) return build(c, txn, err);
    int rc = delete_postings(c, txn, err);
    if (rc) return rc;
    MDB_val k = {sizeof count_key, (void *)count_key};
    int mrc = suc_txn_del(c, txn, c->dbi_meta, &k);
    return mrc && mrc != MDB_NOTFOUND ? suc_fail_mdb(err, "mdb_del(key order count)", mrc) : SUC_OK;
}

int suc_key_order_set(suc_cache *c, int keep, suc_error *err) {
    int rc = suc_cache_check_fork(c, err);
    if (rc) return rc;
    int on = keep != 0;
    /* One transaction: every process's next store sees the postings and the count together. */
    return suc_write_txn_ex(c, set_apply, NULL, &on, !on, err);
}

/* ---- purge by URL prefix ------------------------------------------------------------- */

typedef struct prefix_purge {
    const uint8_t *ordered; size_t ordered_len; /* the ordered key prefix, without 0x00 'O' */
} prefix_purge;

/* Whether the record's key, in key order, starts with the purge's prefix. */
static int key_under(const prefix_purge *p, const suc_record *r) {
    size_t at = url_length_offset(r->key, r->key_len);
    if (!at || r->key_len - 4 < p->ordered_len) return 0;
    if (p->ordered_len <= at) return memcmp(r->key, p->ordered, p->ordered_len) == 0;
    return memcmp(r->key, p->ordered, at) == 0 &&
           memcmp(r->key + at + 4, p->ordered + at, p->ordered_len - at) == 0;
}

/* The variants of the key a posting names that lie under the prefix; stale when none is left. */
static int prefix_resolve(void *vctx, suc_cache *c, MDB_txn *txn, const uint8_t *posting, size_t len,
                          suc_ikey_list *targets, int *stale, uint64_t *records_read, suc_error *err) {
    prefix_purge *p = vctx;
    /* A whole posting sorts by its whole key: one outside the prefix names no target. */
    if (len < SUC_POSTING_MAX && (len - 2 < p->ordered_len || memcmp(posting + 2, p->ordered, p->ordered_len) != 0))
        return SUC_OK;
    uint8_t hash[SUC_KEY_HASH_LEN];
    if (!posting_key_hash(posting, len, hash)) return SUC_OK;
    MDB_cursor *cur;
    int mrc = mdb_cursor_open(txn, c->dbi_main, &cur), rc = SUC_OK, found = 0;
    if (mrc) return suc_fail_mdb(err, "mdb_cursor_open(main)", mrc);
    MDB_val k = {SUC_KEY_HASH_LEN, hash}, v;
    for (mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); mrc == 0 && !rc;
         mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != SUC_IKEY_LEN || memcmp(k.mv_data, hash, SUC_KEY_HASH_LEN) != 0) break;
        ++*records_read;
        suc_record r;
        if (suc_record_decode(v.mv_data, v.mv_size, &r) != SUC_OK) continue; /* another release's */
        found = 1;
        if (key_under(p, &r)) rc = suc_ikey_list_add(targets, k.mv_data, err);
    }
    mdb_cursor_close(cur);
    if (!rc && mrc && mrc != MDB_NOTFOUND) rc = suc_fail_mdb(err, "mdb_cursor_get(main)", mrc);
    if (!rc && !found) *stale = 1;
    return rc;
}

int suc_purge_url_prefix(suc_cache *c, const void *partition, size_t partition_len, const void *method,
                         size_t method_len, const void *url_prefix, size_t url_prefix_len, uint32_t flags,
                         suc_purge_report *out, suc_error *err) {
    if (out) memset(out, 0, sizeof *out);
    int rc = suc_cache_check_fork(c, err);
    if (rc) return rc;
    size_t ordered_len = 2 + 4 + partition_len + 4 + method_len + url_prefix_len;
    if ((partition_len && !partition) || !method || method_len == 0 || (url_prefix_len && !url_prefix) ||
        partition_len > PREFIX_FIELD_MAX || method_len > PREFIX_FIELD_MAX || url_prefix_len > PREFIX_FIELD_MAX)
        return suc_fail(err, SUC_EINVAL, "suc_purge_url_prefix", 0, 0,
                        "a method, and a partition and prefix of at most %d bytes each", PREFIX_FIELD_MAX);
    uint8_t *buf = malloc(2 + ordered_len);
    if (!buf) return suc_fail(err, SUC_ENOMEM, "malloc(purge)", ENOMEM, 0, "out of memory");
    uint8_t *o = buf + 2;
    memcpy(buf, posting_kind, 2);
    o[0] = 'K', o[1] = 1;
    put_be32(o + 2, (uint32_t)partition_len);
    if (partition_len) memcpy(o + 6, partition, partition_len);
    put_be32(o + 6 + partition_len, (uint32_t)method_len);
    memcpy(o + 10 + partition_len, method, method_len);
    if (url_prefix_len) memcpy(o + 10 + partition_len + method_len, url_prefix, url_prefix_len);
    prefix_purge ctx = {o, ordered_len};
    /* Cut postings keep ORDER_CUT bytes of the ordered key: a longer prefix ranges over those
     * and is checked against each record. */
    size_t range = 2 + (ordered_len < ORDER_CUT ? ordered_len : ORDER_CUT);
    suc_posting_purge spec = {buf, range, (flags & SUC_PURGE_SOFT) != 0, prefix_resolve, &ctx};
    rc = suc_purge_postings(c, &spec, out, err);
    free(buf);
    return rc;
}

int suc_key_order_state(suc_cache *c, int *out_kept, int *out_complete, suc_error *err) {
    *out_kept = 0;
    *out_complete = 0;
    int rc = suc_cache_check_fork(c, err);
    if (rc) return rc;
    MDB_txn *txn;
    if ((rc = suc_rtxn_begin(c, &txn, err))) return rc;
    MDB_val k = {sizeof count_key, (void *)count_key}, v;
    uint64_t entries = 0;
    if (mdb_get(txn, c->dbi_meta, &k, &v) == 0 && v.mv_size == 8) {
        *out_kept = 1;
        uint64_t counted = suc_get_u64(v.mv_data);
        suc_meta_get(c, txn, "entries", &entries);
        *out_complete = counted == entries;
    }
    suc_rtxn_end(c, txn);
    return SUC_OK;
}

/* ---- verification ------------------------------------------------------------------- */

#define CHECK_BATCH 1000

/* Records → postings: the records of this release with a URL-layout key whose posting is
 * missing, CHECK_BATCH records per read transaction (a store writes both in one commit, so
 * each batch sees them consistent). */
static int count_missing_postings(suc_cache *c, uint64_t *missing, suc_error *err) {
    uint8_t last[SUC_IKEY_LEN];
    int have_last = 0, rc = SUC_OK;
    for (size_t seen = CHECK_BATCH; !rc && seen == CHECK_BATCH;) {
        MDB_txn *txn;
        if ((rc = suc_rtxn_begin(c, &txn, err))) break;
        MDB_cursor *cur;
        int mrc = mdb_cursor_open(txn, c->dbi_main, &cur);
        if (mrc) {
            suc_rtxn_end(c, txn);
            return suc_fail_mdb(err, "mdb_cursor_open(main)", mrc);
        }
        MDB_val k = {SUC_IKEY_LEN, last}, v;
        mrc = have_last ? mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE) : mdb_cursor_get(cur, &k, &v, MDB_FIRST);
        if (mrc == 0 && have_last && k.mv_size == SUC_IKEY_LEN && !memcmp(k.mv_data, last, SUC_IKEY_LEN))
            mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
        for (seen = 0; mrc == 0 && seen < CHECK_BATCH; mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT), seen++) {
            if (k.mv_size != SUC_IKEY_LEN) continue;
            memcpy(last, k.mv_data, SUC_IKEY_LEN);
            have_last = 1;
            suc_record r;
            uint8_t posting[SUC_POSTING_MAX];
            if (suc_record_decode(v.mv_data, v.mv_size, &r) != SUC_OK) continue; /* verify counts those */
            size_t n = posting_make(r.key, r.key_len, k.mv_data, posting);
            MDB_val pk = {n, posting}, pv;
            if (n && mdb_get(txn, c->dbi_meta, &pk, &pv) == MDB_NOTFOUND) ++*missing;
        }
        if (mrc && mrc != MDB_NOTFOUND) rc = suc_fail_mdb(err, "mdb_cursor_get(main)", mrc);
        mdb_cursor_close(cur);
        suc_rtxn_end(c, txn);
    }
    return rc;
}

/* Whether some record of this release carries the posting `posting` (a stale posting names a
 * key no longer stored, or a key whose record would make another posting). */
static int posting_is_live(suc_cache *c, MDB_txn *txn, const uint8_t *posting, size_t len, int *live,
                           suc_error *err) {
    *live = 0;
    uint8_t hash[SUC_KEY_HASH_LEN];
    if (!posting_key_hash(posting, len, hash)) return SUC_OK;
    MDB_cursor *cur;
    int mrc = mdb_cursor_open(txn, c->dbi_main, &cur);
    if (mrc) return suc_fail_mdb(err, "mdb_cursor_open(main)", mrc);
    MDB_val k = {SUC_KEY_HASH_LEN, hash}, v;
    for (mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); mrc == 0 && !*live;
         mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != SUC_IKEY_LEN || memcmp(k.mv_data, hash, SUC_KEY_HASH_LEN) != 0) break;
        suc_record r;
        uint8_t made[SUC_POSTING_MAX];
        if (suc_record_decode(v.mv_data, v.mv_size, &r) != SUC_OK) {
            *live = 1; /* another release's record of the key: the key is stored */
            continue;
        }
        size_t n = posting_make(r.key, r.key_len, k.mv_data, made);
        *live = n == len && memcmp(made, posting, len) == 0;
    }
    mdb_cursor_close(cur);
    return mrc && mrc != MDB_NOTFOUND ? suc_fail_mdb(err, "mdb_cursor_get(main)", mrc) : SUC_OK;
}

/* Postings → records: postings that name no stored key, CHECK_BATCH per read transaction. */
static int count_stale_postings(suc_cache *c, uint64_t *stale, suc_error *err) {
    uint8_t last[SUC_POSTING_MAX];
    size_t last_len = 0;
    int rc = SUC_OK;
    for (size_t seen = CHECK_BATCH; !rc && seen == CHECK_BATCH;) {
        MDB_txn *txn;
        if ((rc = suc_rtxn_begin(c, &txn, err))) break;
        MDB_cursor *cur;
        int mrc = mdb_cursor_open(txn, c->dbi_meta, &cur);
        if (mrc) {
            suc_rtxn_end(c, txn);
            return suc_fail_mdb(err, "mdb_cursor_open(meta)", mrc);
        }
        MDB_val k = last_len ? (MDB_val){last_len, last} : (MDB_val){2, (void *)posting_kind}, v;
        mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
        if (mrc == 0 && last_len && k.mv_size == last_len && !memcmp(k.mv_data, last, last_len))
            mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
        for (seen = 0; !rc && mrc == 0 && seen < CHECK_BATCH; mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT), seen++) {
            if (k.mv_size < 2 || k.mv_size > SUC_POSTING_MAX || memcmp(k.mv_data, posting_kind, 2) != 0) {
                mrc = MDB_NOTFOUND; /* past the postings */
                seen = 0;
                break;
            }
            memcpy(last, k.mv_data, k.mv_size);
            last_len = k.mv_size;
            int live = 0;
            rc = posting_is_live(c, txn, k.mv_data, k.mv_size, &live, err);
            if (!rc && !live) ++*stale;
        }
        if (!rc && mrc && mrc != MDB_NOTFOUND) rc = suc_fail_mdb(err, "mdb_cursor_get(meta)", mrc);
        mdb_cursor_close(cur);
        suc_rtxn_end(c, txn);
    }
    return rc;
}

static int rebuild_apply(suc_cache *c, MDB_txn *txn, void *vctx, suc_error *err) {
    (void)vctx;
    return order_rebuild(c, txn, err);
}

/* Postings missing for stored keys plus postings naming no stored key, when the directory keeps a
 * complete URL order; fix writes them again from the records (here when records of another
 * release keep the recount from running). */
static int order_check(suc_cache *c, suc_check *chk, suc_error *err) {
    uint64_t *mismatches = &chk->report->key_order_mismatches;
    *mismatches = 0;
    int kept_before = 0, complete_before = 0, kept_after = 0, complete_after = 0;
    int rc = suc_key_order_state(c, &kept_before, &complete_before, err);
    if (rc || !kept_before || !complete_before) return rc; /* incomplete: purges walk, nothing to trust */
    uint64_t found = 0;
    if ((rc = count_missing_postings(c, &found, err)) || (rc = count_stale_postings(c, &found, err))) return rc;
    /* An earlier release that stored meanwhile leaves records without postings: the URL order
     * is then incomplete (purges walk), not damaged. */
    if ((rc = suc_key_order_state(c, &kept_after, &complete_after, err))) return rc;
    if (kept_after && complete_after) *mismatches = found;
    if (!chk->fix || !*mismatches) return SUC_OK;
    chk->report->repaired += *mismatches;
    return chk->foreign_records ? suc_write_txn(c, rebuild_apply, NULL, NULL, err) : SUC_OK;
}

const suc_secondary suc_key_order_secondary = {
    .name = "key order", .on_put = order_put, .on_delete = order_delete, .on_count = order_count,
    .check = order_check, .rebuild = order_rebuild,
};
