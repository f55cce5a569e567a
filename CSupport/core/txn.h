/*
 * txn.h — the handle's state, the index's environment and transactions, the meta table, index
 * generations and their file, relaxed durability, and the directory's files.
 * Not installed, not seen by Swift; a file includes its own layer's header (scripts/core-layers.py).
 */
#ifndef SUC_TXN_H
#define SUC_TXN_H

#include "format.h"

#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>
#include <zlib.h>

/* "bodies/" relative path of a body id: "ab/abcdef…" (2 + 1 + 32 chars + NUL). */
#define SUC_BODY_PATH_LEN 36
void suc_body_path(const uint8_t id[SUC_BODY_ID_LEN], char out[SUC_BODY_PATH_LEN]);
/* Opens the fan-out directory bodies/xx of a body id with O_DIRECTORY|O_NOFOLLOW, so that a
 * symlink planted there by another group member is never followed (O_NOFOLLOW on "xx/<hex>"
 * guards only the last component). With `create`, a missing one is made (2770). Returns the
 * descriptor, or -1 with errno set (ELOOP/ENOTDIR: not a real directory). */
int suc_body_open_fanout(suc_cache *c, const uint8_t id[SUC_BODY_ID_LEN], int create);
/* The file name of a body inside its fan-out directory: the 32 hex digits. */
#define SUC_BODY_NAME(path) ((path) + 3)

/* Unlinks body files after an index commit; errors other than ENOENT are ignored (the
 * compactor removes orphans). */
void suc_body_unlink_ids(suc_cache *c, const uint8_t *ids, size_t count);

/* A fresh z_stream per call costs ~5x at 1 KiB (docs/Design.md, performance stance): keep them. */
#define SUC_ZPOOL_MAX 16

/* ---- the handle's state ------------------------------------------------------------------ */

/* Defined here, at the lowest layer that keeps state in it: each layer above reads and writes
 * its own fields (the commit queue, the zlib pools, the touches). cache.c opens and closes it. */

/* Reset read transactions kept for reuse. Each keeps its LMDB reader slot (MDB_NOTLS), and the
 * 1,024 slots are shared by every process: 64 per process ran them out with 17 busy processes.
 * 16 covers the concurrent lookups of a process on a few cores; past it a lookup begins a fresh
 * transaction. */
#define SUC_RTXN_POOL_MAX 16
#define SUC_TOUCH_MAX 4096

typedef struct suc_touch {
    uint8_t ikey[SUC_IKEY_LEN];
    int64_t when_ms;
} suc_touch;


struct suc_cache {
    /* registry (one handle per directory per process; lmdb.h caveat) */
    struct suc_cache *next;
    dev_t dev;
    ino_t ino;
    int refcount;
    int opening; /* in the registry, still being opened by one thread; others wait for it */
    int closing; /* in the registry, its last reference gone: others wait until its files are closed */
    uint64_t fork_gen;

    suc_options opts;
    int rootfd, bodiesfd, tmpfd;
    int leasefd;             /* the `leases` file, opened at the first lease (lease.c); -1 before */
    pthread_mutex_t lease_mu;
    /* group commit across processes (handoff.c): the `handoff` file, opened at the first store */
    int handofffd;
    int handoff_failed;      /* it could not be opened or is not ours: stores commit themselves */
    pthread_mutex_t handoff_mu;
    uint32_t handoff_owned;  /* the slots this handle holds (for its life) */
    uint32_t handoff_busy;   /* those carrying a store now */
    /* S3-FIFO's ghost (ghost_file.c), opened at its first use in a write transaction */
    int ghostfd;
    int64_t ghost_failed_ms; /* when it last could not be opened (or was no regular file); 0: not */
    /* where this handle's next sweep of the use order's keys left behind starts (time_orders.c);
     * only in write transactions, so under the write lock */
    uint8_t use_sweep_from[SUC_TKEY_LEN];
    /* how many keys the last transaction of a removal of many keys took (commit.c): the next
     * call goes on from there instead of starting small again */
    _Atomic uint32_t many_keys_pace;
    int use_sweep_resumes; /* 0: from the oldest */

    MDB_env *env;
    MDB_dbi dbi_main, dbi_by_time, dbi_by_use, dbi_meta;
    /* the directory's format: 1 keeps the stored-time order (by_time) beside the use order, 2 the
     * use order alone (time_orders.c). Read at open and again by every write transaction, since
     * an upgrade turns 1 into 2 under open handles (format_upgrade.c); suc_directory_format */
    _Atomic int directory_format;
    uint64_t map_size;

