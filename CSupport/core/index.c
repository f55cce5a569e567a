/*
 * index.c — the index tables and the writes to them: group-committed stores, removals, LRU
 * eviction, and the record read the lookups (lookup.c) are built on.
 *
 * Tables (one LMDB environment, index.lmdb):
 *   main     ikey (48 bytes) → record (record.c)
 *   by_time  time(8, big-endian) ‖ ikey → "" : remove-since-date without a scan
 *   by_use   time(8, big-endian) ‖ ikey → "" : least-recently-used order for eviction
 *   meta     name → u64: format, seq (record versions), entries, body/stored/record bytes
 * All four change in the same transaction, so the counters are exact at every commit.
 */
/*
 * SHA-256 on the lookup path, through OpenSSL's low-level SHA256_Init/Update/Final: they call
 * the block function (SHA-NI where the CPU has it) on a context on the stack. The one-shot
 * SHA256() of OpenSSL 3 looks the algorithm up by name on every call, and EVP_Digest with the
 * algorithm fetched once still allocates and frees a context per call: measured on a 72-byte
 * key (natively, 5 M calls), EVP_Digest ~208 ns, SHA256_* ~114 ns; through SharedCache the change
 * made a miss of a new URL ~15% faster (Benchmarks/RESULTS.md, "a miss of a new URL"). The functions are deprecated in OpenSSL 3 in favour
 * of EVP, not removed; OPENSSL_API_COMPAT (set before the includes) keeps them without
 * warnings. The digests are the same bytes: index keys do not change.
 */
#define OPENSSL_API_COMPAT 0x10100000L
#include "internal.h"
#include "os.h"

#include <errno.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The digest of the empty variant (every entry stored without Vary): SHA-256(""), truncated. */
static const uint8_t sha256_empty[SUC_VARIANT_HASH_LEN] = {0xe3, 0xb0, 0xc4, 0x42, 0x98, 0xfc, 0x1c, 0x14,
                                                           0x9a, 0xfb, 0xf4, 0xc8, 0x99, 0x6f, 0xb9, 0x24};

void suc_sha256(const void *data, size_t len, uint8_t out[32]) {
    SHA256_CTX ctx;
    SHA256_Init(&ctx);
    SHA256_Update(&ctx, data, len);
    SHA256_Final(out, &ctx);
}

void suc_ikey_make(const void *key, size_t key_len, const void *variant, size_t variant_len,
                   uint8_t out[SUC_IKEY_LEN]) {
    suc_sha256(key, key_len, out);
    if (variant_len) {
        uint8_t vh[SHA256_DIGEST_LENGTH];
        suc_sha256(variant, variant_len, vh);
        memcpy(out + SUC_KEY_HASH_LEN, vh, SUC_VARIANT_HASH_LEN);
    } else {
        memcpy(out + SUC_KEY_HASH_LEN, sha256_empty, SUC_VARIANT_HASH_LEN);
    }
}

/* Big-endian with the sign bit flipped, so byte order is numeric order for negative times too. */
void suc_tkey_make(int64_t t, const uint8_t ikey[SUC_IKEY_LEN], uint8_t out[SUC_TKEY_LEN]) {
    uint64_t u = (uint64_t)t ^ (1ull << 63);
    for (int i = 0; i < 8; i++) out[i] = (uint8_t)(u >> (56 - 8 * i));
    memcpy(out + 8, ikey, SUC_IKEY_LEN);
}

int64_t suc_tkey_time(const uint8_t tkey[SUC_TKEY_LEN]) {
    uint64_t u = 0;
    for (int i = 0; i < 8; i++) u = (u << 8) | tkey[i];
    return (int64_t)(u ^ (1ull << 63));
}

/* ---- deleting one entry inside a write transaction ---------------------------------- */

typedef struct batch_ctx {
    suc_op *ops;
    suc_touch *touches;
    size_t touch_count;
    suc_counters delta;
    uint64_t hits, misses; /* usage counts this batch carries to the index */
} batch_ctx;

