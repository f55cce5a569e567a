/*
 * index.h — the index: the main table and the secondary structures registered beside it, and
 * the one way an entry is put, deleted or touched in them inside a write transaction.
 * Not installed, not seen by Swift; a file includes its own layer's header (scripts/core-layers.py).
 */
#ifndef SUC_INDEX_H
#define SUC_INDEX_H

#include "txn.h"

/* ---- one change of the index (index.c) ---------------------------------------------------- */

/* Changes to the meta counters made by one transaction, written once at its end. */
typedef struct suc_counters {
    int64_t entries, body_bytes, stored_bytes, record_bytes, evictions, corrupt_purges, stores, hits, misses;
    int64_t file_bytes; /* block-rounded body files (suc_record_file_bytes) */
} suc_counters;

typedef enum suc_op_kind {
    SUC_OP_PUT = 1,
    SUC_OP_REMOVE,          /* one (key, variant), or every variant when variant_all */
    SUC_OP_PURGE_IF,        /* remove ikey if its record is still version `expect_version` or
                               still undecodable (expect_version == 0) */
    SUC_OP_INVALIDATE,      /* soft purge: mark one (key, variant), or every variant, stale;
                               `removed` counts the entries marked */
    SUC_OP_REFRESH,         /* a new head for the body of (key, variant) while it is still
                               `expect_version` (suc_refresh) */
} suc_op_kind;

typedef struct suc_op {
    suc_op_kind kind;
    uint8_t ikey[SUC_IKEY_LEN];
    const uint8_t *key; size_t key_len;
    int variant_all;
    uint8_t *record; size_t record_len; /* PUT: encoded record, version patched in the txn */
    uint64_t expect_version;
    uint64_t capacity_bytes; /* PUT: the online cap for this store; 0 = the handle's */
    uint32_t put_flags;      /* PUT: SUC_PUT_SOLE_VARIANT or SUC_PUT_SELECTOR */
    uint64_t part_quota, part_bytes; /* PUT result: the entry's partition's quota and bytes after */
    uint8_t *selector; size_t selector_len; /* PUT with SUC_PUT_SELECTOR: its encoded record */
    const suc_put_params *refresh;          /* REFRESH: the new head, userInfo, tags and time */
    uint8_t *refreshed; size_t refreshed_len; /* REFRESH: the record it built (freed on release) */
    /* results */
    int rc;
    int op_rc;        /* this operation alone was refused (e.g. hard cap); detail in err */
    uint64_t version;
    uint64_t removed;
    uint8_t *dead_ids; size_t dead_count, dead_cap; /* body files to unlink after commit */
    int capacity_fixed;      /* PUT: capacity_bytes is the cap even when 0 (a store another process queued) */
    /* group commit across processes (handoff.c): slot + 1 in the handoff file, 0 = none */
    int handoff;
    uint64_t handoff_nonce;  /* names this queued store in the ticket of the commit that carries it */
    int handoff_owned;       /* its own process is committing it */
    int handoff_uncertain;   /* its own commit failed and another's may still carry it */
    int settled;             /* another process committed it: the results are its */
    uint8_t *handoff_buf;    /* a queued store's bytes, read from its slot */
    /* queue */
    struct suc_op *next;
    int done;
    uint64_t held_ms; /* how long the commit that took it held the write lock (its leader's measure) */
    suc_error err;
} suc_op;

/* ---- secondary structures (secondaries.c) ---------------------------------------------- */

/* One change of one entry, as the secondary structures see it. */
typedef struct suc_change {
    const uint8_t *ikey;
    const suc_record *old; size_t old_len;     /* the entry replaced or removed; NULL: none (or undecodable) */
    const suc_record *new_rec; size_t new_len; /* the entry stored; NULL: a removal */
    uint64_t part_quota, part_bytes; /* out (a put): its partition's quota and bytes after the change */
} suc_change;

/* What verify hands each structure's check. */
typedef struct suc_check {
    int fix;
    int foreign_records; /* records of another release were met: sums over records cannot be compared */
    int unreadable_records;
    suc_verify_report *report;
} suc_check;

/* A structure kept beside the main table, in the same transactions. Each hook may be NULL.
 * on_put and on_delete run before the main table changes (`old` still points into it); on_put
 * in the order of the registry's rows, on_delete in the reverse order. */