    /* Every transaction holds this shared; map growth holds it exclusive, because
     * mdb_env_set_mapsize "may only be called if no transactions are active in the current
     * process" (lmdb.h). */
    pthread_rwlock_t map_lock;

    pthread_mutex_t pool_mu;
    MDB_txn *rtxn_pool[SUC_RTXN_POOL_MAX];
    int rtxn_count;
    z_stream *deflaters[SUC_ZPOOL_MAX];
    int deflater_count;
    z_stream *inflaters[SUC_ZPOOL_MAX];
    int inflater_count;

    /* group commit: leader/follower queue */
    pthread_mutex_t commit_mu;
    pthread_cond_t commit_cv;
    struct suc_op *queue_head, *queue_tail;
    int leader_active;

    pthread_mutex_t touch_mu;
    suc_touch *touches;
    size_t touch_count;
    /* the eviction policy as a hit last read it: snapshot number << 1 | S3-FIFO (s3fifo.c) */
    _Atomic uint64_t eviction_policy_seen;

    /* usage counts waiting for the next write (suc_cache_count_usage) */
    _Atomic uint64_t pending_hits, pending_misses;

    /* index generations (generation.c): the generation `env` belongs to, the generation file
     * that says which one is current (read by pread), and the last valid number read from it */
    char *root_path;
    uint64_t gen;
    int genfd;
    uint64_t gen_seen;
    /* the environment of a generation this handle left while a thread of its own closes it
     * (txn.c, suc_cache_follow), NULL when none: one at a time; under retire_mu, and retire_cv
     * is signalled when it is closed */
    pthread_mutex_t retire_mu;
    pthread_cond_t retire_cv;
    MDB_env *retiring;
    uint64_t retiring_gen; /* its generation */

    /* relaxed durability (unsynced.c): the marker file, or -1 in the other modes; this boot's
     * id; whether the open discarded an index left unsynced by a restart */
    int unsyncedfd;
    char boot_id[40];
    int discarded_unsynced_index;
    /* Evicts to free space when a commit meets a full file system (space.c's relief, set at
     * open): a transaction, below the eviction it triggers, knows it only through this. */
    uint64_t (*relieve_disk_full)(suc_cache *c, uint64_t want);
    /* generation + 1 of the index known to hold stores of a synced mode (0: not known) */
    uint64_t synced_stores_gen;

    /* what the last measured disk usage found beside the entries (usage.c); under pool_mu */
    uint64_t measured_overhead, measured_orphan_bytes;
    /* fan-out directories seen at open plus those this process made since (the estimated
     * usage's overhead, until measured); stores make them as needed */
    _Atomic uint32_t fanout_dirs;

    /* the rewrite journal (journal.c), as the current write transaction found it: whether it
     * is on, the next row's number (found at the transaction's first journaled change) and
     * the row limit. Only the thread holding the index's write lock touches these. */
    int journal_on, journal_located;
    uint64_t journal_next, journal_limit;
};

/* ---- the index's environment and transactions (txn.c) ---- */

/* The process's fork generation: handles opened in another one fail with SUC_EFORKED. */
uint64_t suc_fork_generation(void);
/* Called in a forked child (the registry's atfork handler). */
void suc_fork_happened(void);
/* Opens generation `gen`'s index file for LMDB after checking it (SUC_ECORRUPT: damaged). */
int suc_open_generation_env(suc_cache *c, uint64_t gen, int create, MDB_env **out, suc_error *err);
/* Makes `env` (of generation `gen`) this handle's environment. */
void suc_adopt_env(suc_cache *c, MDB_env *env, uint64_t gen);

/* Allocates every block of an index's lock file (LMDB maps it; a hole written on a full file
 * system is SIGBUS). SUC_EDISKFULL when the blocks cannot be had. */
int suc_allocate_lock_file(int rootfd, const char *lock, uint32_t max_readers, suc_error *err);

/* Meta record: when this index was made where one was lost (ms). A rebuild restores only body
 * files written before it; without it (an index never lost) it restores none. */
#define SUC_META_REBUILD_BEFORE "rebuild_before"
/* Present while an upgrade from directory format 1 to 2 has not finished (format_upgrade.c):
 * remove-since then walks the main table, since the use order may not yet hold every entry at
 * or after its stored time. */
#define SUC_META_FORMAT_UPGRADING "format_upgrading"

/* ---- a full file system (files.c) ------------------------------------------------------- */

