/*
 * internal.h — declarations shared by the core's .c files. Not installed, not seen by Swift.
 */
#ifndef SUC_INTERNAL_H
#define SUC_INTERNAL_H

#include "shared_url_cache.h"
#include "shared_url_cache_testing.h"

#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>
#include <zlib.h>

/* ---- index keys ----------------------------------------------------------------------- */

/* Index key of an entry: SHA-256(key) ‖ SHA-256(variant)[0..16]. All variants of one key share
 * the 32-byte prefix, so they sit next to each other and one cursor range lists them. */
#define SUC_KEY_HASH_LEN 32
#define SUC_VARIANT_HASH_LEN 16
#define SUC_IKEY_LEN (SUC_KEY_HASH_LEN + SUC_VARIANT_HASH_LEN)
/* Secondary index keys: big-endian time (8 bytes, sign-flipped so order holds) ‖ ikey. */
#define SUC_TKEY_LEN (8 + SUC_IKEY_LEN)

void suc_sha256(const void *data, size_t len, uint8_t out[32]);
void suc_ikey_make(const void *key, size_t key_len, const void *variant, size_t variant_len,
                   uint8_t out[SUC_IKEY_LEN]);
void suc_tkey_make(int64_t t, const uint8_t ikey[SUC_IKEY_LEN], uint8_t out[SUC_TKEY_LEN]);
int64_t suc_tkey_time(const uint8_t tkey[SUC_TKEY_LEN]);

/* ---- index record (record.c) ------------------------------------------------------------ */

#define SUC_BODY_ID_LEN 16
#define SUC_RECORD_FIXED_LEN 96
/* The largest body size a record may claim (1 TiB): far above any configured limit, far below
 * INT64_MAX, so a damaged size is refused at decode instead of overflowing a caller. */
#define SUC_RECORD_MAX_BODY_SIZE (UINT64_C(1) << 40)
#define SUC_RECORD_FORMAT ((SUC_RECORD_FORMAT_MAJOR << 8) | SUC_RECORD_FORMAT_MINOR)

#define SUC_REC_INLINE 0x1u
#define SUC_REC_RAW 0x2u

/* A decoded record; the byte fields point into the buffer that was decoded. */
typedef struct suc_record {
    uint16_t flags;
    uint64_t version;
    int64_t stored_at_ms;
    int64_t last_used_ms;
    uint64_t body_size;
    uint64_t stored_size;
    uint32_t body_crc;
    uint32_t app_flags;
    uint8_t body_id[SUC_BODY_ID_LEN];
    const uint8_t *key; uint32_t key_len;
    const uint8_t *variant; uint32_t variant_len;
    const uint8_t *partition; uint32_t partition_len;
    const uint8_t *head; uint32_t head_len;
    const uint8_t *user_info; uint32_t user_info_len;
    const uint8_t *inline_body; /* stored bytes, stored_size long, when SUC_REC_INLINE */
    const uint8_t *tags; uint32_t tags_len; /* each tag ended by '\n'; format 0.2 */
    uint32_t invalidated_at_s;  /* soft purge time, seconds since 1970; 0 = none; format 0.2 */
} suc_record;

/* Size of the encoding of `r` (fixed part + variable fields + inline body if flagged). */
size_t suc_record_size(const suc_record *r);
/* Encodes `r` into `out` (suc_record_size(r) bytes). */
void suc_record_encode(const suc_record *r, uint8_t *out);
/* Decodes and bounds-checks; SUC_ECORRUPT on anything unexpected, never reads out of bounds. */
int suc_record_decode(const uint8_t *buf, size_t len, suc_record *out);
/* Bytes the entry's body takes on disk, as the stored_bytes counter counts them: the stored body
 * when inline, else the whole body file (header + stored body + the record copy of `rec_len`). */
uint64_t suc_record_stored_bytes(const suc_record *r, size_t rec_len);
/* Patches the version / last-use fields of an encoded record in place. */
void suc_record_patch_version(uint8_t *buf, uint64_t version);
/* Bytes the entry's body file takes on disk as `du` counts it: its length rounded up to whole
 * SUC_DISK_BLOCK blocks (0 for an inline body). A constant, not the file system's block size,
 * so every process adds and subtracts the same figure (docs/Capacity.md). */
