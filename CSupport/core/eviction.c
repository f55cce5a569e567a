/*
 * eviction.c — least-recently-used eviction inside a write transaction: the online cap of a
 * store, the full file system's relief and compaction all take entries from the use order here.
 */
#include "operations.h"

/* Evicts least-recently-used entries inside `txn` until what the entries take on disk (record
 * bytes + block-rounded body files, counters plus `d`: suc_disk_usage's entry_bytes) fits
 * under `limit`, at most `max` of them; the dead body ids go to `op`. */
int suc_evict_lru(suc_cache *c, MDB_txn *txn, uint64_t limit, uint32_t max, suc_op *op,
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
        int mrc = suc_use_order_oldest(c, txn, t);
        if (mrc == MDB_NOTFOUND) break;
        if (mrc) return suc_fail_mdb(err, "mdb_cursor_get(by_use)", mrc);
        int64_t before = d->file_bytes + d->record_bytes;
        rc = suc_index_delete(c, txn, t + 8, op, d, err);
        if (rc == MDB_NOTFOUND) { /* stray: its record is gone */
            if ((rc = suc_time_order_drop_stray(c, txn, SUC_ORDER_USE, t, err))) return rc;
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

