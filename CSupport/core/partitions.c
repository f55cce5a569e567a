/*
 * partitions.c — per-partition counters and byte quotas, kept in the index.
 *
 * Why in `meta`, under 0x00-prefixed keys: every release that rewrites the index copies `meta`
 * whole and reads it only by name, so these keys survive an earlier release's compaction (a new
 * table would be dropped by it), and no counter name can take them (docs/Formats.md, "Tags and
 * soft purge", "Partition counters and quotas").
 *
 *     0x00 'P'                                 u64 1: the counters below were counted (marker)
 *     0x00 'P' ‖ SHA-256(partition)[0..16]     counters (PART_FIXED bytes) ‖ the partition name
 *     0x00 'U' ‖ SHA-256(partition)[0..16] ‖ time ‖ ikey    "" : last-use order of a partition
 *                                              with a quota (only those), oldest first
 *
 * The counters change in the same transaction as every put and removal (suc_index_put and
 * suc_index_delete call suc_partition_account), so they are exact at every commit, as the
 * directory's own counters are. Bytes are counted as the capacity counts them: record bytes
 * plus block-rounded body files (docs/Capacity.md), what `du` shows for the entries.
 */
#include "index.h"
#include "os.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Counter value: entries, record bytes, file bytes, body bytes, stored bytes, quota (0 = none),
 * then the name. */
#define PART_FIXED SUC_PART_VALUE_FIXED
#define USE_KEY_LEN (SUC_PART_KEY_LEN + SUC_TKEY_LEN)
/* Keys handled per write transaction when a quota is set, removed or enforced, so services
 * storing meanwhile wait briefly (docs/Reliability.md §4.3 rule 4). */
#define PART_BATCH 1000

static const uint8_t marker_key[2] = {0, 'P'};

/* A store hashes its partition up to three times (the quota check, the replaced entry, the new
 * one), and a process mostly stores into the same few partitions: the last short name's key is
 * kept per thread (a SHA-256 is ~1,000 instructions, a fifth of what the counters cost a store). */
#define MEMO_NAME_MAX 64
static __thread struct {
    size_t len;
    int valid;
    uint8_t name[MEMO_NAME_MAX];
    uint8_t key[SUC_PART_KEY_LEN];
} memo;

void suc_partition_key(const void *partition, size_t len, uint8_t out[SUC_PART_KEY_LEN]) {
    if (memo.valid && memo.len == len && (len == 0 || memcmp(memo.name, partition, len) == 0)) {
        memcpy(out, memo.key, SUC_PART_KEY_LEN);
        return;
    }
    uint8_t h[32];
    suc_sha256(partition, len, h);
    out[0] = 0;
    out[1] = 'P';
    memcpy(out + 2, h, SUC_PART_KEY_LEN - 2);
    if (len <= MEMO_NAME_MAX) {
        if (len) memcpy(memo.name, partition, len);
        memo.len = len;
        memcpy(memo.key, out, SUC_PART_KEY_LEN);
        memo.valid = 1;
    }
}

static void use_key(const uint8_t pkey[SUC_PART_KEY_LEN], int64_t t, const uint8_t ikey[SUC_IKEY_LEN],
                    uint8_t out[USE_KEY_LEN]) {
    memcpy(out, pkey, SUC_PART_KEY_LEN);
    out[1] = 'U';
    suc_tkey_make(t, ikey, out + SUC_PART_KEY_LEN);
}

typedef struct part_value {
    uint64_t entries, record_bytes, file_bytes, body_bytes, stored_bytes, quota;
} part_value;

static int decode_value(const MDB_val *v, part_value *out) {
    if (v->mv_size < PART_FIXED) return 0;
    const uint8_t *p = v->mv_data;
    out->entries = suc_get_u64(p);
    out->record_bytes = suc_get_u64(p + 8);
    out->file_bytes = suc_get_u64(p + 16);
    out->body_bytes = suc_get_u64(p + 24);
    out->stored_bytes = suc_get_u64(p + 32);
    out->quota = suc_get_u64(p + 40);
    return 1;
}

