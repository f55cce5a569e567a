/*
 * index.c — the index's tables and the one way each entry changes in them: put, delete and
 * touch, with the main table's counters; the record read the lookups (lookup.c) are built on.
 *
 * Tables (one LMDB environment, index.lmdb or index.g<N>.lmdb):
 *   main     ikey (48 bytes) → record (record.c)
 *   meta     name → u64: format, seq (record versions), entries, body/stored/record bytes
 * beside the secondary structures registered in secondaries.c (the time orders, postings and
 * partition counters), which every put, delete and touch here updates through that registry.
 * All change in the same transaction, so the counters are exact at every commit.
 */
#include "index.h"
#include "os.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

int suc_op_add_dead(suc_op *op, const uint8_t id[SUC_BODY_ID_LEN]) {
    if (op->dead_count == op->dead_cap) {
        size_t cap = op->dead_cap ? op->dead_cap * 2 : 4;
        uint8_t *p = realloc(op->dead_ids, cap * SUC_BODY_ID_LEN);
        if (!p) return SUC_ENOMEM;
        op->dead_ids = p;
        op->dead_cap = cap;
    }
    memcpy(op->dead_ids + op->dead_count * SUC_BODY_ID_LEN, id, SUC_BODY_ID_LEN);
    op->dead_count++;
    return SUC_OK;
}

void suc_op_release(suc_op *op) {
    free(op->refreshed);
    op->refreshed = NULL;
    free(op->dead_ids);
    op->dead_ids = NULL;
    op->dead_count = op->dead_cap = 0;
}

/* Adds (sign 1) or takes (sign -1) one entry's sizes to the counters; `r` NULL: undecodable. */
static void count_entry(suc_counters *d, const suc_record *r, size_t len, int sign) {
    d->entries += sign;
    d->record_bytes += sign * (int64_t)len;
    if (!r) return;
    d->body_bytes += sign * (int64_t)r->body_size;
    d->stored_bytes += sign * (int64_t)suc_record_stored_bytes(r, len);
    d->file_bytes += sign * (int64_t)suc_record_file_bytes(r, len);
}

/* Deletes the entry whose record `v` was just read at `ikey`, with what the secondary
 * structures keep of it. */
static int delete_found(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN], MDB_val v, suc_op *op,
                        suc_counters *delta, suc_error *err) {
    MDB_val k = {SUC_IKEY_LEN, (void *)ikey};
    int mrc;
    suc_record r;
    size_t len = v.mv_size;
    int decoded = suc_record_decode(v.mv_data, len, &r) == SUC_OK;
    count_entry(delta, decoded ? &r : NULL, len, -1);
    if (decoded) {
        suc_change ch = {.ikey = ikey, .old = &r, .old_len = len};
        int rc = suc_secondaries_delete(c, txn, &ch, err);
        if (rc) return rc;
        if (!(r.flags & SUC_REC_INLINE) && op && suc_op_add_dead(op, r.body_id))
            return suc_fail(err, SUC_ENOMEM, "realloc(dead)", ENOMEM, 0, "out of memory");
    }
    /* An undecodable record's secondary keys and body file cannot be found from it; verify and
     * the compactor sweep both (stray time-order keys, stale postings, orphan files). */
    if ((mrc = suc_txn_del(c, txn, c->dbi_main, &k))) return suc_fail_mdb(err, "mdb_del(main)", mrc);
    if (op) op->removed++;
    return SUC_OK;
}

int suc_index_record_get(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN], suc_record *r, MDB_val *raw) {
    MDB_val k = {SUC_IKEY_LEN, (void *)ikey}, v;
    int mrc = mdb_get(txn, c->dbi_main, &k, &v);
    if (mrc) return mrc;
    if (raw) *raw = v;
    return suc_record_decode(v.mv_data, v.mv_size, r) == SUC_OK ? 0 : SUC_ECORRUPT;
}

int suc_index_delete(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN], suc_op *op,
                     suc_counters *delta, suc_error *err) {
    MDB_val k = {SUC_IKEY_LEN, (void *)ikey}, v;
    int mrc = mdb_get(txn, c->dbi_main, &k, &v);
    if (mrc == MDB_NOTFOUND) return MDB_NOTFOUND;
    if (mrc) return suc_fail_mdb(err, "mdb_get(main)", mrc);
    return delete_found(c, txn, ikey, v, op, delta, err);
}