typedef struct suc_secondary {
    const char *name;
    MDB_dbi (*table)(const suc_cache *c); /* a table of its own, copied by the rewrite; NULL: kept in meta */
    int (*on_put)(suc_cache *c, MDB_txn *txn, suc_change *ch, suc_error *err);
    int (*on_delete)(suc_cache *c, MDB_txn *txn, suc_change *ch, suc_error *err);
    int (*wants_touches)(suc_cache *c, MDB_txn *txn); /* NULL: every batch of touches */
    /* `last_use_moves`: whether a row of this batch follows last use (the use order has moved the
     * entry's key to this use, a row above). */
    int (*on_touch)(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN], const suc_record *r,
                    int64_t when_ms, int last_use_moves, suc_error *err);
    /* Whether a hit on the entry changes this row even within the touch interval (read in the
     * hit's own snapshot, `record` its bytes there); NULL: the interval decides. */
    int (*counts_every_hit)(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN], const MDB_val *record);
    int (*on_count)(suc_cache *c, MDB_txn *txn, int64_t entries_delta, suc_error *err); /* per commit */
    int (*check)(suc_cache *c, suc_check *chk, suc_error *err);  /* verify; fixes with chk->fix */
    int (*rebuild)(suc_cache *c, MDB_txn *txn, suc_error *err);  /* from the records (recount) */
    int follows_last_use; /* sorts by the record's last use: a touch it takes rewrites the record's time */
} suc_secondary;

extern const suc_secondary suc_stored_order_secondary, suc_use_order_secondary, suc_tags_secondary,
    suc_key_order_secondary, suc_partitions_secondary, suc_eviction_queues_secondary;

int suc_secondaries_put(suc_cache *c, MDB_txn *txn, suc_change *ch, suc_error *err);
int suc_secondaries_delete(suc_cache *c, MDB_txn *txn, suc_change *ch, suc_error *err);
/* The rows that want this batch's touches (a bit per row), then one call per touched entry. */
unsigned suc_secondaries_touch_begin(suc_cache *c, MDB_txn *txn);
int suc_secondaries_touch(suc_cache *c, MDB_txn *txn, unsigned mask, const uint8_t ikey[SUC_IKEY_LEN],
                          const suc_record *r, int64_t when_ms, suc_error *err);
/* Whether a row of the batch sorts by last use, so the records' last-use times must move. */
int suc_secondaries_touch_moves_last_use(unsigned mask);
/* Whether a row wants to hear of a hit on the entry whatever the touch interval says. */
int suc_secondaries_count_every_hit(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN], const MDB_val *record);
int suc_secondaries_count(suc_cache *c, MDB_txn *txn, int64_t entries_delta, suc_error *err);
int suc_secondaries_check(suc_cache *c, suc_check *chk, suc_error *err);
int suc_secondaries_rebuild(suc_cache *c, MDB_txn *txn, suc_error *err);
/* The tables of their own (name and handle), at most `cap`: what the rewrite copies beside main and meta. */
size_t suc_secondaries_tables(const suc_cache *c, const char **names, MDB_dbi *dbis, size_t cap);

/* The time orders (time_orders.c): walked by evictions and remove-since. A directory of format 1
 * keeps both; one of format 2 the use order alone, sorted by suc_use_order_time. */
typedef enum suc_time_order { SUC_ORDER_STORED, SUC_ORDER_USE } suc_time_order;
MDB_dbi suc_time_order_dbi(const suc_cache *c, suc_time_order which);
int suc_time_order_kept(const suc_cache *c, suc_time_order which);
/* An entry's place in the use order: its last use, and in format 2 never before its stored time. */
int64_t suc_use_order_time(const suc_cache *c, const suc_record *r);
/* The value of an entry's use-order key, which the eviction policy owns (s3fifo.c keeps the
 * entry's place in its queues there): at the entry's time, or at its former time while an
 * unfinished format upgrade has not moved it. 0, MDB_NOTFOUND, or an LMDB error. The key moves
 * with its value when the entry is stored again or used. */
#define SUC_USE_VALUE_MAX 32
int suc_use_order_value(suc_cache *c, MDB_txn *txn, const suc_record *r, const uint8_t ikey[SUC_IKEY_LEN],
                        MDB_val *out);
/* Moves an entry's use-order key from one time to another, with its value (the format upgrade). */
int suc_use_order_rekey(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN], int64_t from, int64_t to,
                        suc_error *err);
/* Sets it (putting the key at the entry's time when it has none). */
int suc_use_order_value_put(suc_cache *c, MDB_txn *txn, const suc_record *r, const uint8_t ikey[SUC_IKEY_LEN],
                            const void *value, size_t len, suc_error *err);
/* Whether a use-order key is its entry's own place, not a stray (a key a move left behind, or one
 * whose record is gone): 1 or 0. A record that does not decode counts as there (its key's
 * walker purges it). */