/* Writes the counters of `pkey`; the name is kept from the old value or taken from `name`. An
 * empty partition without a quota leaves no key behind (stats lists live partitions only). */
static int write_value(suc_cache *c, MDB_txn *txn, const uint8_t pkey[SUC_PART_KEY_LEN], const part_value *pv,
                       const uint8_t *name, size_t name_len, suc_error *err) {
    MDB_val k = {SUC_PART_KEY_LEN, (void *)pkey};
    if (pv->entries == 0 && pv->quota == 0) {
        int mrc = suc_txn_del(c, txn, c->dbi_meta, &k);
        return mrc && mrc != MDB_NOTFOUND ? suc_fail_mdb(err, "mdb_del(partition)", mrc) : SUC_OK;
    }
    /* MDB_RESERVE: the name may point into the old value, so build into a private buffer. */
    uint8_t small[PART_FIXED + 256], *buf = small;
    if (name_len > 256 && !(buf = malloc(PART_FIXED + name_len)))
        return suc_fail(err, SUC_ENOMEM, "malloc(partition)", ENOMEM, 0, "out of memory");
    suc_put_u64(buf, pv->entries);
    suc_put_u64(buf + 8, pv->record_bytes);
    suc_put_u64(buf + 16, pv->file_bytes);
    suc_put_u64(buf + 24, pv->body_bytes);
    suc_put_u64(buf + 32, pv->stored_bytes);
    suc_put_u64(buf + 40, pv->quota);
    if (name_len) memcpy(buf + PART_FIXED, name, name_len);
    MDB_val v = {PART_FIXED + name_len, buf};
    int mrc = suc_txn_put(c, txn, c->dbi_meta, &k, &v, 0);
    if (buf != small) free(buf);
    return mrc ? suc_fail_mdb(err, "mdb_put(partition)", mrc) : SUC_OK;
}

static uint64_t add_clamped(uint64_t value, int64_t delta) {
    /* Below zero only when the counters drifted (an earlier release removed entries); verify
     * --fix recounts them. */
    return delta < 0 && (uint64_t)(-delta) > value ? 0 : value + (uint64_t)delta;
}

/* Adds `sign` times one entry's sizes to `pv`. */
static void add_entry(part_value *pv, const suc_record *r, size_t rec_len, int64_t s) {
    pv->entries = add_clamped(pv->entries, s);
    pv->record_bytes = add_clamped(pv->record_bytes, s * (int64_t)rec_len);
    pv->file_bytes = add_clamped(pv->file_bytes, s * (int64_t)suc_record_file_bytes(r, rec_len));
    pv->body_bytes = add_clamped(pv->body_bytes, s * (int64_t)r->body_size);
    pv->stored_bytes = add_clamped(pv->stored_bytes, s * (int64_t)suc_record_stored_bytes(r, rec_len));
}

static int use_key_change(suc_cache *c, MDB_txn *txn, const uint8_t pkey[SUC_PART_KEY_LEN],
                          const uint8_t ikey[SUC_IKEY_LEN], int64_t t, int put, suc_error *err) {
    uint8_t uk[USE_KEY_LEN];
    use_key(pkey, t, ikey, uk);
    MDB_val ukv = {USE_KEY_LEN, uk}, empty = {0, NULL};
    int mrc = put ? suc_txn_put(c, txn, c->dbi_meta, &ukv, &empty, 0) : suc_txn_del(c, txn, c->dbi_meta, &ukv);
    return mrc && mrc != MDB_NOTFOUND ? suc_fail_mdb(err, "mdb_put(partition use)", mrc) : SUC_OK;
}

/* One read and one write of the partition's counters for an entry `gone` and/or `added` of the
 * same partition (the caller checked), with its last-use keys when it has a quota. */