#define SUC_DISK_BLOCK 4096u
uint64_t suc_record_file_bytes(const suc_record *r, size_t rec_len);
void suc_record_patch_last_used(uint8_t *buf, int64_t last_used_ms);
/* Marks a record soft-purged at `invalidated_at_s` (format 0.2; same length). */
void suc_record_patch_invalidated(uint8_t *buf, uint32_t invalidated_at_s);

/* ---- body files (body.c) ---------------------------------------------------------------- */

#define SUC_BODY_HEADER_LEN 48
#define SUC_BODY_FORMAT ((SUC_BODY_FORMAT_MAJOR << 8) | SUC_BODY_FORMAT_MINOR)
/* A body file's format field is readable by this build: same major (docs/Formats.md). */
static inline int suc_body_format_readable(uint16_t format) { return (format >> 8) == SUC_BODY_FORMAT_MAJOR; }

/* ---- the body file's header (body_header.c) ---- */

typedef struct suc_body_header {
    int raw;
    uint64_t body_size, stored_size;
    uint32_t body_crc, record_len;
} suc_body_header;
/* The header of the file that holds `rec`'s body, followed by a record copy of `record_len`. */
void suc_body_header_encode(const suc_record *rec, uint32_t record_len, uint8_t out[SUC_BODY_HEADER_LEN]);
/* Decodes `len` bytes read from the start of the file named `id`. SUC_ECORRUPT: short, not a
 * body header, or another file's; SUC_EVERSION: a body format this build does not read. */
int suc_body_header_decode(const uint8_t *h, size_t len, const uint8_t id[SUC_BODY_ID_LEN], suc_body_header *out);
/* What every reader checks before it trusts a body file: the header decodes and says what the
 * record says. SUC_OK, SUC_ECORRUPT or SUC_EVERSION (with `err` filled). */
int suc_body_header_check(const uint8_t *h, size_t len, const suc_record *rec, uint32_t record_len, suc_error *err);

/* "bodies/" relative path of a body id: "ab/abcdef…" (2 + 1 + 32 chars + NUL). */
#define SUC_BODY_PATH_LEN 36
void suc_body_path(const uint8_t id[SUC_BODY_ID_LEN], char out[SUC_BODY_PATH_LEN]);

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

/* ---- looked-up entries (index.c) ------------------------------------------------------- */

/* Fills the view of a decoded record (lookup.c); the body fields stay empty. */
void suc_entry_view_fill(const suc_record *r, size_t rec_len, suc_entry_view *vw);

struct suc_entry {
    suc_entry_view view;
    uint8_t *record;   /* a copy of the index record; the view's byte fields point into it */
    size_t record_len; /* its length (the body file ends with a copy of it) */
    uint8_t *body;
};

/* ---- zlib stream pools (body.c) --------------------------------------------------------- */

/* A fresh z_stream per call costs ~5x at 1 KiB (docs/Design.md, performance stance): keep them. */
#define SUC_ZPOOL_MAX 16
z_stream *suc_zpool_take_deflate(suc_cache *c);
void suc_zpool_give_deflate(suc_cache *c, z_stream *zs);
z_stream *suc_zpool_take_inflate(suc_cache *c);
void suc_zpool_give_inflate(suc_cache *c, z_stream *zs);

/* ---- write operations (index.c) --------------------------------------------------------- */

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
    /* results */
    int rc;
    int op_rc;        /* this operation alone was refused (e.g. hard cap); detail in err */
    uint64_t version;
    uint64_t removed;
    uint8_t *dead_ids; size_t dead_count, dead_cap; /* body files to unlink after commit */
    /* queue */
    struct suc_op *next;
    int done;
    suc_error err;
} suc_op;

/* Submits `op` to the group-commit queue and waits until its batch is committed. */
int suc_index_submit(suc_cache *c, suc_op *op, suc_error *err);
void suc_op_release(suc_op *op);

/* Removes the entry at `ikey` inside `txn` (record, both time indexes), adding its sizes to
 * `delta` (negatively) and its body id to `op` (may be NULL). MDB_NOTFOUND when there is none. */
int suc_index_delete(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN], suc_op *op,
                     suc_counters *delta, suc_error *err);
/* Inserts op->record at op->ikey (replacing any entry), assigning the next version. */
int suc_index_put(suc_cache *c, MDB_txn *txn, suc_op *op, suc_counters *d, uint64_t *seq,
                  suc_error *err);
