/*
 * operations.h — what the public calls are made of: body files, lookups, the writer, the group
 * commit, eviction, quotas, the index rewrite, usage and a full file system's relief.
 * Not installed, not seen by Swift; a file includes its own layer's header (scripts/core-layers.py).
 */
#ifndef SUC_OPERATIONS_H
#define SUC_OPERATIONS_H

#include "index.h"

/* The CRC-32 of a body's bytes, continuing `crc` (0 starts one): zlib's crc32 function, computed
 * by libdeflate. The one checksum of raw bodies (body.c, body_reader.c, writer.c). */
uint32_t suc_crc32(uint32_t crc, const void *bytes, size_t len);

/* Compresses a whole body into out (cap bytes) as one zlib stream at the cache's level;
 * *out_len is 0 when the stream would not fit in cap (store the body raw). SUC_ENOMEM when no
 * compressor can be made. */
int suc_body_compress(suc_cache *c, const uint8_t *body, size_t len, uint8_t *out, size_t cap,
                      size_t *out_len, suc_error *err);

/* Reads, checks and inflates the body of `rec` into a new buffer (body_size bytes).
 * SUC_ENOTFOUND if the file is gone (a concurrent remove), SUC_ECORRUPT on any mismatch. */
int suc_body_read(suc_cache *c, const suc_record *rec, size_t record_len, uint8_t **out,
                  suc_error *err);
/* Inflates or copies `stored` (stored_size bytes) into out (body_size bytes) and checks it. */
int suc_body_decode(suc_cache *c, const suc_record *rec, const uint8_t *stored, uint8_t *out,
                    suc_error *err);

/* ---- looked-up entries (lookup.c) ------------------------------------------------------ */

/* Fills the view of a decoded record (lookup.c); the body fields stay empty. */
void suc_entry_view_fill(const suc_record *r, size_t rec_len, suc_entry_view *vw);

struct suc_entry {
    suc_entry_view view;
    uint8_t *record;   /* a copy of the index record; the view's byte fields point into it */
    size_t record_len; /* its length (the body file ends with a copy of it) */
    uint8_t *body;
};

/* ---- zlib stream pools (body.c) --------------------------------------------------------- */

z_stream *suc_zpool_take_deflate(suc_cache *c);
void suc_zpool_give_deflate(suc_cache *c, z_stream *zs);
z_stream *suc_zpool_take_inflate(suc_cache *c);
void suc_zpool_give_inflate(suc_cache *c, z_stream *zs);

/* Submits `op` to the group-commit queue and waits until its batch is committed. */
int suc_index_submit(suc_cache *c, suc_op *op, suc_error *err);

/* Other processes' stores queued in `handoff`, carried by a write transaction that is not a
 * batch of this process's stores (compaction's evictions): a store that waits for the write lock
 * behind it is committed by it, instead of waiting for it and then for a commit of its own. */
typedef struct suc_carry {
    suc_op *ops; /* SUC_HANDOFF_SLOTS of them, allocated by the first carry */
    size_t count;
} suc_carry;
/* At the end of the transaction's own work, in `txn`: claims the queued stores and applies them
 * (with their tickets, versions and counters). Every claimed store is applied again after a
 * reset. */
int suc_carry_queued_stores(suc_cache *c, MDB_txn *txn, suc_carry *carry, suc_error *err);
/* Before the transaction runs again: the claimed stores' results are cleared (they stay claimed). */
void suc_carry_reset(suc_carry *carry);
/* After the transaction: as suc_handoff_finish, and the carry emptied. */
void suc_carry_finish(suc_cache *c, suc_carry *carry, int committed);

/* ---- group commit across processes (handoff.c) ----------------------------------------- */

/* Opens the handle's handoff file if it is not open yet (a handle opens it at its first store);
 * whether stores queued there can be carried by this handle's commits. */
int suc_handoff_open(suc_cache *c);

#define SUC_HANDOFF_SLOTS 16
enum { SUC_HANDOFF_APPLY, SUC_HANDOFF_DONE };
/* A slot for a store about to be prepared: slot + 1 (for suc_op.handoff), 0 = none free or no
 * handoff for this handle. Other processes' committers wait briefly for reserved slots. */
int suc_handoff_reserve(suc_cache *c);
/* Queues op (a PUT holding a reservation) for any process's next commit; 0 (and the slot
 * released) when it cannot be queued: it is then committed by this process only. */
int suc_handoff_enqueue(suc_cache *c, suc_op *op);
/* In the write transaction `txn`: whether another process's commit carried op (SUC_HANDOFF_DONE,
 * op's results filled from its ticket) or this process must commit it (SUC_HANDOFF_APPLY). */
int suc_handoff_resolve(suc_cache *c, MDB_txn *txn, suc_op *op);
/* The same after this process's own commit failed, from a read transaction; when no ticket is
 * found, op->handoff_uncertain says another commit may still carry it. */
int suc_handoff_resolve_failed(suc_cache *c, suc_op *op);
/* Frees op's slot (the handle keeps it for its next store). */
void suc_handoff_release(suc_cache *c, suc_op *op);
/* In the write transaction `txn`: reads other processes' queued stores not yet carried into
 * ops[*count...] (capacity SUC_HANDOFF_SLOTS); returns how many it added. */