static int account_one(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN], const suc_record *gone,
                       size_t gone_len, const suc_record *added, size_t added_len, uint64_t *out_quota,
                       uint64_t *out_bytes, suc_error *err) {
    const suc_record *r = added ? added : gone;
    uint8_t pkey[SUC_PART_KEY_LEN];
    suc_partition_key(r->partition, r->partition_len, pkey);
    MDB_val k = {SUC_PART_KEY_LEN, pkey}, v;
    part_value pv = {0};
    int mrc = mdb_get(txn, c->dbi_meta, &k, &v);
    if (mrc && mrc != MDB_NOTFOUND) return suc_fail_mdb(err, "mdb_get(partition)", mrc);
    if (mrc == MDB_NOTFOUND && !added) return SUC_OK; /* not counted (drift): nothing to take */
    /* Keep the name as first written (the same bytes unless two names share a hash); copied,
     * since the write below may move the value it points into. */
    uint8_t small[256], *name = (uint8_t *)r->partition;
    size_t name_len = r->partition_len;
    if (mrc == 0 && decode_value(&v, &pv)) {
        name_len = v.mv_size - PART_FIXED;
        name = name_len <= sizeof small ? small : malloc(name_len);
        if (!name) return suc_fail(err, SUC_ENOMEM, "malloc(partition)", ENOMEM, 0, "out of memory");
        if (name_len) memcpy(name, (uint8_t *)v.mv_data + PART_FIXED, name_len);
    }
    if (gone) add_entry(&pv, gone, gone_len, -1);
    if (added) add_entry(&pv, added, added_len, 1);
    int rc = SUC_OK;
    if (pv.quota) { /* only partitions with a quota keep a last-use order of their own */
        if (gone) rc = use_key_change(c, txn, pkey, ikey, gone->last_used_ms, 0, err);
        if (!rc && added) rc = use_key_change(c, txn, pkey, ikey, added->last_used_ms, 1, err);
    }
    if (!rc) rc = write_value(c, txn, pkey, &pv, name, name_len, err);
    if (name != small && name != r->partition) free(name);
    if (out_quota) *out_quota = pv.quota;
    if (out_bytes) *out_bytes = pv.record_bytes + pv.file_bytes;
    return rc;
}

int suc_partition_replace(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN], const suc_record *gone,
                          size_t gone_len, const suc_record *added, size_t added_len, uint64_t *out_quota,
                          uint64_t *out_bytes, suc_error *err) {
    if (out_quota) *out_quota = 0;
    if (out_bytes) *out_bytes = 0;
    if (gone && added &&
        (gone->partition_len != added->partition_len ||
         (added->partition_len && memcmp(gone->partition, added->partition, added->partition_len) != 0))) {
        int rc = account_one(c, txn, ikey, gone, gone_len, NULL, 0, NULL, NULL, err);
        return rc ? rc : account_one(c, txn, ikey, NULL, 0, added, added_len, out_quota, out_bytes, err);
    }
    if (!gone && !added) return SUC_OK;
    return account_one(c, txn, ikey, gone, gone_len, added, added_len, out_quota, out_bytes, err);
}

int suc_partition_account(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN], const suc_record *r,
                          size_t rec_len, int sign, suc_error *err) {
    return sign < 0 ? suc_partition_replace(c, txn, ikey, r, rec_len, NULL, 0, NULL, NULL, err)
                    : suc_partition_replace(c, txn, ikey, NULL, 0, r, rec_len, NULL, NULL, err);
}

