/*
 * eviction.c — eviction inside a write transaction, by the directory's policy: the online cap of
 * a store takes entries here, from the S3-FIFO queues when the directory chose them (s3fifo.c)
 * and from the use order (least recently used) otherwise or once the queues are empty.
 */
#include "operations.h"

#include <string.h>

#define EVICT_STRAYS_MAX 16384

int suc_evict_next(suc_cache *c, MDB_txn *txn, int s3fifo, uint64_t capacity, uint8_t out_ikey[SUC_IKEY_LEN],
                   suc_error *err) {
    if (s3fifo) {
        int rc = suc_s3fifo_victim(c, txn, capacity, out_ikey, err);
        if (rc != SUC_ENOTFOUND) return rc;
    }
    /* Strays (keys left behind by moves, keys of removed entries) are dropped as they come, at
     * most this many for one victim: a store waits for them under the write lock. */
    for (uint32_t dropped = 0; dropped < EVICT_STRAYS_MAX; dropped++) {
        uint8_t t[SUC_TKEY_LEN];
        int mrc = suc_use_order_oldest(c, txn, t);
        if (mrc == MDB_NOTFOUND) return SUC_ENOTFOUND;
        if (mrc) return suc_fail_mdb(err, "mdb_cursor_get(by_use)", mrc);
        if (suc_use_order_key_live(c, txn, t)) {
            memcpy(out_ikey, t + 8, SUC_IKEY_LEN);
            return SUC_OK;
        }
        int rc = suc_time_order_drop_stray(c, txn, SUC_ORDER_USE, t, err); /* its record is gone, or moved on */
        if (rc) return rc;
    }
    return SUC_ENOTFOUND; /* the next store goes on from here */
}

/* Evicts entries inside `txn` until what the entries take on disk (record bytes + block-rounded
 * body files, counters plus `d`: suc_disk_usage's entry_bytes) fits under `limit`, at most `max`
 * of them; the dead body ids go to `op`. */
int suc_evict(suc_cache *c, MDB_txn *txn, uint64_t limit, uint32_t max, suc_op *op, suc_counters *d,
              uint64_t *out_evicted, suc_error *err) {
    uint64_t files = 0, records = 0;
    int rc = suc_meta_get(c, txn, "file_bytes", &files);
    if (rc && rc != MDB_NOTFOUND) return suc_fail_mdb(err, "mdb_get(meta)", rc);
    rc = suc_meta_get(c, txn, "record_bytes", &records);
    if (rc && rc != MDB_NOTFOUND) return suc_fail_mdb(err, "mdb_get(meta)", rc);
    int64_t total = (int64_t)(files + records) + d->file_bytes + d->record_bytes;
    int s3fifo = total > (int64_t)limit && suc_s3fifo_chosen(c, txn);
    uint64_t evicted = 0;
    while (total > (int64_t)limit && evicted < max) {
        uint8_t ikey[SUC_IKEY_LEN];
        rc = suc_evict_next(c, txn, s3fifo, limit, ikey, err);
        if (rc == SUC_ENOTFOUND) break;
        if (rc) return rc;
        int64_t before = d->file_bytes + d->record_bytes;
        rc = suc_index_delete(c, txn, ikey, op, d, err);
        if (rc == MDB_NOTFOUND) return suc_fail(err, SUC_EINDEX, "evict", 0, rc, "an entry to evict vanished");
        if (rc) return rc;
        total += (d->file_bytes + d->record_bytes) - before;
        evicted++;
    }
    d->evictions += (int64_t)evicted;
    if (op) op->removed = 0; /* evictions are not the caller's removals */
    if (out_evicted) *out_evicted = evicted;
    return total > (int64_t)limit ? SUC_ECAPACITY : SUC_OK;
}