/* The oldest last-use index key (time ‖ ikey) into `out`: 0, MDB_NOTFOUND when empty, or an
 * LMDB error. Both the hard cap and compaction evict from here. */
int suc_index_least_recent(suc_cache *c, MDB_txn *txn, uint8_t out[SUC_TKEY_LEN]);
int suc_index_evict_lru(suc_cache *c, MDB_txn *txn, uint64_t limit, uint32_t max, suc_op *op,
                        suc_counters *d, uint64_t *out_evicted, suc_error *err);
/* Tag postings (tags.c): writes (put = 1) or drops (put = 0) the postings of record `r` at
 * `ikey` inside `txn`; suc_index_put and suc_index_delete call it, so every path keeps them. */
int suc_tags_index(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN], const suc_record *r, int put,
                   suc_error *err);
/* Key-order postings (key_order.c). The posting of record `r`'s key into `out` (0: the
 * directory keeps none, or the key is not in the URL layout); suc_index_put writes it, and suc_index_delete, which
 * makes it before the record goes, drops it when no variant of the key is left in `main`. */
#define SUC_POSTING_MAX 480
size_t suc_key_order_posting(suc_cache *c, MDB_txn *txn, const suc_record *r, const uint8_t ikey[SUC_IKEY_LEN],
                             uint8_t out[SUC_POSTING_MAX]);
int suc_key_order_put(suc_cache *c, MDB_txn *txn, const uint8_t *posting, size_t len, suc_error *err);
int suc_key_order_drop(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN], const uint8_t *posting,
                       size_t len, suc_error *err);
/* Drops every key-order posting and writes them again from the records, when the directory
 * keeps them (verify --fix). */
int suc_key_order_rebuild(suc_cache *c, MDB_txn *txn, suc_error *err);
/* Postings missing for stored keys plus postings naming no stored key, when the directory keeps a
 * complete URL order (0 otherwise); read transactions of a bounded number of entries each. */
int suc_key_order_check(suc_cache *c, uint64_t *mismatches, suc_error *err);
/* Adds `delta` to the entries count the key-order postings were kept for (suc_meta_add_counters). */
int suc_key_order_count(suc_cache *c, MDB_txn *txn, int64_t delta, suc_error *err);

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
/* Purges ikey if its record is still `version` (0: still undecodable). A write; rare. */
void suc_index_purge_if(suc_cache *c, const uint8_t ikey[SUC_IKEY_LEN], uint64_t version);
/* Copies the record at ikey out of a short read transaction (malloc'd). */
int suc_index_read_record(suc_cache *c, const uint8_t ikey[SUC_IKEY_LEN], uint8_t **out,
                          size_t *len, suc_error *err);

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
                        int64_t new_last_used_ms, suc_error *err);
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
/* Holds every partition with a quota to it (compaction): batches of `batch` evictions. */
int suc_partitions_enforce_quotas(suc_cache *c, uint32_t batch, uint64_t *out_evicted, uint64_t *out_transactions,
                                  suc_error *err);

/* ---- the cache handle (cache.c) --------------------------------------------------------- */

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
    uint64_t fork_gen;

    suc_options opts;
    int rootfd, bodiesfd, tmpfd;
    int leasefd;             /* the `leases` file, opened at the first lease (lease.c); -1 before */
    pthread_mutex_t lease_mu;

    MDB_env *env;
    MDB_dbi dbi_main, dbi_by_time, dbi_by_use, dbi_meta;
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
    suc_op *queue_head, *queue_tail;
    int leader_active;

    pthread_mutex_t touch_mu;
    suc_touch *touches;
    size_t touch_count;

    /* usage counts waiting for the next write (suc_cache_count_usage) */
    _Atomic uint64_t pending_hits, pending_misses;

    /* index generations (generation.c): the generation `env` belongs to, the generation file
     * that says which one is current (read by pread), and the last valid number read from it */
    char *root_path;
    uint64_t gen;
    int genfd;
    uint64_t gen_seen;

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

/* ---- a full file system (space.c) ------------------------------------------------------- */

int suc_errno_is_disk_full(int e);
/* Whether the file system holding the directory has (next to) no space left. */
int suc_fs_is_full(suc_cache *c);
/* Bytes available to this process on the directory's file system, or -1. */
int64_t suc_fs_free_bytes(suc_cache *c);
/* Frees at least `want` bytes (plus slack) by evicting least-recently-used entries with body
 * files, unlinking the files before the index commit. Returns how many entries went; 0 when
 * nothing could be freed or this thread is already relieving. */