int suc_partition_touch(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN], const suc_record *r,
                        int64_t new_last_used_ms, int last_use_moves, suc_error *err) {
    (void)last_use_moves;
    uint8_t pkey[SUC_PART_KEY_LEN];
    suc_partition_key(r->partition, r->partition_len, pkey);
    MDB_val k = {SUC_PART_KEY_LEN, pkey}, v;
    part_value pv;
    if (mdb_get(txn, c->dbi_meta, &k, &v) || !decode_value(&v, &pv) || !pv.quota) return SUC_OK;
    uint8_t old_k[USE_KEY_LEN], new_k[USE_KEY_LEN];
    use_key(pkey, r->last_used_ms, ikey, old_k);
    use_key(pkey, new_last_used_ms, ikey, new_k);
    MDB_val ok = {USE_KEY_LEN, old_k}, nk = {USE_KEY_LEN, new_k}, empty = {0, NULL};
    int mrc = suc_txn_del(c, txn, c->dbi_meta, &ok);
    if (mrc && mrc != MDB_NOTFOUND) return suc_fail_mdb(err, "mdb_del(partition use)", mrc);
    if ((mrc = suc_txn_put(c, txn, c->dbi_meta, &nk, &empty, 0))) return suc_fail_mdb(err, "mdb_put(partition use)", mrc);
    return SUC_OK;
}

int suc_partition_any_use_keys(suc_cache *c, MDB_txn *txn) {
    MDB_cursor *cur;
    if (mdb_cursor_open(txn, c->dbi_meta, &cur)) return 1; /* cannot tell: do the work */
    uint8_t prefix[2] = {0, 'U'};
    MDB_val k = {2, prefix}, v;
    int found = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE) == 0 && k.mv_size >= 2 &&
                memcmp(k.mv_data, prefix, 2) == 0;
    mdb_cursor_close(cur);
    return found;
}

int suc_partition_quota(suc_cache *c, MDB_txn *txn, const uint8_t pkey[SUC_PART_KEY_LEN], uint64_t *out_quota,
                        uint64_t *out_bytes) {
    MDB_val k = {SUC_PART_KEY_LEN, (void *)pkey}, v;
    part_value pv = {0};
    *out_quota = *out_bytes = 0;
    int mrc = mdb_get(txn, c->dbi_meta, &k, &v);
    if (mrc) return mrc == MDB_NOTFOUND ? 0 : mrc;
    if (!decode_value(&v, &pv)) return 0;
    *out_quota = pv.quota;
    *out_bytes = pv.record_bytes + pv.file_bytes;
    return 0;
}

int suc_partition_evict(suc_cache *c, MDB_txn *txn, const uint8_t pkey[SUC_PART_KEY_LEN], uint64_t limit,
                        uint32_t max, const uint8_t *keep, suc_op *op, suc_counters *d, uint64_t *out_evicted,
                        suc_error *err) {
    uint64_t evicted = 0, quota, bytes;
    int rc = SUC_OK;
    uint8_t prefix[SUC_PART_KEY_LEN];
    memcpy(prefix, pkey, SUC_PART_KEY_LEN);
    prefix[1] = 'U';
    for (;;) {
        int mrc = suc_partition_quota(c, txn, pkey, &quota, &bytes);
        if (mrc) return suc_fail_mdb(err, "mdb_get(partition)", mrc);
        if (bytes <= limit || evicted >= max) break;
        MDB_cursor *cur;
        if ((mrc = mdb_cursor_open(txn, c->dbi_meta, &cur))) return suc_fail_mdb(err, "mdb_cursor_open(meta)", mrc);
        MDB_val k = {SUC_PART_KEY_LEN, prefix}, v;
        uint8_t uk[USE_KEY_LEN];
        mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
        int found = mrc == 0 && k.mv_size == USE_KEY_LEN && memcmp(k.mv_data, prefix, SUC_PART_KEY_LEN) == 0;
        if (found) memcpy(uk, k.mv_data, USE_KEY_LEN);
        mdb_cursor_close(cur);
        if (mrc && mrc != MDB_NOTFOUND) return suc_fail_mdb(err, "mdb_cursor_get(partition use)", mrc);
        if (!found) break; /* nothing of it left to evict that this order knows (drift) */
        if (keep && memcmp(uk + SUC_PART_KEY_LEN + 8, keep, SUC_IKEY_LEN) == 0) break; /* the entry being stored */
        rc = suc_index_delete(c, txn, uk + SUC_PART_KEY_LEN + 8, op, d, err);
        if (rc == MDB_NOTFOUND) { /* stray: its record is gone */
            MDB_val ukv = {USE_KEY_LEN, uk};
            if ((mrc = suc_txn_del(c, txn, c->dbi_meta, &ukv))) return suc_fail_mdb(err, "mdb_del(partition use)", mrc);
            rc = SUC_OK;
            continue;
        }
        if (rc) return rc;
        /* A record of another partition with a colliding hash, or another release's undecodable
         * one, would not have dropped this key: drop it so the walk moves on. */
        MDB_val ukv = {USE_KEY_LEN, uk};
        if ((mrc = suc_txn_del(c, txn, c->dbi_meta, &ukv)) && mrc != MDB_NOTFOUND)
            return suc_fail_mdb(err, "mdb_del(partition use)", mrc);
        evicted++;
    }
    d->evictions += (int64_t)evicted;
    if (op) op->removed = 0; /* evictions are not the caller's removals */
    if (out_evicted) *out_evicted = evicted;
    return SUC_OK;
}