/* Collects the ikeys of every record under the 32-byte key hash whose full key is `key`. */
int suc_index_variants(suc_cache *c, MDB_txn *txn, const uint8_t prefix[SUC_KEY_HASH_LEN],
                            const uint8_t *key, size_t key_len, uint8_t **out, size_t *count,
                            suc_error *err) {
    MDB_cursor *cur;
    int mrc = mdb_cursor_open(txn, c->dbi_main, &cur);
    if (mrc) return suc_fail_mdb(err, "mdb_cursor_open", mrc);
    uint8_t *list = NULL;
    size_t n = 0, cap = 0;
    int rc = SUC_OK;
    MDB_val k = {SUC_KEY_HASH_LEN, (void *)prefix}, v;
    for (mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); mrc == 0;
         mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != SUC_IKEY_LEN || memcmp(k.mv_data, prefix, SUC_KEY_HASH_LEN) != 0) break;
        suc_record r;
        if (suc_record_decode(v.mv_data, v.mv_size, &r) == SUC_OK &&
            (r.key_len != key_len || memcmp(r.key, key, key_len) != 0))
            continue; /* a hash collision: someone else's entry */
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            uint8_t *p = realloc(list, cap * SUC_IKEY_LEN);
            if (!p) {
                rc = suc_fail(err, SUC_ENOMEM, "realloc(variants)", ENOMEM, 0, "out of memory");
                break;
            }
            list = p;
        }
        memcpy(list + n * SUC_IKEY_LEN, k.mv_data, SUC_IKEY_LEN);
        n++;
    }
    if (rc == SUC_OK && mrc && mrc != MDB_NOTFOUND) rc = suc_fail_mdb(err, "mdb_cursor_get", mrc);
    mdb_cursor_close(cur);
    if (rc) {
        free(list);
        return rc;
    }
    *out = list;
    *count = n;
    return SUC_OK;
}

int suc_index_put(suc_cache *c, MDB_txn *txn, suc_op *op, suc_counters *d, uint64_t *seq,
                  suc_error *err) {
    op->version = ++*seq;
    suc_record_patch_version(op->record, op->version);
    suc_record r, old;
    if (suc_record_decode(op->record, op->record_len, &r))
        return suc_fail(err, SUC_EINVAL, "record", 0, 0, "internal: record does not decode");
    /* The entry it replaces: its secondary keys change with the new one's in one pass (the old
     * record is read before anything changes the page it lies in). */
    MDB_val k = {SUC_IKEY_LEN, op->ikey}, v0;
    int mrc = suc_index_record_get(c, txn, op->ikey, &old, &v0), rc;
    if (mrc && mrc != MDB_NOTFOUND && mrc != SUC_ECORRUPT) return suc_fail_mdb(err, "mdb_get(main)", mrc);
    int had_old = mrc == 0;
    suc_change ch = {.ikey = op->ikey, .new_rec = &r, .new_len = op->record_len};
    if (had_old) ch.old = &old, ch.old_len = v0.mv_size;
    if ((rc = suc_secondaries_put(c, txn, &ch, err))) return rc;
    op->part_quota = ch.part_quota;
    op->part_bytes = ch.part_bytes;
    if (mrc != MDB_NOTFOUND) { /* the replaced entry's counters and body file (a replacement is not a removal) */
        count_entry(d, had_old ? &old : NULL, v0.mv_size, -1);
        /* A refreshed head keeps its body file: the new record names it too. */
        int same_file = had_old && !(r.flags & SUC_REC_INLINE) && !memcmp(old.body_id, r.body_id, SUC_BODY_ID_LEN);
        if (had_old && !(old.flags & SUC_REC_INLINE) && !same_file && suc_op_add_dead(op, old.body_id))
            return suc_fail(err, SUC_ENOMEM, "realloc(dead)", ENOMEM, 0, "out of memory");
    }
    op->removed = 0;
    MDB_val v = {op->record_len, op->record};
    if ((mrc = suc_txn_put(c, txn, c->dbi_main, &k, &v, 0))) return suc_fail_mdb(err, "mdb_put(main)", mrc);
    count_entry(d, &r, op->record_len, 1);
    d->stores += 1;
    return SUC_OK;
}

size_t suc_index_tables(const suc_cache *c, const char *names[SUC_INDEX_TABLES_MAX], MDB_dbi dbis[SUC_INDEX_TABLES_MAX]) {
    names[0] = "main", dbis[0] = c->dbi_main;
    size_t n = 1 + suc_secondaries_tables(c, names + 1, dbis + 1, SUC_INDEX_TABLES_MAX - 2);
    names[n] = "meta", dbis[n] = c->dbi_meta;
    return n + 1;
}

/* ---- reading one record (lookup.c builds the lookups on these) ---------------------- */