static int op_add_dead(suc_op *op, const uint8_t id[SUC_BODY_ID_LEN]) {
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

/* Deletes the entry whose record `v` was just read at `ikey`; its partition's counters too
 * unless the caller accounts for them (a put replacing it: one change for both). */
static int delete_found(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN], MDB_val v, suc_op *op,
                        suc_counters *delta, int account_partition, suc_error *err) {
    MDB_val k = {SUC_IKEY_LEN, (void *)ikey};
    int mrc;
    suc_record r;
    size_t len = v.mv_size;
    int decoded = suc_record_decode(v.mv_data, len, &r) == SUC_OK;
    /* Made now: the record's bytes are gone once it is deleted. A replacement keeps it. */
    uint8_t posting[SUC_POSTING_MAX];
    size_t posting_len = decoded && account_partition ? suc_key_order_posting(c, txn, &r, ikey, posting) : 0;
    delta->entries -= 1;
    delta->record_bytes -= (int64_t)len;
    if (decoded) {
        uint8_t t[SUC_TKEY_LEN];
        MDB_val tk = {SUC_TKEY_LEN, t};
        suc_tkey_make(r.stored_at_ms, ikey, t);
        if ((mrc = mdb_del(txn, c->dbi_by_time, &tk, NULL)) && mrc != MDB_NOTFOUND)
            return suc_fail_mdb(err, "mdb_del(by_time)", mrc);
        suc_tkey_make(r.last_used_ms, ikey, t);
        if ((mrc = mdb_del(txn, c->dbi_by_use, &tk, NULL)) && mrc != MDB_NOTFOUND)
            return suc_fail_mdb(err, "mdb_del(by_use)", mrc);
        int rc = suc_tags_index(c, txn, ikey, &r, 0, err);
        if (!rc && account_partition) rc = suc_partition_account(c, txn, ikey, &r, len, -1, err);
        if (rc) return rc;
        delta->body_bytes -= (int64_t)r.body_size;
        delta->stored_bytes -= (int64_t)suc_record_stored_bytes(&r, len);
        delta->file_bytes -= (int64_t)suc_record_file_bytes(&r, len);
        if (!(r.flags & SUC_REC_INLINE) && op && op_add_dead(op, r.body_id))
            return suc_fail(err, SUC_ENOMEM, "realloc(dead)", ENOMEM, 0, "out of memory");
    }
    /* An undecodable record's time-index entries and body file cannot be found from it; the
     * compactor sweeps both (unreferenced index keys and orphan files). */
    if ((mrc = mdb_del(txn, c->dbi_main, &k, NULL))) return suc_fail_mdb(err, "mdb_del(main)", mrc);
    int rc = suc_key_order_drop(c, txn, ikey, posting, posting_len, err);
    if (rc) return rc;
    if (op) op->removed++;
    return SUC_OK;
}

int suc_index_delete(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN], suc_op *op,
                     suc_counters *delta, suc_error *err) {
    MDB_val k = {SUC_IKEY_LEN, (void *)ikey}, v;
    int mrc = mdb_get(txn, c->dbi_main, &k, &v);
    if (mrc == MDB_NOTFOUND) return MDB_NOTFOUND;
    if (mrc) return suc_fail_mdb(err, "mdb_get(main)", mrc);
    return delete_found(c, txn, ikey, v, op, delta, 1, err);
}