/* ---- counting from the records (an upgraded directory; verify --fix) ------------------ */

typedef struct part_slot {
    uint8_t key[SUC_PART_KEY_LEN];
    part_value v;
    uint8_t *name; size_t name_len;
    int used;
} part_slot;

typedef struct part_table {
    part_slot *slots;
    size_t cap, count;
} part_table;

static void table_free(part_table *t) {
    for (size_t i = 0; i < t->cap; i++) free(t->slots[i].name);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

/* The slot of `key` (created, with `name`, when absent); NULL when out of memory. */
static part_slot *table_slot(part_table *t, const uint8_t key[SUC_PART_KEY_LEN], const uint8_t *name, size_t name_len) {
    if (t->count * 2 >= t->cap) {
        part_table bigger = {calloc(t->cap ? t->cap * 2 : 64, sizeof(part_slot)), t->cap ? t->cap * 2 : 64, 0};
        if (!bigger.slots) return NULL;
        for (size_t i = 0; i < t->cap; i++) {
            if (!t->slots[i].used) continue;
            size_t j = suc_get_u64(t->slots[i].key + 2) % bigger.cap;
            while (bigger.slots[j].used) j = (j + 1) % bigger.cap;
            bigger.slots[j] = t->slots[i];
            bigger.count++;
        }
        free(t->slots);
        *t = bigger;
    }
    size_t j = suc_get_u64(key + 2) % t->cap;
    while (t->slots[j].used && memcmp(t->slots[j].key, key, SUC_PART_KEY_LEN) != 0) j = (j + 1) % t->cap;
    part_slot *s = &t->slots[j];
    if (!s->used) {
        s->used = 1;
        memcpy(s->key, key, SUC_PART_KEY_LEN);
        if (name_len && !(s->name = malloc(name_len))) return NULL;
        if (name_len) memcpy(s->name, name, name_len);
        s->name_len = name_len;
        t->count++;
    }
    return s;
}

/* Deletes every meta key of `len` bytes starting with 0x00 `kind`, a chunk of keys at a time
 * (a cursor delete while walking is easy to get wrong at a page's end). */
static int delete_prefixed(suc_cache *c, MDB_txn *txn, uint8_t kind, size_t len, suc_error *err) {
    enum { CHUNK = 1024 };
    uint8_t *keys = malloc((size_t)CHUNK * len);
    if (!keys) return suc_fail(err, SUC_ENOMEM, "malloc(partition keys)", ENOMEM, 0, "out of memory");
    const uint8_t prefix[2] = {0, kind};
    int mrc = 0;
    for (size_t n = CHUNK; n == CHUNK && !mrc;) {
        MDB_cursor *cur;
        if ((mrc = mdb_cursor_open(txn, c->dbi_meta, &cur))) break;
        MDB_val k = {2, (void *)prefix}, v;
        n = 0;
        for (mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); mrc == 0 && n < CHUNK;
             mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
            if (k.mv_size < 2 || memcmp(k.mv_data, prefix, 2) != 0) break;
            if (k.mv_size == len) memcpy(keys + n++ * len, k.mv_data, len);
        }
        mdb_cursor_close(cur);
        if (mrc == MDB_NOTFOUND) mrc = 0;
        for (size_t i = 0; !mrc && i < n; i++) {
            MDB_val dk = {len, keys + i * len};
            if ((mrc = suc_txn_del(c, txn, c->dbi_meta, &dk)) == MDB_NOTFOUND) mrc = 0;
        }
    }
    free(keys);
    return mrc ? suc_fail_mdb(err, "mdb_del(meta)", mrc) : SUC_OK;
}