int suc_use_order_key_live(suc_cache *c, MDB_txn *txn, const uint8_t key[SUC_TKEY_LEN]);
/* Drops the keys moves left behind among the next few from where this handle's last sweep
 * stopped, when they are more than half as many as the entries (time_orders.c). In a write
 * transaction, under the write lock. */
int suc_use_order_sweep(suc_cache *c, MDB_txn *txn, suc_error *err);
/* Drops every key left behind, in write transactions of its own (after a removal of everything,
 * which leaves the keys its entries moved from). */
int suc_use_order_drain(suc_cache *c, suc_error *err);
/* The least recently used key (time ‖ ikey): 0, MDB_NOTFOUND when empty, or an LMDB error. It may
 * be a stray: see suc_use_order_key_live. */
int suc_use_order_oldest(suc_cache *c, MDB_txn *txn, uint8_t out[SUC_TKEY_LEN]);
/* Drops a key whose record is gone. */
int suc_time_order_drop_stray(suc_cache *c, MDB_txn *txn, suc_time_order which, const uint8_t key[SUC_TKEY_LEN],
                              suc_error *err);

/* The S3-FIFO queues (s3fifo.c). Whether the directory chose S3-FIFO (else least recently used). */
int suc_s3fifo_chosen(suc_cache *c, MDB_txn *txn);
/* The next entry S3-FIFO evicts to hold `capacity` bytes: moves the entries that stay (hit since
 * they came in, or since their last pass) and remembers a victim from the small queue in the
 * ghost; the caller deletes the victim in `txn`. SUC_ENOTFOUND when the queues hold none (the
 * caller takes the use order). */
int suc_s3fifo_victim(suc_cache *c, MDB_txn *txn, uint64_t capacity, uint8_t out_ikey[SUC_IKEY_LEN], suc_error *err);
/* Reads, in a read transaction, the pages the next `count` victims of each queue will touch. */
void suc_s3fifo_prefetch(suc_cache *c, MDB_txn *txn, uint32_t count);

/* Every table of the index: main first, the secondary structures' own, meta (which holds the
 * others' keys) last. Returns how many. */
#define SUC_INDEX_TABLES_MAX 8
size_t suc_index_tables(const suc_cache *c, const char *names[SUC_INDEX_TABLES_MAX], MDB_dbi dbis[SUC_INDEX_TABLES_MAX]);

void suc_op_release(suc_op *op);

/* The record at `ikey` in `txn`, decoded into `r` (pointing into the snapshot, valid until the
 * transaction writes): 0; MDB_NOTFOUND when there is none; SUC_ECORRUPT when a value is there but
 * is no record of this release (another release's, or damage); or an LMDB error. `raw` (may be
 * NULL) gets the value's bytes whenever there is one. */
int suc_index_record_get(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN], suc_record *r, MDB_val *raw);

/* Removes the entry at `ikey` inside `txn` (record, both time indexes), adding its sizes to
 * `delta` (negatively) and its body id to `op` (may be NULL). MDB_NOTFOUND when there is none. */
int suc_index_delete(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN], suc_op *op,
                     suc_counters *delta, suc_error *err);
/* Inserts op->record at op->ikey (replacing any entry), assigning the next version. */
int suc_index_put(suc_cache *c, MDB_txn *txn, suc_op *op, suc_counters *d, uint64_t *seq,
                  suc_error *err);
/* Adds a body id to unlink after the commit. SUC_ENOMEM when it cannot. */
int suc_op_add_dead(suc_op *op, const uint8_t id[SUC_BODY_ID_LEN]);
/* The ikeys of every record under the key hash of `prefix` whose full key is `key` (malloc'd). */
int suc_index_variants(suc_cache *c, MDB_txn *txn, const uint8_t prefix[SUC_KEY_HASH_LEN], const uint8_t *key,
                       size_t key_len, uint8_t **out, size_t *count, suc_error *err);
/* Key-order postings (key_order.c): at most this many bytes each. */
#define SUC_POSTING_MAX 480
/* Purges driven by postings (purge.c). A posting is a `meta` key under `prefix`, at most
 * SUC_POSTING_MAX bytes; `resolve` appends the ikeys of the entries it names to `targets`
 * (counting the records it reads), or sets *stale when they are gone (the posting is dropped). */