uint64_t suc_relieve_disk_full(suc_cache *c, uint64_t want);
/* With a free-space floor (suc_options.min_free_bytes): relieves first when `incoming` more
 * bytes would leave less than the floor free. One fstatvfs per store; nothing without a floor. */
void suc_hold_free_floor(suc_cache *c, uint64_t incoming);
/* suc_os_pwrite_full that, on ENOSPC or EDQUOT, relieves and tries once more. */
int suc_pwrite_relieving(suc_cache *c, int fd, const void *buf, size_t len, off_t off);

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

/* ---- index generations (generation.c) --------------------------------------------------- */

#define SUC_GEN_FILE "generation"
#define SUC_INDEX_NAME_LEN 40
/* "index.lmdb" for generation 0 (every earlier release's name), "index.g<N>.lmdb" after. */
void suc_index_file_name(uint64_t gen, char out[SUC_INDEX_NAME_LEN]);
int suc_is_control_file(const char *name);
/* The request-lease file (lease.c). */
#define SUC_LEASE_FILE "leases"
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
/* Switches this process's handle to the published generation (no-op when current). */
int suc_cache_follow(suc_cache *c, suc_error *err);
/* Rewrites the index compactly into the next generation and switches every process to it. */
int suc_index_rewrite(suc_cache *c, uint64_t *out_entries, suc_error *err);
/* The pid of a process that has generation 0 open without following generations (a release
 * before them), 0 when none has, -1 when it cannot be told (a pid namespace of its own, whose
 * /proc/locks hides other processes' locks; no /proc/locks; this process's own lock not listed). */
int suc_earlier_release_attached(suc_cache *c);
/* Removes files of generations older than the current one, and unpublished attempts. */
int suc_remove_stale_generations(suc_cache *c);

/* The path LMDB opens for index file `name`: through the checked root descriptor. */
void suc_index_path(suc_cache *c, const char *name, char *out, size_t cap);
/* Opens (creating when `create`) an index file with O_NOFOLLOW, checks it is a regular file,
 * and sets 0660 (docs/Reliability.md §3.4: group members write the lock file). */
int suc_prepare_index_file(int rootfd, const char *name, int create, int adopt, suc_error *err);
/* When root creates a file in a directory another user owns (cron as root), the file takes
 * the directory's owner and group, so the services are never locked out. */
void suc_adopt_owner(int rootfd, int fd);

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

/* Counters in the meta table, adjusted inside a write transaction. */
int suc_meta_add_counters(suc_cache *c, MDB_txn *txn, const suc_counters *d, suc_error *err);
int suc_meta_get(suc_cache *c, MDB_txn *txn, const char *name, uint64_t *out);
int suc_meta_put(suc_cache *c, MDB_txn *txn, const char *name, uint64_t value);
int suc_meta_next_version(suc_cache *c, MDB_txn *txn, uint64_t *out, suc_error *err);

/* Queues a last-use update for later (hits never write). */
void suc_touch_queue(suc_cache *c, const uint8_t ikey[SUC_IKEY_LEN], int64_t when_ms);
/* Applies queued touches inside `txn`. */
int suc_touch_apply(suc_cache *c, MDB_txn *txn, suc_touch *list, size_t count, suc_error *err);

/* ---- errors (error.c) ------------------------------------------------------------------ */

/* Fills `err` (if non-NULL) and returns `code`. */
int suc_fail(suc_error *err, int code, const char *op, int sys_errno, int lib_rc,
             const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* Maps an errno from a failed syscall to a SUC_E* code. */
int suc_code_from_errno(int e);
/* Maps an LMDB rc to a SUC_E* code. */
int suc_code_from_mdb(int rc);
int suc_fail_errno(suc_error *err, const char *op, int e);
int suc_fail_mdb(suc_error *err, const char *op, int rc);

/* ---- little-endian helpers -------------------------------------------------------------- */

static inline void suc_put_u16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void suc_put_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline void suc_put_u64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint16_t suc_get_u16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t suc_get_u32(const uint8_t *p) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}
static inline uint64_t suc_get_u64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

#endif