/* Collects the ikeys of every record under the 32-byte key hash whose full key is `key`. */
static int collect_variants(suc_cache *c, MDB_txn *txn, const uint8_t prefix[SUC_KEY_HASH_LEN],
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

/* ---- applying a batch --------------------------------------------------------------- */

int suc_index_put(suc_cache *c, MDB_txn *txn, suc_op *op, suc_counters *d, uint64_t *seq,
                  suc_error *err) {
    op->version = ++*seq;
    suc_record_patch_version(op->record, op->version);
    suc_record r, old;
    if (suc_record_decode(op->record, op->record_len, &r))
        return suc_fail(err, SUC_EINVAL, "record", 0, 0, "internal: record does not decode");
    /* The entry it replaces, and the partition counters of both in one read and write (the old
     * record is read before anything changes the page it lies in). */
    MDB_val k0 = {SUC_IKEY_LEN, op->ikey}, v0;
    int mrc0 = mdb_get(txn, c->dbi_main, &k0, &v0), rc;
    if (mrc0 && mrc0 != MDB_NOTFOUND) return suc_fail_mdb(err, "mdb_get(main)", mrc0);
    int had_old = mrc0 == 0 && suc_record_decode(v0.mv_data, v0.mv_size, &old) == SUC_OK;
    if ((rc = suc_partition_replace(c, txn, op->ikey, had_old ? &old : NULL, had_old ? v0.mv_size : 0, &r,
                                    op->record_len, &op->part_quota, &op->part_bytes, err)))
        return rc;
    if (mrc0 == 0 && (rc = delete_found(c, txn, op->ikey, v0, op, d, 0, err))) return rc;
    op->removed = 0; /* a replacement is not a removal */
    MDB_val k = {SUC_IKEY_LEN, op->ikey}, v = {op->record_len, op->record}, empty = {0, NULL};
    int mrc = mdb_put(txn, c->dbi_main, &k, &v, 0);
    if (mrc) return suc_fail_mdb(err, "mdb_put(main)", mrc);
    uint8_t t[SUC_TKEY_LEN];
    MDB_val tk = {SUC_TKEY_LEN, t};
    suc_tkey_make(r.stored_at_ms, op->ikey, t);
    if ((mrc = mdb_put(txn, c->dbi_by_time, &tk, &empty, 0))) return suc_fail_mdb(err, "mdb_put(by_time)", mrc);
    suc_tkey_make(r.last_used_ms, op->ikey, t);
    if ((mrc = mdb_put(txn, c->dbi_by_use, &tk, &empty, 0))) return suc_fail_mdb(err, "mdb_put(by_use)", mrc);
    if ((rc = suc_tags_index(c, txn, op->ikey, &r, 1, err))) return rc;
    uint8_t posting[SUC_POSTING_MAX];
    if ((rc = suc_key_order_put(c, txn, posting, suc_key_order_posting(c, txn, &r, op->ikey, posting), err))) return rc;
    d->entries += 1;
    d->stores += 1;
    d->record_bytes += (int64_t)op->record_len;
    d->body_bytes += (int64_t)r.body_size;
    d->stored_bytes += (int64_t)suc_record_stored_bytes(&r, op->record_len);
    d->file_bytes += (int64_t)suc_record_file_bytes(&r, op->record_len);
    return SUC_OK;
}

int suc_index_least_recent(suc_cache *c, MDB_txn *txn, uint8_t out[SUC_TKEY_LEN]) {
    MDB_cursor *cur;
    int mrc = mdb_cursor_open(txn, c->dbi_by_use, &cur);
    if (mrc) return mrc;
    MDB_val k, v;
    mrc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
    if (mrc == 0 && k.mv_size != SUC_TKEY_LEN) mrc = MDB_NOTFOUND; /* not one of ours: stop */
    if (mrc == 0) memcpy(out, k.mv_data, SUC_TKEY_LEN);
    mdb_cursor_close(cur);
    return mrc;
}

/* Evicts least-recently-used entries inside `txn` until what the entries take on disk (record
 * bytes + block-rounded body files, counters plus `d`: suc_disk_usage's entry_bytes) fits
 * under `limit`, at most `max` of them; the dead body ids go to `op`. */
int suc_index_evict_lru(suc_cache *c, MDB_txn *txn, uint64_t limit, uint32_t max, suc_op *op,
                        suc_counters *d, uint64_t *out_evicted, suc_error *err) {
    uint64_t files = 0, records = 0;
    int rc = suc_meta_get(c, txn, "file_bytes", &files);
    if (rc && rc != MDB_NOTFOUND) return suc_fail_mdb(err, "mdb_get(meta)", rc);
    rc = suc_meta_get(c, txn, "record_bytes", &records);
    if (rc && rc != MDB_NOTFOUND) return suc_fail_mdb(err, "mdb_get(meta)", rc);
    int64_t total = (int64_t)(files + records) + d->file_bytes + d->record_bytes;
    uint64_t evicted = 0;
    while (total > (int64_t)limit && evicted < max) {
        uint8_t t[SUC_TKEY_LEN];
        int mrc = suc_index_least_recent(c, txn, t);
        if (mrc == MDB_NOTFOUND) break;
        if (mrc) return suc_fail_mdb(err, "mdb_cursor_get(by_use)", mrc);
        int64_t before = d->file_bytes + d->record_bytes;
        rc = suc_index_delete(c, txn, t + 8, op, d, err);
        if (rc == MDB_NOTFOUND) { /* stray: its record is gone */
            MDB_val tk = {SUC_TKEY_LEN, t};
            if ((mrc = mdb_del(txn, c->dbi_by_use, &tk, NULL))) return suc_fail_mdb(err, "mdb_del(by_use)", mrc);
            continue;
        }
        if (rc) return rc;
        total += (d->file_bytes + d->record_bytes) - before;
        evicted++;
    }
    d->evictions += (int64_t)evicted;
    if (op) op->removed = 0; /* evictions are not the caller's removals */
    if (out_evicted) *out_evicted = evicted;
    return total > (int64_t)limit ? SUC_ECAPACITY : SUC_OK;
}

/* Removes every variant of op->key except the ikeys in `keep` (count `nkeep`). */
static int remove_other_variants(suc_cache *c, MDB_txn *txn, suc_op *op, const uint8_t *keep, size_t nkeep,
                                 suc_counters *d, suc_error *err) {
    uint8_t *list = NULL;
    size_t n = 0;
    int rc = collect_variants(c, txn, op->ikey, op->key, op->key_len, &list, &n, err);
    for (size_t i = 0; rc == SUC_OK && i < n; i++) {
        const uint8_t *ikey = list + i * SUC_IKEY_LEN;
        int kept = 0;
        for (size_t j = 0; j < nkeep; j++) kept |= memcmp(ikey, keep + j * SUC_IKEY_LEN, SUC_IKEY_LEN) == 0;
        if (kept) continue;
        rc = suc_index_delete(c, txn, ikey, op, d, err);
        if (rc == MDB_NOTFOUND) rc = SUC_OK;
    }
    free(list);
    return rc;
}

/* The put's variant rule (SUC_PUT_SOLE_VARIANT / SUC_PUT_SELECTOR), in the put's transaction,
 * after its record went in. Removals here are the store's bookkeeping, not removals. */
static int apply_variant_rule(suc_cache *c, MDB_txn *txn, suc_op *op, suc_counters *d, uint64_t *seq,
                              suc_error *err) {
    uint64_t removed = op->removed;
    int rc;
    if (op->put_flags & SUC_PUT_SOLE_VARIANT) {
        rc = remove_other_variants(c, txn, op, op->ikey, 1, d, err);
    } else {
        uint8_t keep[2 * SUC_IKEY_LEN];
        memcpy(keep, op->ikey, SUC_IKEY_LEN);
        suc_ikey_make(op->key, op->key_len, NULL, 0, keep + SUC_IKEY_LEN);
        MDB_val k = {SUC_IKEY_LEN, keep + SUC_IKEY_LEN}, v;
        int mrc = mdb_get(txn, c->dbi_main, &k, &v);
        if (mrc && mrc != MDB_NOTFOUND) return suc_fail_mdb(err, "mdb_get(selector)", mrc);
        suc_record old, sel;
        if (suc_record_decode(op->selector, op->selector_len, &sel))
            return suc_fail(err, SUC_EINVAL, "selector", 0, 0, "internal: selector does not decode");
        if (mrc == 0 && suc_record_decode(v.mv_data, v.mv_size, &old) == SUC_OK && old.key_len == op->key_len &&
            memcmp(old.key, op->key, op->key_len) == 0 && old.app_flags == sel.app_flags &&
            old.head_len == sel.head_len && memcmp(old.head, sel.head, sel.head_len) == 0)
            return SUC_OK; /* the same selector: the other variants stay selectable */
        suc_op put = {0};
        memcpy(put.ikey, keep + SUC_IKEY_LEN, SUC_IKEY_LEN);
        put.record = op->selector;
        put.record_len = op->selector_len;
        rc = suc_index_put(c, txn, &put, d, seq, err);
        d->stores -= 1; /* bookkeeping, not a store */
        /* A response stored there before had a body file: it goes after the commit too. */
        for (size_t i = 0; rc == SUC_OK && i < put.dead_count; i++)
            if (op_add_dead(op, put.dead_ids + i * SUC_BODY_ID_LEN))
                rc = suc_fail(err, SUC_ENOMEM, "realloc(dead)", ENOMEM, 0, "out of memory");
        suc_op_release(&put);
        /* Another record was there: the variants it selected are not this selector's. */
        if (rc == SUC_OK && mrc == 0) rc = remove_other_variants(c, txn, op, keep, 2, d, err);
    }
    op->removed = removed;
    return rc;
}

/* A put under the online cap (a full cache evicts, as URLCache does, and a missed cron run
 * cannot fill the disk) and under its partition's quota: least-recently-used entries are
 * evicted in the same commit until the new entry fits, first the partition's own (so one noisy
 * partition cannot evict the others), then the directory's; only an entry larger than the cap
 * or the quota itself is refused (the batch goes on). */
#define SUC_CAP_EVICT_MAX 100000u

static int refuse(suc_op *op, uint64_t need, const char *what, uint64_t limit) {
    op->op_rc = suc_fail(&op->err, SUC_ECAPACITY, "capacity", 0, 0,
                         "store refused: the entry (%llu bytes) is larger than %s of %llu bytes",
                         (unsigned long long)need, what, (unsigned long long)limit);
    return SUC_OK;
}

static int apply_put_capped(suc_cache *c, MDB_txn *txn, suc_op *op, suc_counters *d, uint64_t *seq,
                            suc_error *err) {
    uint64_t cap = op->capacity_bytes ? op->capacity_bytes : c->opts.hard_cap_bytes;
    suc_record r;
    if (suc_record_decode(op->record, op->record_len, &r) != SUC_OK) return suc_index_put(c, txn, op, d, seq, err);
    uint64_t need = (uint64_t)op->record_len + suc_record_file_bytes(&r, op->record_len);
    uint8_t pkey[SUC_PART_KEY_LEN];
    suc_partition_key(r.partition, r.partition_len, pkey);
    int rc;
    if (cap) {
        /* The partition's own entries go before the directory's: its quota is read first. */
        uint64_t quota = 0, counted = 0;
        if ((rc = suc_partition_quota(c, txn, pkey, &quota, &counted))) return suc_fail_mdb(err, "mdb_get(partition)", rc);
        /* The entry it replaces goes first: its bytes are not in the way. */
        rc = suc_index_delete(c, txn, op->ikey, op, d, err);
        if (rc && rc != MDB_NOTFOUND) return rc;
        if (quota && need > quota) return refuse(op, need, "the partition's quota", quota);
        if (need > cap) return refuse(op, need, "the capacity", cap); /* could never fit: evict nothing */
        if (quota && (rc = suc_partition_evict(c, txn, pkey, quota - need, SUC_CAP_EVICT_MAX, NULL, op, d, NULL, err)))
            return rc;
        rc = suc_index_evict_lru(c, txn, cap - need, SUC_CAP_EVICT_MAX, op, d, NULL, err);
        if (rc == SUC_ECAPACITY) return refuse(op, need, "the capacity", cap);
        if (rc) return rc;
    }
    if ((rc = suc_index_put(c, txn, op, d, seq, err))) return rc;
    /* Without a cap the quota is checked after the put, from the counters the put just wrote:
     * no read of its own for a partition without one (the common case). */
    if (!cap && op->part_quota && op->part_bytes > op->part_quota) {
        uint64_t quota = op->part_quota;
        if (need > quota) { /* could never fit: the entry goes again, and so is the one it replaced */
            rc = suc_index_delete(c, txn, op->ikey, op, d, err);
            if (rc && rc != MDB_NOTFOUND) return rc;
            d->stores -= 1;
            return refuse(op, need, "the partition's quota", quota);
        }
        if ((rc = suc_partition_evict(c, txn, pkey, quota, SUC_CAP_EVICT_MAX, op->ikey, op, d, NULL, err))) return rc;
    }
    if (!op->put_flags) return SUC_OK;
    return apply_variant_rule(c, txn, op, d, seq, err);
}

/* The index keys a remove or invalidate names: its one variant, unless the record there belongs
 * to another key (a hash collision must not touch another entry), or every variant of its key. */
static int op_targets(suc_cache *c, MDB_txn *txn, suc_op *op, uint8_t **out, size_t *count, suc_error *err) {
    *out = NULL;
    *count = 0;
    if (op->variant_all) return collect_variants(c, txn, op->ikey, op->key, op->key_len, out, count, err);
    MDB_val k = {SUC_IKEY_LEN, op->ikey}, v;
    int mrc = mdb_get(txn, c->dbi_main, &k, &v);
    if (mrc == MDB_NOTFOUND) return SUC_OK;
    if (mrc) return suc_fail_mdb(err, "mdb_get(main)", mrc);
    suc_record r;
    if (suc_record_decode(v.mv_data, v.mv_size, &r) == SUC_OK &&
        (r.key_len != op->key_len || memcmp(r.key, op->key, op->key_len) != 0))
        return SUC_OK;
    if (!(*out = malloc(SUC_IKEY_LEN))) return suc_fail(err, SUC_ENOMEM, "malloc(targets)", ENOMEM, 0, "out of memory");
    memcpy(*out, op->ikey, SUC_IKEY_LEN);
    *count = 1;
    return SUC_OK;
}

static int apply_remove(suc_cache *c, MDB_txn *txn, suc_op *op, suc_counters *d, suc_error *err) {
    uint8_t *list;
    size_t n;
    int rc = op_targets(c, txn, op, &list, &n, err);
    for (size_t i = 0; rc == SUC_OK && i < n; i++) {
        rc = suc_index_delete(c, txn, list + i * SUC_IKEY_LEN, op, d, err);
        if (rc == MDB_NOTFOUND) rc = SUC_OK;
    }
    free(list);
    return rc;
}

static int apply_invalidate(suc_cache *c, MDB_txn *txn, suc_op *op, uint64_t *seq, suc_error *err) {
    uint32_t now_s = (uint32_t)(suc_os_now_ms() / 1000);
    uint8_t *list;
    size_t n;
    int rc = op_targets(c, txn, op, &list, &n, err);
    for (size_t i = 0; rc == SUC_OK && i < n; i++) {
        int marked = 0;
        rc = suc_index_invalidate(c, txn, list + i * SUC_IKEY_LEN, now_s, seq, &marked, err);
        op->removed += (uint64_t)marked;
    }
    free(list);
    return rc;
}

static int apply_purge_if(suc_cache *c, MDB_txn *txn, suc_op *op, suc_counters *d, suc_error *err) {
    MDB_val k = {SUC_IKEY_LEN, op->ikey}, v;
    int mrc = mdb_get(txn, c->dbi_main, &k, &v);
    if (mrc == MDB_NOTFOUND) return SUC_OK;
    if (mrc) return suc_fail_mdb(err, "mdb_get(main)", mrc);
    suc_record r;
    int decoded = suc_record_decode(v.mv_data, v.mv_size, &r) == SUC_OK;
    /* Only what was read and found bad: a newer entry stored since then stays. */
    if (op->expect_version == 0 ? decoded : (!decoded || r.version != op->expect_version)) return SUC_OK;
    d->corrupt_purges++;
    int rc = suc_index_delete(c, txn, op->ikey, op, d, err);
    return rc == MDB_NOTFOUND ? SUC_OK : rc;
}

static void batch_reset(void *vctx) {
    batch_ctx *ctx = vctx;
    memset(&ctx->delta, 0, sizeof ctx->delta);
    for (suc_op *op = ctx->ops; op; op = op->next) {
        op->removed = 0;
        op->version = 0;
        op->dead_count = 0;
        op->op_rc = 0;
    }
}

static int batch_apply(suc_cache *c, MDB_txn *txn, void *vctx, suc_error *err) {
    batch_ctx *ctx = vctx;
    uint64_t seq0 = 0, seq;
    int rc = SUC_OK;
    int has_put = 0; /* or another operation that assigns versions */
    int stores = 0;
    for (suc_op *op = ctx->ops; op; op = op->next) {
        has_put |= op->kind == SUC_OP_PUT || op->kind == SUC_OP_INVALIDATE;
        stores |= op->kind == SUC_OP_PUT;
    }
    if (has_put) {
        /* Read the version counter once; written back once at the end of the batch. */
        if ((rc = suc_meta_next_version(c, txn, &seq0, err))) return rc;
    }
    /* A store a power loss must not take makes relaxed commits to this index synced. */
    if (stores && (rc = suc_unsynced_note_synced_store(c, txn, err))) return rc;
    seq = seq0 ? seq0 - 1 : 0;
    for (suc_op *op = ctx->ops; op && rc == SUC_OK; op = op->next) {
        switch (op->kind) {
        case SUC_OP_PUT: rc = apply_put_capped(c, txn, op, &ctx->delta, &seq, err); break;
        case SUC_OP_REMOVE: rc = apply_remove(c, txn, op, &ctx->delta, err); break;
        case SUC_OP_PURGE_IF: rc = apply_purge_if(c, txn, op, &ctx->delta, err); break;
        case SUC_OP_INVALIDATE: rc = apply_invalidate(c, txn, op, &seq, err); break;
        default: break;
        }
    }
    if (rc) return rc;
    if (has_put && seq != seq0) {
        uint8_t buf[8];
        suc_put_u64(buf, seq);
        MDB_val k = {3, "seq"}, v = {8, buf};
        int mrc = mdb_put(txn, c->dbi_meta, &k, &v, 0);
        if (mrc) return suc_fail_mdb(err, "mdb_put(meta seq)", mrc);
    }
    if ((rc = suc_touch_apply(c, txn, ctx->touches, ctx->touch_count, err))) return rc;
    ctx->delta.hits = (int64_t)ctx->hits;
    ctx->delta.misses = (int64_t)ctx->misses;
    return suc_meta_add_counters(c, txn, &ctx->delta, err);
}

/*
 * Group commit (leader/follower): the first writer to find no batch in progress takes every
 * queued operation and commits them in one transaction; the others wait for it. With N writer
 * threads, one fsync serves up to N stores. Queued last-use updates ride along for free.
 */
int suc_index_submit(suc_cache *c, suc_op *op, suc_error *err) {
    int rc = suc_cache_check_fork(c, err);
    if (rc) return rc;
    op->next = NULL;
    op->done = 0;
    pthread_mutex_lock(&c->commit_mu);
    if (c->queue_tail) c->queue_tail->next = op;
    else c->queue_head = op;
    c->queue_tail = op;
    while (!op->done) {
        if (c->leader_active) {
            pthread_cond_wait(&c->commit_cv, &c->commit_mu);
            continue;
        }
        c->leader_active = 1;
        batch_ctx ctx = {0};
        ctx.ops = c->queue_head;
        c->queue_head = c->queue_tail = NULL;
        pthread_mutex_unlock(&c->commit_mu);

        pthread_mutex_lock(&c->touch_mu);
        suc_touch *mine = NULL;
        if (c->touch_count && (mine = malloc(sizeof(suc_touch) * c->touch_count))) {
            memcpy(mine, c->touches, sizeof(suc_touch) * c->touch_count);
            ctx.touches = mine;
            ctx.touch_count = c->touch_count;
            c->touch_count = 0;
        }
        pthread_mutex_unlock(&c->touch_mu);

        ctx.hits = atomic_exchange(&c->pending_hits, 0);
        ctx.misses = atomic_exchange(&c->pending_misses, 0);
        int removal_only = 1;
        for (suc_op *o = ctx.ops; o; o = o->next) removal_only &= o->kind == SUC_OP_REMOVE || o->kind == SUC_OP_PURGE_IF;
        suc_error berr = {0};
        int brc = suc_write_txn_ex(c, batch_apply, batch_reset, &ctx, removal_only, &berr);
        free(mine);
        if (brc) { /* not written: keep them for the next write */
            atomic_fetch_add(&c->pending_hits, ctx.hits);
            atomic_fetch_add(&c->pending_misses, ctx.misses);
        }

        pthread_mutex_lock(&c->commit_mu);
        for (suc_op *o = ctx.ops; o; o = o->next) {
            o->rc = brc ? brc : o->op_rc; /* op_rc: refused alone, the batch committed */
            if (brc) o->err = berr;
            o->done = 1;
        }
        c->leader_active = 0;
        pthread_cond_broadcast(&c->commit_cv);
    }
    pthread_mutex_unlock(&c->commit_mu);
    if (op->rc && err) *err = op->err;
    return op->rc;
}

void suc_op_release(suc_op *op) {
    free(op->dead_ids);
    op->dead_ids = NULL;
    op->dead_count = op->dead_cap = 0;
}

/* ---- reading one record (lookup.c builds the lookups on these) ---------------------- */

/* Purges an entry found bad, if it is still the one that was read (a write; rare). */
void suc_index_purge_if(suc_cache *c, const uint8_t ikey[SUC_IKEY_LEN], uint64_t version) {
    suc_op op = {0};
    op.kind = SUC_OP_PURGE_IF;
    memcpy(op.ikey, ikey, SUC_IKEY_LEN);
    op.expect_version = version;
    if (suc_index_submit(c, &op, NULL) == SUC_OK) suc_body_unlink_ids(c, op.dead_ids, op.dead_count);
    suc_op_release(&op);
}

/* Copies the record of ikey out of a short read transaction. */
int suc_index_read_record(suc_cache *c, const uint8_t ikey[SUC_IKEY_LEN], uint8_t **out, size_t *len,
                       suc_error *err) {
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

/* ---- removals ----------------------------------------------------------------------- */

/* One operation on (key, variant), or with variant == NULL on every variant of key, through the
 * group commit; `out_count` gets how many entries it removed (or marked). */
static int key_op(suc_cache *c, suc_op_kind kind, const char *name, const void *key, size_t key_len,
                  const void *variant, size_t variant_len, uint64_t *out_count, suc_error *err) {
    int rc = suc_cache_check_fork(c, err);
    if (rc) return rc;
    if (!key || !key_len || (variant_len && !variant)) return suc_fail(err, SUC_EINVAL, name, 0, 0, "a key is required");
    suc_op op = {0};
    op.kind = kind;
    op.key = key;
    op.key_len = key_len;
    op.variant_all = variant == NULL;
    suc_ikey_make(key, key_len, variant, variant_len, op.ikey);
    rc = suc_index_submit(c, &op, err);
    if (rc == SUC_OK) {
        suc_body_unlink_ids(c, op.dead_ids, op.dead_count); /* delete order: commit, then unlink */
        if (out_count) *out_count = op.removed;
    }
    suc_op_release(&op);
    return rc;
}

int suc_remove(suc_cache *c, const void *key, size_t key_len, const void *variant, size_t variant_len,
               uint64_t *out_removed, suc_error *err) {
    return key_op(c, SUC_OP_REMOVE, "suc_remove", key, key_len, variant, variant_len, out_removed, err);
}

int suc_invalidate(suc_cache *c, const void *key, size_t key_len, const void *variant, size_t variant_len,
                   uint64_t *out_marked, suc_error *err) {
    return key_op(c, SUC_OP_INVALIDATE, "suc_invalidate", key, key_len, variant, variant_len, out_marked, err);
}

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
    int mrc = mdb_cursor_open(txn, ctx->by_time ? c->dbi_by_time : c->dbi_main, &cur);
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
            if (ctx->by_time) { /* a time-index entry whose record is gone: drop the stray */
                MDB_val tk = {SUC_TKEY_LEN, key};
                if ((mrc = mdb_del(txn, c->dbi_by_time, &tk, NULL)) && mrc != MDB_NOTFOUND)
                    rc = suc_fail_mdb(err, "mdb_del(by_time)", mrc);
            }
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

/* ---- testing hooks ------------------------------------------------------------------ */

int suc_debug_body_path(suc_cache *c, const void *key, size_t key_len, const void *variant, size_t variant_len,
                        char *buf, size_t buf_len) {
    uint8_t ikey[SUC_IKEY_LEN];
    suc_ikey_make(key, key_len, variant, variant_len, ikey);
    uint8_t *rec_buf = NULL;
    size_t rec_len = 0;
    int rc = suc_index_read_record(c, ikey, &rec_buf, &rec_len, NULL);
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
    return suc_index_read_record(c, ikey, out, out_len, NULL);
}

typedef struct raw_ctx {
    uint8_t ikey[SUC_IKEY_LEN];
    const void *bytes;
    size_t len;
} raw_ctx;

static int raw_apply(suc_cache *c, MDB_txn *txn, void *vctx, suc_error *err) {
    raw_ctx *ctx = vctx;
    MDB_val k = {SUC_IKEY_LEN, ctx->ikey}, v = {ctx->len, (void *)ctx->bytes};
    int mrc = mdb_put(txn, c->dbi_main, &k, &v, 0);
    return mrc ? suc_fail_mdb(err, "mdb_put(raw)", mrc) : SUC_OK;
}

int suc_debug_put_raw_record(suc_cache *c, const void *key, size_t key_len, const void *variant,
                             size_t variant_len, const void *bytes, size_t len) {
    raw_ctx ctx;
    suc_ikey_make(key, key_len, variant, variant_len, ctx.ikey);
    ctx.bytes = bytes;
    ctx.len = len;
    return suc_write_txn(c, raw_apply, NULL, &ctx, NULL);
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
    uint8_t *copy = NULL;
    size_t copy_cap = 0;
    int rc = SUC_OK;
    /* Partitions with a quota keep a last-use order of their own; without any, no lookups. */
    int partition_orders = count && suc_partition_any_use_keys(c, txn);
    for (size_t i = 0; i < count; i++) {
        MDB_val k = {SUC_IKEY_LEN, list[i].ikey}, v;
        int mrc = mdb_get(txn, c->dbi_main, &k, &v);
        if (mrc == MDB_NOTFOUND) continue;
        if (mrc) {
            rc = suc_fail_mdb(err, "mdb_get(touch)", mrc);
            break;
        }
        suc_record r;
        if (suc_record_decode(v.mv_data, v.mv_size, &r) || r.last_used_ms >= list[i].when_ms) continue;
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
        if (partition_orders && (rc = suc_partition_touch(c, txn, list[i].ikey, &r, list[i].when_ms, err))) break;
        suc_record_patch_last_used(copy, list[i].when_ms);
        uint8_t old_t[SUC_TKEY_LEN], new_t[SUC_TKEY_LEN];
        suc_tkey_make(r.last_used_ms, list[i].ikey, old_t);
        suc_tkey_make(list[i].when_ms, list[i].ikey, new_t);
        MDB_val ok = {SUC_TKEY_LEN, old_t}, nk = {SUC_TKEY_LEN, new_t}, empty = {0, NULL};
        MDB_val nv = {v.mv_size, copy};
        mrc = mdb_del(txn, c->dbi_by_use, &ok, NULL);
        if (mrc && mrc != MDB_NOTFOUND) {
            rc = suc_fail_mdb(err, "mdb_del(by_use)", mrc);
            break;
        }
        if ((mrc = mdb_put(txn, c->dbi_by_use, &nk, &empty, 0)) ||
            (mrc = mdb_put(txn, c->dbi_main, &k, &nv, 0))) {
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
    if (d->entries) {
        int rc = suc_key_order_count(c, txn, d->entries, err);
        if (rc) return rc;
    }
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