typedef struct suc_ikey_list {
    uint8_t *ikeys;
    size_t count, cap;
} suc_ikey_list;
int suc_ikey_list_add(suc_ikey_list *list, const uint8_t ikey[SUC_IKEY_LEN], suc_error *err);
typedef struct suc_posting_purge {
    const uint8_t *prefix; size_t prefix_len;
    int soft;
    int (*resolve)(void *ctx, suc_cache *c, MDB_txn *txn, const uint8_t *posting, size_t len, suc_ikey_list *targets,
                   int *stale, uint64_t *records_read, suc_error *err);
    void *ctx;
} suc_posting_purge;
int suc_purge_postings(suc_cache *c, const suc_posting_purge *spec, suc_purge_report *out, suc_error *err);
/* Checks a store's tag list (suc_put_params.tags). */
int suc_tags_check(const void *tags, size_t len, suc_error *err);
/* Marks the record at ikey stale now (keeps an earlier mark), with the next version from `seq`;
 * `out_marked` 1 when it changed. */
int suc_index_invalidate(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN], uint32_t now_s,
                         uint64_t *seq, int *out_marked, suc_error *err);
/* Copies the record at ikey out of a short read transaction (malloc'd); with `counts_every_hit`,
 * also says, in the same snapshot, whether a hit on it is wanted whatever the touch interval. */
int suc_index_read_record(suc_cache *c, const uint8_t ikey[SUC_IKEY_LEN], uint8_t **out, size_t *len,
                          int *counts_every_hit, suc_error *err);

/* ---- partition counters and quotas (partitions.c, quota.c) ------------------------------ */

/* Counter key of a partition in `meta`: 0x00 'P' ‖ SHA-256(partition)[0..16]. */
#define SUC_PART_KEY_LEN 18
/* Its value: u64 entries, record bytes, file bytes, body bytes, stored bytes, quota (0 = none),
 * then the name. */
#define SUC_PART_VALUE_FIXED 48
void suc_partition_key(const void *partition, size_t len, uint8_t out[SUC_PART_KEY_LEN]);
/* Adds (sign > 0) or takes (sign < 0) record `r` at `ikey` to its partition's counters inside
 * `txn`, and to the partition's last-use order when it has a quota; suc_index_put and
 * suc_index_delete call it, so every path keeps them (as with tag postings). */
int suc_partition_account(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN], const suc_record *r,
                          size_t rec_len, int sign, suc_error *err);
/* The same for a put that replaces an entry: one read and one write of the counters when both
 * are of one partition. `out_quota` and `out_bytes` (may be NULL) get the quota and the bytes of
 * the added entry's partition after the change. */
int suc_partition_replace(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN], const suc_record *gone,
                          size_t gone_len, const suc_record *added, size_t added_len, uint64_t *out_quota,
                          uint64_t *out_bytes, suc_error *err);
/* Moves the entry in its partition's last-use order (only partitions with a quota keep one). */
int suc_partition_touch(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN], const suc_record *r,
                        int64_t new_last_used_ms, int last_use_moves, suc_error *err);
/* Whether any partition keeps a last-use order now (touches skip the lookups when none does). */
int suc_partition_any_use_keys(suc_cache *c, MDB_txn *txn);
/* The quota (0 = none) and the bytes counted of the partition at `pkey`: 0 or an LMDB error. */
int suc_partition_quota(suc_cache *c, MDB_txn *txn, const uint8_t pkey[SUC_PART_KEY_LEN], uint64_t *out_quota,
                        uint64_t *out_bytes);
/* Evicts the partition's least recently used entries inside `txn` until its bytes are at most
 * `limit`, at most `max` of them (only what its last-use order knows), stopping at `keep` (may be
 * NULL: the entry being stored). */
int suc_partition_evict(suc_cache *c, MDB_txn *txn, const uint8_t pkey[SUC_PART_KEY_LEN], uint64_t limit,
                        uint32_t max, const uint8_t *keep, suc_op *op, suc_counters *d, uint64_t *out_evicted,
                        suc_error *err);
/* Counts every partition again from the records inside `txn` (quotas stay; their last-use
 * orders are rebuilt) and marks the counters present. */
int suc_partitions_recount(suc_cache *c, MDB_txn *txn, suc_error *err);
/* Whether every partition's counters equal the sums over its records (one read snapshot; a
 * walk: for verify). */
int suc_partitions_check(suc_cache *c, int *out_match, suc_error *err);
/* Whether the counters were counted in this directory (a directory from before them was not). */
int suc_partitions_counted(suc_cache *c, MDB_txn *txn);
/* The meta counters, adjusted once at the end of a write transaction. */
int suc_meta_add_counters(suc_cache *c, MDB_txn *txn, const suc_counters *d, suc_error *err);
/* Queues a last-use update for later (hits never write). */
void suc_touch_queue(suc_cache *c, const uint8_t ikey[SUC_IKEY_LEN], int64_t when_ms);
/* Applies queued touches inside `txn`. */
int suc_touch_apply(suc_cache *c, MDB_txn *txn, suc_touch *list, size_t count, suc_error *err);

#endif