int suc_handoff_claim(suc_cache *c, MDB_txn *txn, suc_op *ops, size_t *count);
/* A commit that may carry queued stores says so in the file while it runs (`txn` is its write
 * transaction), so stores queued behind it wait for their tickets without the write lock. */
void suc_handoff_commit_begins(suc_cache *c, MDB_txn *txn);
void suc_handoff_commit_ends(suc_cache *c);
/* Before taking the write lock for a list of ops (linked by next), all of them stores queued in
 * the file: while another process's commit is in flight, looks for their tickets in read
 * snapshots. 1 when every one was found carried (each settled, its results filled); 0 when the
 * lock is needed after all (some not queued, no commit in flight, or the wait ran out). */
int suc_handoff_wait_carried(suc_cache *c, suc_op *ops);
/* Writes the ticket of a claimed store, once applied, into `txn`. */
int suc_handoff_ticket(suc_cache *c, MDB_txn *txn, const suc_op *op, suc_error *err);
/* After the transaction: unlinks the bodies a commit dropped for the claimed stores, frees the
 * slots of dead owners, and frees the ops. */
void suc_handoff_finish(suc_cache *c, suc_op *ops, size_t count, int committed);
/* Evicts entries by the directory's policy inside `txn` (eviction.c) until what the entries take
 * on disk fits under `limit`, at most `max` of them; their body ids go to `op`. SUC_ECAPACITY
 * when it still does not fit. */
int suc_evict(suc_cache *c, MDB_txn *txn, uint64_t limit, uint32_t max, suc_op *op, suc_counters *d,
              uint64_t *out_evicted, suc_error *err);
/* The next entry to evict, a record present in `txn`: S3-FIFO's victim for `capacity` bytes when
 * `s3fifo`, else (or when its queues are empty) the least recently used entry, dropping strays
 * of the use order on the way. SUC_ENOTFOUND when there is none. */
int suc_evict_next(suc_cache *c, MDB_txn *txn, int s3fifo, uint64_t capacity, uint8_t out_ikey[SUC_IKEY_LEN],
                   suc_error *err);
/* Purges ikey if its record is still `version` (0: still undecodable). A write; rare. */
void suc_index_purge_if(suc_cache *c, const uint8_t ikey[SUC_IKEY_LEN], uint64_t version);
/* Holds every partition with a quota to it (compaction): batches of `batch` evictions. */
int suc_partitions_enforce_quotas(suc_cache *c, uint32_t batch, uint64_t *out_evicted, uint64_t *out_transactions,
                                  suc_error *err);

/* Frees at least `want` bytes (plus slack) by evicting least-recently-used entries with body
 * files, unlinking the files before the index commit. Returns how many entries went; 0 when
 * nothing could be freed or this thread is already relieving. */
uint64_t suc_relieve_disk_full(suc_cache *c, uint64_t want);
/* With a free-space floor (suc_options.min_free_bytes): relieves first when `incoming` more
 * bytes would leave less than the floor free. One fstatvfs per store; nothing without a floor. */
void suc_hold_free_floor(suc_cache *c, uint64_t incoming);
/* suc_os_pwrite_full that, on ENOSPC or EDQUOT, relieves and tries once more. */
int suc_pwrite_relieving(suc_cache *c, int fd, const void *buf, size_t len, off_t off);

/* Rewrites the index compactly into the next generation and switches every process to it.
 * *out_lock_ms: how long it held the index's write lock (stores waited that long at most).
 * SUC_EBUSY when it did not: *out_deferral says why (SUC_REWRITE_DEFERRED_*), *out_pid names an
 * earlier release's process. */
int suc_index_rewrite(suc_cache *c, uint64_t *out_entries, uint64_t *out_lock_ms, int *out_deferral, int *out_pid,
                      suc_error *err);
/* The pid of a process that has generation 0 open without following generations (a release
 * before them), 0 when none has, -1 when it cannot be told (a pid namespace of its own, whose
 * /proc/locks hides other processes' locks; no /proc/locks; this process's own lock not listed). */
int suc_earlier_release_attached(suc_cache *c);
/* SUC_EBUSY, saying so, while such a process may have generation 0 open or that cannot be told
 * (*out_pid: as suc_earlier_release_attached); SUC_OK when none has, and at any later generation.
 * `what` names the refused step, `later` what happens once the process stops ("the index is
 * rewritten"), `instead` what is done when it cannot be told. */
int suc_refuse_while_earlier_release(suc_cache *c, const char *what, const char *later, const char *instead,
                                     int *out_pid, suc_error *err);
/* Removes files of generations older than the current one, and unpublished attempts. */
int suc_remove_stale_generations(suc_cache *c);

/* ---- stores and refreshes (writer.c, refresh.c) ----------------------------------------- */

/* Checks a store's parameters against the handle's limits: SUC_EINVAL or SUC_ETOOLARGE. */
int suc_put_params_check(suc_cache *c, const suc_put_params *p, suc_error *err);
/* Inside the group commit: replaces the entry at op->ikey, if it is still op->expect_version,
 * by a record with op->refresh's head and the same body (refresh.c). A changed or gone entry
 * refuses the operation alone (op_rc SUC_ENOTFOUND). */
int suc_refresh_apply(suc_cache *c, MDB_txn *txn, suc_op *op, suc_counters *d, uint64_t *seq, suc_error *err);

#endif
