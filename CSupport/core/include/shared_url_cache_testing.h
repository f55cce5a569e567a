/*
 * shared_url_cache_testing.h — hooks for the project's own tests: fault injection and raw
 * access to records and body files. Not part of the cache's API (the Swift layer exposes them
 * only as @_spi(Testing)); an application never needs them.
 */
#ifndef SHARED_URL_CACHE_TESTING_H
#define SHARED_URL_CACHE_TESTING_H

#include "shared_url_cache.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fault injection for tests (SQLite SimulateIOError style). The operations that can fail: */
#define SUC_FAULT_OPEN 0
#define SUC_FAULT_WRITE 1
#define SUC_FAULT_FSYNC 2
#define SUC_FAULT_RENAME 3
#define SUC_FAULT_UNLINK 4
#define SUC_FAULT_FSTAT 5
#define SUC_FAULT_READ 6
#define SUC_FAULT_MALLOC 7
#define SUC_FAULT_INFLATE 8
#define SUC_FAULT_COMMIT 9
#define SUC_FAULT_REWRITE 10 /* the index rewrite's steps: 1 copied, 2 published, 3 switched */
/* Group commit across processes, kill points only (abort_process; the process exits whatever
 * the other arguments): a store queued for any process's commit; a committer that has taken other
 * processes' queued stores into its transaction; the same committer after its commit, before it
 * unlinks the bodies that commit dropped for them; a store that found, without the write lock,
 * that another process's commit carried it, before it frees its slot. */
#define SUC_FAULT_HANDOFF_QUEUED 11
#define SUC_FAULT_HANDOFF_CLAIMED 12
#define SUC_FAULT_HANDOFF_COMMITTED 13
#define SUC_FAULT_HANDOFF_SETTLED 14
#define SUC_FAULT_COUNT 15

/*
 * Makes call number `nth` (1-based, counted from now, in this process) of `op` fail with
 * `errno_value` (or SUC_EINJECTED's meaning when 0); with `persistent`, every later call fails
 * too. With `abort_process`, the process calls _exit(77) instead of failing: a crash test's
 * "die exactly here". nth = 0 clears the fault for `op`. Not thread-safe against running
 * operations; set faults while the cache is idle.
 */
void suc_debug_fault(int op, uint64_t nth, int errno_value, int persistent, int abort_process);
void suc_debug_fault_clear_all(void);
/* Whether the fault set for `op` has fired since it was set. */
int suc_debug_fault_tripped(int op);

/* The body-file path (relative to the root) of (key, variant), for corruption tests.
 * Writes a NUL-terminated path into `buf`. Returns SUC_ENOTFOUND for inline bodies. */
int suc_debug_body_path(suc_cache *cache, const void *key, size_t key_len, const void *variant,
                        size_t variant_len, char *buf, size_t buf_len);

/* Overwrites the raw index record of (key, variant) with `bytes`, for corruption tests. */
int suc_debug_put_raw_record(suc_cache *cache, const void *key, size_t key_len,
                             const void *variant, size_t variant_len, const void *bytes,
                             size_t len);

/* Puts `value` under `key` in the index's meta table, as it is, for tests of damaged keys (the
 * postings, counters and eviction queues kept there). SUC_EINVAL for an empty or oversized key. */
int suc_debug_put_raw_meta(suc_cache *cache, const void *key, size_t key_len, const void *value, size_t value_len);

/* Sets the value of the use-order key of (key, variant) to `bytes`, as it is (the eviction
 * policy's: S3-FIFO keeps the entry's place there), for tests of damaged values. SUC_ENOTFOUND
 * when there is no such entry. */
int suc_debug_put_raw_use_value(suc_cache *cache, const void *key, size_t key_len, const void *variant,
                                size_t variant_len, const void *bytes, size_t len);

/* The 48-byte index key of (key, variant), for tests that write keys the way an earlier build
 * did (the eviction queues' places of their own in meta). */
void suc_debug_index_key(const void *key, size_t key_len, const void *variant, size_t variant_len,
                         uint8_t out[48]);

/* Copies the raw index record of (key, variant) into a malloc'd buffer (free() it). */
int suc_debug_get_raw_record(suc_cache *cache, const void *key, size_t key_len,
                             const void *variant, size_t variant_len, uint8_t **out,
                             size_t *out_len);

/* Holds the index write lock for `millis` ms in a write transaction that commits nothing: the
 * "another process holds a long write transaction" side of the no-write-lock-on-hit test. */
int suc_debug_hold_write_lock(suc_cache *cache, uint32_t millis);

/* Begins `count` read transactions at once (at most 256), then ends them all: the pool of reset
 * transactions a process keeps after that many concurrent lookups. */
int suc_debug_fill_read_pool(suc_cache *cache, uint32_t count);

/* How many keys the use order holds (the entries' own and those moves left behind) and how many
 * records the main table holds, in one read snapshot. */
int suc_debug_use_order_keys(suc_cache *cache, uint64_t *out_keys, uint64_t *out_records);

#ifdef __cplusplus
}
#endif

#endif /* SHARED_URL_CACHE_TESTING_H */