int suc_errno_is_disk_full(int e);
/* Whether the file system holding the directory has (next to) no space left. */
int suc_fs_is_full(suc_cache *c);
/* Bytes available to this process on the directory's file system, or -1. */
int64_t suc_fs_free_bytes(suc_cache *c);
/* ---- relaxed durability (unsynced.c) --------------------------------------------------- */

/* Held by the one compaction that runs at a time (maintenance.c); a control file of the layout. */
#define SUC_COMPACT_LOCK_FILE "compact.lock"
#define SUC_UNSYNCED_FILE "unsynced"
#define SUC_BOOT_ID_LEN 40
/* Returned by a write function to end its transaction without committing (not an error). */
#define SUC_ABORT_TXN 1
int suc_read_boot_id(char out[SUC_BOOT_ID_LEN]);
/* At open, before the index is opened and before this process holds the directory: 1 when the
 * marker says unsynced commits may have been lost to a restart and no other process holds the
 * directory, with *gen the generation whose index must then be started over (under the root's
 * creation lock, which this takes: sets *root_locked; the caller unlocks); 0 when the index can
 * be trusted; a SUC_E* code. */
int suc_unsynced_restart_found(suc_cache *c, int *root_locked, uint64_t *gen, suc_error *err);
/* Clears the marker (after the index it was about has been started over). */
int suc_unsynced_clear(suc_cache *c, suc_error *err);
/* After the index is open: opens the marker when the handle is relaxed; SUC_EINVAL when this
 * machine gives no boot id (a restart could not be told from a process crash). */
int suc_unsynced_open(suc_cache *c, suc_error *err);
/* In a relaxed write transaction, before its commit: sets the marker durably (and syncs the
 * index first once an interval has passed), or, in an index that holds stores of the synced
 * modes, makes this commit synced instead. */
int suc_unsynced_before_commit(suc_cache *c, MDB_txn *txn, suc_error *err);
/* In a write transaction of a handle in a synced mode that stores: records in the index that it
 * holds stores a power loss must not take, and, when unsynced commits may exist, syncs the index
 * and clears the marker first. */
int suc_unsynced_note_synced_store(suc_cache *c, MDB_txn *txn, suc_error *err);
/* Meta record: 1 once a handle of a synced mode stored in this index (unsynced.c). */
#define SUC_META_SYNCED_STORES "synced_stores"
/* Syncs the index and clears the marker, under the write lock. */
int suc_unsynced_sync(suc_cache *c, suc_error *err);

/* ---- index generations and the generation file (generation_file.c, txn.c) -------------- */

#define SUC_GEN_FILE "generation"
#define SUC_INDEX_NAME_LEN 40
/* "index.lmdb" for generation 0 (every earlier release's name), "index.g<N>.lmdb" after. */
void suc_index_file_name(uint64_t gen, char out[SUC_INDEX_NAME_LEN]);
int suc_is_control_file(const char *name);
/* The request-lease file (lease.c). */
#define SUC_LEASE_FILE "leases"
#define SUC_HANDOFF_FILE "handoff"
/* S3-FIFO's ghost (ghost_file.c): slots of 8 bytes, read and written in write transactions. */
#define SUC_GHOST_FILE "ghost"
uint32_t suc_ghost_file_slots(void);
/* The slot's bytes; zeros where the file has none (short, missing, unreadable). */
void suc_ghost_file_read(suc_cache *c, uint32_t slot, uint8_t out[8]);
/* Best effort: a failure leaves the slot as it was. */
void suc_ghost_file_write(suc_cache *c, uint32_t slot, const uint8_t in[8]);
/* Every slot empty again. */
void suc_ghost_file_clear(suc_cache *c);
int suc_is_index_file(const char *name);
/* How long an open waits for the root's creation lock before it fails with SUC_EBUSY: making a
 * layout takes milliseconds, so only a stuck or hostile holder waits this long. */
#define SUC_ROOT_LOCK_WAIT_MS 10000
/* What the generation file is now: only SUC_GEN_MISSING may make a new layout. */
enum { SUC_GEN_VALID, SUC_GEN_MISSING, SUC_GEN_DAMAGED, SUC_GEN_UNREADABLE };
int suc_gen_inspect(int rootfd, int *errno_out);
/* Points a damaged generation file at the newest index file present (SUC_ENOENT: none). */
int suc_gen_repair(int rootfd, suc_error *err);
int suc_gen_create(int rootfd, uint64_t gen, suc_error *err);
int suc_gen_attach(suc_cache *c, suc_error *err);
/* Takes the shared lock on the generation file that every open handle holds for its life (a
 * bounded wait; never fails the open). */