/* Copies the record of ikey out of a short read transaction. */
int suc_index_read_record(suc_cache *c, const uint8_t ikey[SUC_IKEY_LEN], uint8_t **out, size_t *len,
                          int *counts_every_hit, suc_error *err) {
    MDB_txn *txn;
    int rc = suc_rtxn_begin(c, &txn, err);
    if (rc) return rc;
    MDB_val k = {SUC_IKEY_LEN, (void *)ikey}, v;
    int mrc = mdb_get(txn, c->dbi_main, &k, &v);
    if (mrc == 0) {
        uint8_t *copy = suc_os_malloc(v.mv_size);
        if (copy) {
            memcpy(copy, v.mv_data, v.mv_size);
            *out = copy;
            *len = v.mv_size;
            if (counts_every_hit) *counts_every_hit = suc_secondaries_count_every_hit(c, txn, ikey, &v);
        } else {
            rc = suc_fail(err, SUC_ENOMEM, "malloc(record)", ENOMEM, 0, "out of memory");
        }
    } else if (mrc == MDB_NOTFOUND) {
        rc = suc_fail(err, SUC_ENOTFOUND, "mdb_get", 0, mrc, "no such entry");
    } else {
        rc = suc_fail_mdb(err, "mdb_get(main)", mrc);
    }
    suc_rtxn_end(c, txn);
    return rc;
}

/* ---- touches ------------------------------------------------------------------------ */

void suc_touch_queue(suc_cache *c, const uint8_t ikey[SUC_IKEY_LEN], int64_t when_ms) {
    pthread_mutex_lock(&c->touch_mu);
    if (c->touches && c->touch_count < SUC_TOUCH_MAX) {
        /* Past the cap new touches are dropped: last-use is an eviction hint, not data. */
        memcpy(c->touches[c->touch_count].ikey, ikey, SUC_IKEY_LEN);
        c->touches[c->touch_count].when_ms = when_ms;
        c->touch_count++;
    }
    pthread_mutex_unlock(&c->touch_mu);
}

int suc_touch_apply(suc_cache *c, MDB_txn *txn, suc_touch *list, size_t count, suc_error *err) {
    if (!count) return SUC_OK;
    uint8_t *copy = NULL;
    size_t copy_cap = 0;
    int rc = SUC_OK;
    unsigned orders = suc_secondaries_touch_begin(c, txn);
    /* Under S3-FIFO without quotas no row sorts by last use: a touch raises a counter and leaves
     * the record as it is, the write LRU pays for every hit it saves. */
    int moves_last_use = suc_secondaries_touch_moves_last_use(orders);
    for (size_t i = 0; i < count; i++) {
        MDB_val k = {SUC_IKEY_LEN, list[i].ikey}, v;
        suc_record r;
        int mrc = suc_index_record_get(c, txn, list[i].ikey, &r, &v);
        if (mrc == MDB_NOTFOUND || mrc == SUC_ECORRUPT) continue;
        if (mrc) {
            rc = suc_fail_mdb(err, "mdb_get(touch)", mrc);
            break;
        }
        if (r.last_used_ms >= list[i].when_ms) continue;
        if (v.mv_size > copy_cap) {
            uint8_t *p = realloc(copy, v.mv_size);
            if (!p) {
                rc = suc_fail(err, SUC_ENOMEM, "realloc(touch)", ENOMEM, 0, "out of memory");
                break;
            }
            copy = p;
            copy_cap = v.mv_size;
        }
        memcpy(copy, v.mv_data, v.mv_size);
        if ((rc = suc_secondaries_touch(c, txn, orders, list[i].ikey, &r, list[i].when_ms, err))) break;
        if (!moves_last_use) continue;
        suc_record_patch_last_used(copy, list[i].when_ms);
        MDB_val nv = {v.mv_size, copy};
        if ((mrc = suc_txn_put(c, txn, c->dbi_main, &k, &nv, 0))) {
            rc = suc_fail_mdb(err, "mdb_put(touch)", mrc);
            break;
        }
    }
    free(copy);
    return rc;
}

/* ---- counters ---- */

int suc_meta_add_counters(suc_cache *c, MDB_txn *txn, const suc_counters *d, suc_error *err) {
    static const char *names[10] = {"entries", "body_bytes", "stored_bytes", "record_bytes", "evictions",
                                    "corrupt_purges", "stores", "hits", "misses", "file_bytes"};
    const int64_t deltas[10] = {d->entries, d->body_bytes, d->stored_bytes, d->record_bytes, d->evictions,
                                d->corrupt_purges, d->stores, d->hits, d->misses, d->file_bytes};
    int rc0 = suc_secondaries_count(c, txn, d->entries, err);
    if (rc0) return rc0;
    for (int i = 0; i < 10; i++) {
        if (!deltas[i]) continue;
        uint64_t cur = 0;
        int rc = suc_meta_get(c, txn, names[i], &cur);
        if (rc && rc != MDB_NOTFOUND) return suc_fail_mdb(err, "mdb_get(meta)", rc);
        int64_t next = (int64_t)cur + deltas[i];
        if (next < 0) next = 0; /* only after undecodable records were purged; verify recomputes */
        if ((rc = suc_meta_put(c, txn, names[i], (uint64_t)next))) return suc_fail_mdb(err, "mdb_put(meta)", rc);
    }
    return SUC_OK;
}