int suc_partitions_recount(suc_cache *c, MDB_txn *txn, suc_error *err) {
    part_table t = {0};
    int rc = SUC_OK;
    MDB_cursor *cur;
    int mrc = mdb_cursor_open(txn, c->dbi_meta, &cur);
    if (mrc) return suc_fail_mdb(err, "mdb_cursor_open(meta)", mrc);
    /* The quotas stay: they are the operator's, not counts. */
    MDB_val k = {2, (void *)marker_key}, v;
    for (mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); mrc == 0; mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size < 2 || memcmp(k.mv_data, marker_key, 2) != 0) break;
        part_value pv;
        if (k.mv_size != SUC_PART_KEY_LEN || !decode_value(&v, &pv) || !pv.quota) continue;
        part_slot *s = table_slot(&t, k.mv_data, (uint8_t *)v.mv_data + PART_FIXED, v.mv_size - PART_FIXED);
        if (!s) { rc = suc_fail(err, SUC_ENOMEM, "recount(partitions)", ENOMEM, 0, "out of memory"); break; }
        s->v.quota = pv.quota;
    }
    mdb_cursor_close(cur);
    if (!rc) rc = delete_prefixed(c, txn, 'U', USE_KEY_LEN, err);
    if (rc) goto out;
    if ((mrc = mdb_cursor_open(txn, c->dbi_main, &cur))) {
        rc = suc_fail_mdb(err, "mdb_cursor_open", mrc);
        goto out;
    }
    for (mrc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); mrc == 0;
         mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        suc_record r;
        if (k.mv_size != SUC_IKEY_LEN || suc_record_decode(v.mv_data, v.mv_size, &r) != SUC_OK) continue;
        uint8_t pkey[SUC_PART_KEY_LEN];
        suc_partition_key(r.partition, r.partition_len, pkey);
        part_slot *s = table_slot(&t, pkey, r.partition, r.partition_len);
        if (!s) { rc = SUC_ENOMEM; break; }
        s->v.entries++;
        s->v.record_bytes += v.mv_size;
        s->v.file_bytes += suc_record_file_bytes(&r, v.mv_size);
        s->v.body_bytes += r.body_size;
        s->v.stored_bytes += suc_record_stored_bytes(&r, v.mv_size);
        if (s->v.quota) {
            uint8_t uk[USE_KEY_LEN];
            use_key(pkey, r.last_used_ms, k.mv_data, uk);
            MDB_val ukv = {USE_KEY_LEN, uk}, empty = {0, NULL};
            if ((mrc = suc_txn_put(c, txn, c->dbi_meta, &ukv, &empty, 0))) break;
        }
    }
    mdb_cursor_close(cur);
    if (rc == SUC_ENOMEM) {
        rc = suc_fail(err, SUC_ENOMEM, "recount(partitions)", ENOMEM, 0, "out of memory");
        goto out;
    }
    if (!rc && mrc && mrc != MDB_NOTFOUND) {
        rc = suc_fail_mdb(err, "recount(partitions)", mrc);
        goto out;
    }
    if (!rc) rc = delete_prefixed(c, txn, 'P', SUC_PART_KEY_LEN, err);
    for (size_t i = 0; !rc && i < t.cap; i++)
        if (t.slots[i].used) rc = write_value(c, txn, t.slots[i].key, &t.slots[i].v, t.slots[i].name, t.slots[i].name_len, err);
    if (!rc) {
        uint8_t one[8];
        suc_put_u64(one, 1);
        MDB_val mk = {2, (void *)marker_key}, mv = {8, one};
        if ((mrc = suc_txn_put(c, txn, c->dbi_meta, &mk, &mv, 0))) rc = suc_fail_mdb(err, "mdb_put(partition marker)", mrc);
    }