int suc_gen_hold(suc_cache *c);
/* 1 when another process holds the directory (its generation-file lock), 0 when none does or
 * it cannot be told. Only before this process's own suc_gen_hold. */
int suc_gen_held_elsewhere(suc_cache *c);
void suc_gen_detach(suc_cache *c);
/* The generation every process must use now (one pread of the generation file; the last
 * valid number read when the file is damaged). */
uint64_t suc_gen_published(suc_cache *c);
/* One read of the file: 1 and *out when it was read and is valid. Decisions that remove files
 * use this, never the last number seen. */
int suc_gen_read(suc_cache *c, uint64_t *out);
/* The same, read until two reads agree (a read may overlap a publish). */
uint64_t suc_gen_published_settled(suc_cache *c);
/* Makes `gen` the published generation, durably (the caller holds its write lock). */
int suc_gen_publish(suc_cache *c, uint64_t gen, suc_error *err);
/* Removes the files of generation `gen` (data and lock). */
void suc_gen_unlink(suc_cache *c, uint64_t gen);
/* The generation this process's handle uses. Written under map_lock held exclusive (a
 * follow), read without it on every operation's fast path: atomic. */
static inline uint64_t suc_gen_current(const suc_cache *c) { return __atomic_load_n(&c->gen, __ATOMIC_ACQUIRE); }
static inline int suc_gen_moved(suc_cache *c) { return c->genfd >= 0 && suc_gen_published(c) != suc_gen_current(c); }
/* Switches this process's handle to the published generation (no-op when current). The
 * environment it leaves is closed on a thread of its own: its descriptors may still be open when
 * this returns. */
int suc_cache_follow(suc_cache *c, suc_error *err);
/* Waits until every environment suc_cache_follow left is closed: for callers that must see its
 * descriptors, mapping and (when it was the last user of an unlinked file) blocks gone. */
void suc_cache_await_retired(suc_cache *c);
/* The path LMDB opens for index file `name`: through the checked root descriptor. */
void suc_index_path(suc_cache *c, const char *name, char *out, size_t cap);
/* Opens (creating when `create`) an index file with O_NOFOLLOW, checks it is a regular file,
 * and sets 0660 (docs/Reliability.md §3.4: group members write the lock file). */
int suc_prepare_index_file(int rootfd, const char *name, int create, int adopt, suc_error *err);
/* When root creates a file in a directory another user owns (cron as root), the file takes
 * the directory's owner and group, so the services are never locked out. */
void suc_adopt_owner(int rootfd, int fd);
/* Opens (creating it, 0660, the root's owner) a file of the layout that every process reads and
 * writes in place (`handoff`, `ghost`): read-write, never through a symlink, never blocking on a
 * FIFO; -1 when it cannot be opened or is not a regular file (what a neighbour put there). */
int suc_shared_file_open(int rootfd, const char *name);

/* mkdirat + fchmod(2770) when we created it (the umask cannot take the group's access). */
int suc_make_dir(int dirfd, const char *name, int *out_fd, suc_error *err);

/* Fails with SUC_EFORKED when called in a child of the process that opened `c`. */
int suc_cache_check_fork(suc_cache *c, suc_error *err);

/* Read transactions from the pool; the map lock is held shared between begin and end. */
int suc_rtxn_begin(suc_cache *c, MDB_txn **out, suc_error *err);
void suc_rtxn_end(suc_cache *c, MDB_txn *txn);

/* Runs `fn` in one write transaction and commits it. Handles MDB_MAP_FULL (grow within the
 * cap and retry from scratch: `fn` must be restartable), MDB_MAP_RESIZED and reader checks. */
typedef int (*suc_write_fn)(suc_cache *c, MDB_txn *txn, void *ctx, suc_error *err);
typedef void (*suc_reset_fn)(void *ctx);
int suc_write_txn(suc_cache *c, suc_write_fn fn, suc_reset_fn reset, void *ctx, suc_error *err);
/* The same for a transaction that only removes: it may grow the map past the cap by a reserve. */
int suc_write_txn_ex(suc_cache *c, suc_write_fn fn, suc_reset_fn reset, void *ctx, int removal_only,
                     suc_error *err);
/* How long this thread's last write transaction held the index's write lock, in ms: what it
 * made every store of every process wait at most (compaction reports its longest). */
uint64_t suc_last_write_lock_ms(void);

