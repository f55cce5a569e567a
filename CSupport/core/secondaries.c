/*
 * secondaries.c — the registry of the index's secondary structures, and the walks over it.
 *
 * Every structure kept beside the main table (the time orders, tag postings, URL-order postings,
 * partition counters with their last-use orders, the S3-FIFO eviction queues) is one row below: what it does when an entry
 * is stored, removed or used, how verify checks it, how a recount rebuilds it, and the table of
 * its own that the index rewrite copies. The index (index.c), verify and the rewrite walk this
 * table and name none of them, so a new posting type is one file and one row here.
 */
#include "index.h"

static const suc_secondary *const rows[] = {
    &suc_stored_order_secondary,
    &suc_use_order_secondary,
    &suc_tags_secondary,
    &suc_key_order_secondary,
    &suc_partitions_secondary,
    &suc_eviction_queues_secondary,
};
#define ROW_COUNT (sizeof rows / sizeof rows[0])
_Static_assert(ROW_COUNT <= 8 * sizeof(unsigned), "a touch mask holds one bit per row");

int suc_secondaries_put(suc_cache *c, MDB_txn *txn, suc_change *ch, suc_error *err) {
    for (size_t i = 0; i < ROW_COUNT; i++) {
        int rc = rows[i]->on_put ? rows[i]->on_put(c, txn, ch, err) : SUC_OK;
        if (rc) return rc;
    }
    return SUC_OK;
}

/* In the reverse order of the rows: a row may read, as it lets an entry go, what a row above it
 * keeps (the eviction queues read the entry's place from its use-order key's value). */
int suc_secondaries_delete(suc_cache *c, MDB_txn *txn, suc_change *ch, suc_error *err) {
    for (size_t i = ROW_COUNT; i-- > 0;) {
        int rc = rows[i]->on_delete ? rows[i]->on_delete(c, txn, ch, err) : SUC_OK;
        if (rc) return rc;
    }
    return SUC_OK;
}

unsigned suc_secondaries_touch_begin(suc_cache *c, MDB_txn *txn) {
    unsigned mask = 0;
    for (size_t i = 0; i < ROW_COUNT; i++)
        if (rows[i]->on_touch && (!rows[i]->wants_touches || rows[i]->wants_touches(c, txn))) mask |= 1u << i;
    return mask;
}

int suc_secondaries_touch(suc_cache *c, MDB_txn *txn, unsigned mask, const uint8_t ikey[SUC_IKEY_LEN],
                          const suc_record *r, int64_t when_ms, suc_error *err) {
    int moves = suc_secondaries_touch_moves_last_use(mask);
    for (size_t i = 0; i < ROW_COUNT; i++) {
        int rc = mask & (1u << i) ? rows[i]->on_touch(c, txn, ikey, r, when_ms, moves, err) : SUC_OK;
        if (rc) return rc;
    }
    return SUC_OK;
}

int suc_secondaries_count_every_hit(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN], const MDB_val *record) {
    for (size_t i = 0; i < ROW_COUNT; i++)
        if (rows[i]->counts_every_hit && rows[i]->counts_every_hit(c, txn, ikey, record)) return 1;
    return 0;
}

int suc_secondaries_touch_moves_last_use(unsigned mask) {
    for (size_t i = 0; i < ROW_COUNT; i++)
        if ((mask & (1u << i)) && rows[i]->follows_last_use) return 1;
    return 0;
}

int suc_secondaries_count(suc_cache *c, MDB_txn *txn, int64_t entries_delta, suc_error *err) {
    for (size_t i = 0; entries_delta && i < ROW_COUNT; i++) {
        int rc = rows[i]->on_count ? rows[i]->on_count(c, txn, entries_delta, err) : SUC_OK;
        if (rc) return rc;
    }
    return SUC_OK;
}

int suc_secondaries_check(suc_cache *c, suc_check *chk, suc_error *err) {
    for (size_t i = 0; i < ROW_COUNT; i++) {
        int rc = rows[i]->check ? rows[i]->check(c, chk, err) : SUC_OK;
        if (rc) return rc;
    }
    return SUC_OK;
}

int suc_secondaries_rebuild(suc_cache *c, MDB_txn *txn, suc_error *err) {
    for (size_t i = 0; i < ROW_COUNT; i++) {
        int rc = rows[i]->rebuild ? rows[i]->rebuild(c, txn, err) : SUC_OK;
        if (rc) return rc;
    }
    return SUC_OK;
}

size_t suc_secondaries_tables(const suc_cache *c, const char **names, MDB_dbi *dbis, size_t cap) {
    size_t n = 0;
    for (size_t i = 0; i < ROW_COUNT && n < cap; i++) {
        if (!rows[i]->table) continue;
        names[n] = rows[i]->name;
        dbis[n++] = rows[i]->table(c);
    }
    return n;
}