out:
    table_free(&t);
    return rc;
}

int suc_partitions_counted(suc_cache *c, MDB_txn *txn) {
    MDB_val k = {2, (void *)marker_key}, v;
    return mdb_get(txn, c->dbi_meta, &k, &v) == 0;
}

/* ---- reading them (stats) ------------------------------------------------------------- */

int suc_partitions_list(suc_cache *c, suc_partition_fn fn, void *ctx, int *out_exact, suc_error *err) {
    int rc = suc_cache_check_fork(c, err);
    if (rc) return rc;
    if (!fn) return suc_fail(err, SUC_EINVAL, "suc_partitions_list", 0, 0, "fn is required");
    MDB_txn *txn;
    if ((rc = suc_rtxn_begin(c, &txn, err))) return rc;
    MDB_cursor *cur;
    int mrc = mdb_cursor_open(txn, c->dbi_meta, &cur);
    if (mrc) {
        suc_rtxn_end(c, txn);
        return suc_fail_mdb(err, "mdb_cursor_open(meta)", mrc);
    }
    uint64_t entries = 0, records = 0;
    MDB_val k = {2, (void *)marker_key}, v;
    int stopped = 0;
    for (mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); mrc == 0; mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size < 2 || memcmp(k.mv_data, marker_key, 2) != 0) break;
        part_value pv;
        if (k.mv_size != SUC_PART_KEY_LEN || !decode_value(&v, &pv)) continue;
        entries += pv.entries;
        records += pv.record_bytes;
        if (stopped) continue;
        suc_partition_info info = {(const uint8_t *)v.mv_data + PART_FIXED, v.mv_size - PART_FIXED, pv.entries,
                                   pv.record_bytes + pv.file_bytes, pv.body_bytes, pv.stored_bytes, pv.quota};
        stopped = fn(ctx, &info) != 0;
    }
    mdb_cursor_close(cur);
    if (mrc && mrc != MDB_NOTFOUND) rc = suc_fail_mdb(err, "mdb_cursor_get(meta)", mrc);
    if (!rc && out_exact) {
        /* Every release keeps the directory's entries and record bytes; only this one keeps the
         * partitions': a difference means another release (or an undecodable record) changed
         * entries since they were counted. */
        uint64_t all_entries = 0, all_records = 0;
        suc_meta_get(c, txn, "entries", &all_entries);
        suc_meta_get(c, txn, "record_bytes", &all_records);
        *out_exact = !stopped && suc_partitions_counted(c, txn) && entries == all_entries && records == all_records;
    }
    suc_rtxn_end(c, txn);
    return rc;
}