/* ---- bulk work in paced write transactions (pace.c) ---- */

/* About how long one bulk transaction holds the write lock, in ms. Most of a hold is the
 * commit's fdatasync, whose time and whose tail grow with the pages the commit writes: on this
 * project's benchmark disk, 300 scattered pages synced in 2 ms (at most 11 ms in a minute of them)
 * and 1,500 in 12-17 ms (at most 49-70 ms), so a bulk transaction is kept small. */
#define SUC_PACE_TARGET_MS 8
/* The first bulk transaction's size (at most `most` items). */
uint32_t suc_pace_first(uint32_t most);
/* The next one's, after a committed transaction of `batch` items that this thread ran: smaller
 * when it held the lock past SUC_PACE_TARGET_MS, larger (up to `most`) when well under it. */
uint32_t suc_pace_resize(uint32_t batch, uint32_t most);
/* The same from a hold measured elsewhere (by the thread that ran the transaction). */
uint32_t suc_pace_resize_held(uint32_t batch, uint32_t most, uint64_t held);
/* Between two bulk transactions: a waiting writer of any process takes the lock now. */
void suc_pace_yield(void);
/* Between two bulk transactions, the last of which this thread committed: the pause, then the
 * next one's size (suc_pace_yield, then suc_pace_resize). */
uint32_t suc_pace_next(uint32_t batch, uint32_t most);

int suc_meta_get(suc_cache *c, MDB_txn *txn, const char *name, uint64_t *out);
static inline int suc_directory_format(const suc_cache *c) {
    return atomic_load_explicit(&c->directory_format, memory_order_relaxed);
}
/* Whether `format` is one this build opens (the meta record "format"). */
static inline int suc_directory_format_known(uint64_t format) {
    return format >= SUC_DIRECTORY_FORMAT_OLDEST && format <= SUC_DIRECTORY_FORMAT;
}
/* Whether an upgrade to format 2 has begun in `txn`'s snapshot and not finished. */
static inline int suc_format_upgrade_unfinished(suc_cache *c, MDB_txn *txn) {
    uint64_t marker;
    return suc_meta_get(c, txn, SUC_META_FORMAT_UPGRADING, &marker) == 0;
}
/* Every change of the index goes through these (mdb_put, mdb_del, mdb_cursor_del with the
 * same results), so that a rewrite copying the index meanwhile learns of it (journal.c). */
int suc_txn_put(suc_cache *c, MDB_txn *txn, MDB_dbi dbi, MDB_val *k, MDB_val *v, unsigned flags);
int suc_txn_del(suc_cache *c, MDB_txn *txn, MDB_dbi dbi, MDB_val *k);
int suc_txn_cursor_del(suc_cache *c, MDB_txn *txn, MDB_dbi dbi, MDB_cursor *cur);
int suc_meta_put(suc_cache *c, MDB_txn *txn, const char *name, uint64_t value);
int suc_meta_next_version(suc_cache *c, MDB_txn *txn, uint64_t *out, suc_error *err);

/* ---- the rewrite journal (journal.c) ---------------------------------------------------- */

#define SUC_JOURNAL_TABLES 4 /* main, by_time, by_use, meta */
/* At the start of every write transaction: whether this one journals its changes. */
void suc_journal_begin(suc_cache *c, MDB_txn *txn);
/* Whether a meta key is the journal's own (never copied by a rewrite). */
int suc_journal_key(const MDB_val *k);
MDB_dbi suc_journal_table(const suc_cache *c, unsigned id);
const char *suc_journal_table_name(unsigned id);
/* Turns journaling on for at most `rows` rows (its own write transaction; every later one
 * journals): *token names this journal, *first its first row. */
int suc_journal_begin_rewrite(suc_cache *c, uint64_t rows, uint64_t *token, uint64_t *first, suc_error *err);
/* Turns it off, if it is still the one `token` started (a rewrite that did not switch). */
void suc_journal_end_rewrite(suc_cache *c, uint64_t token);
/* Calls fn for each row from `from` on, in order, as seen by `txn`; *next is the row after the
 * last one seen. MDB_NOTFOUND when the journal `token` started is no longer on (stopped, or full). */
typedef int (*suc_journal_fn)(void *ctx, unsigned table, const MDB_val *key);
int suc_journal_walk(suc_cache *c, MDB_txn *txn, uint64_t token, uint64_t from, suc_journal_fn fn, void *ctx,
                     uint64_t *next, uint64_t *rows);

#endif