int suc_partitions_check(suc_cache *c, int *out_match, suc_error *err) {
    *out_match = 0;
    MDB_txn *txn;
    int rc = suc_rtxn_begin(c, &txn, err);
    if (rc) return rc;
    /* One snapshot, so stores meanwhile cannot look like a mismatch. */
    part_table t = {0};
    MDB_cursor *cur;
    int match = suc_partitions_counted(c, txn), mrc = mdb_cursor_open(txn, c->dbi_main, &cur);
    if (mrc) {
        suc_rtxn_end(c, txn);
        return suc_fail_mdb(err, "mdb_cursor_open", mrc);
    }
    MDB_val k, v;
    for (mrc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); mrc == 0; mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        suc_record r;
        if (k.mv_size != SUC_IKEY_LEN || suc_record_decode(v.mv_data, v.mv_size, &r) != SUC_OK) continue;
        uint8_t pkey[SUC_PART_KEY_LEN];
        suc_partition_key(r.partition, r.partition_len, pkey);
        part_slot *s = table_slot(&t, pkey, NULL, 0);
        if (!s) {
            mrc = ENOMEM;
            break;
        }
        s->v.entries++;
        s->v.record_bytes += v.mv_size;
        s->v.file_bytes += suc_record_file_bytes(&r, v.mv_size);
        s->v.body_bytes += r.body_size;
        s->v.stored_bytes += suc_record_stored_bytes(&r, v.mv_size);
    }
    mdb_cursor_close(cur);
    if (mrc == ENOMEM) rc = suc_fail(err, SUC_ENOMEM, "check(partitions)", ENOMEM, 0, "out of memory");
    else if (mrc != MDB_NOTFOUND) rc = suc_fail_mdb(err, "mdb_cursor_get", mrc);
    /* Every counted partition must equal its sums, and every summed one must be counted. */
    size_t counted = 0;
    if (!rc && !(mrc = mdb_cursor_open(txn, c->dbi_meta, &cur))) {
        k.mv_size = 2;
        k.mv_data = (void *)marker_key;
        for (mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); mrc == 0 && match; mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
            if (k.mv_size < 2 || memcmp(k.mv_data, marker_key, 2) != 0) break;
            part_value pv;
            if (k.mv_size != SUC_PART_KEY_LEN || !decode_value(&v, &pv) || pv.entries == 0) continue;
            part_slot *s = table_slot(&t, k.mv_data, NULL, 0);
            match = s && s->v.entries == pv.entries && s->v.record_bytes == pv.record_bytes &&
                    s->v.file_bytes == pv.file_bytes && s->v.body_bytes == pv.body_bytes && s->v.stored_bytes == pv.stored_bytes;
            counted++;
        }
        mdb_cursor_close(cur);
    }
    suc_rtxn_end(c, txn);
    *out_match = !rc && match && counted == t.count;
    table_free(&t);
    return rc;
}

/* ---- as a secondary structure of the index (secondaries.c) ----------------------------- */

static int partitions_put(suc_cache *c, MDB_txn *txn, suc_change *ch, suc_error *err) {
    return suc_partition_replace(c, txn, ch->ikey, ch->old, ch->old_len, ch->new_rec, ch->new_len, &ch->part_quota,
                                 &ch->part_bytes, err);
}

static int partitions_delete(suc_cache *c, MDB_txn *txn, suc_change *ch, suc_error *err) {
    return suc_partition_replace(c, txn, ch->ikey, ch->old, ch->old_len, NULL, 0, NULL, NULL, err);
}

/* Only this release keeps the counters, so records of another release (or unreadable ones,
 * which cannot be told from those) leave nothing to compare. */
static int partitions_verify(suc_cache *c, suc_check *chk, suc_error *err) {
    chk->report->partition_counters_match = 1;
    if (chk->foreign_records || chk->unreadable_records) return SUC_OK;
    return suc_partitions_check(c, &chk->report->partition_counters_match, err);
}

const suc_secondary suc_partitions_secondary = {
    .name = "partitions", .on_put = partitions_put, .on_delete = partitions_delete,
    .wants_touches = suc_partition_any_use_keys, .on_touch = suc_partition_touch, .check = partitions_verify,
    .rebuild = suc_partitions_recount, .follows_last_use = 1,
};
