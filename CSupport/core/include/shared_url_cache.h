/*
 * shared_url_cache.h — the C core of SharedURLCache.
 *
 * A cache directory on local disk that several processes share at once: an LMDB index (one
 * file per index generation, `index.lmdb` or `index.g<N>.lmdb`) and zlib-compressed bodies,
 * small ones inside their record, larger ones in body files (`bodies/xx/<hex>`); every file of
 * a directory is listed in docs/Formats.md, "The directory". This header
 * is the whole public surface; it exposes opaque handles only and includes neither lmdb.h nor
 * zlib.h.
 *
 * The core knows nothing about HTTP. A record is addressed by two opaque byte strings:
 * the primary `key` (callers pass an injective encoding of partition, method and URL) and a
 * `variant` (the secondary key, e.g. the request values named by Vary; may be empty). The
 * index key is SHA-256(key) ‖ SHA-256(variant)[0..16]; the full key and variant are kept in
 * the record and compared on every lookup, so a hash collision is a miss, never a wrong entry.
 *
 * Errors
 *   Every function that can fail returns int: SUC_OK (0) on success, or a negative SUC_E* code
 *   (range -31000…-31099, clear of LMDB's -30799…-30780 and zlib's -1…-6). suc_strerror() names
 *   a code. Such functions take an optional `suc_error *` (last parameter, may be NULL) that
 *   receives the failing operation and the underlying errno / LMDB rc / zlib rc.
 *
 *   "Environment errors", which a function's comment names as one group: SUC_EFORKED (a handle
 *   used in a child after fork()), SUC_EINJECTED (the tests' fault injection only), and what a
 *   failing system or LMDB call maps to (error.c): SUC_EIO, SUC_EPERM, SUC_ENOMEM, SUC_EINDEX,
 *   SUC_EREADERS, SUC_EDISKFULL and SUC_EINDEXFULL (calls that write), and rarely SUC_ENOENT,
 *   SUC_EUNSAFE (ELOOP) or SUC_ECORRUPT (LMDB found a damaged page). A call that uses the index
 *   may first follow a new index generation another process published (docs/Capacity.md), and
 *   opening that adds SUC_EBUSY (a process holds the generation's lock file past a bounded wait).
 *
 *   A function that takes a cache handle returns SUC_EINVAL for a NULL one. Functions that return no result code (the getters, suc_options_init, the *_free,
 *   *_close and *_abort functions, suc_cache_count_usage) report no failure: what they cannot
 *   do is left undone (suc_cache_close's last flush included).
 *
 * Threads and processes
 *   A suc_cache handle is safe to use from many threads at once. Any number of processes may
 *   open the same directory; each sees every other's committed stores and removes. Within one
 *   process, opening the same directory twice returns handles that share one LMDB environment
 *   (lmdb.h: never open one environment twice in a process). A handle must not be used in a
 *   child after fork(): calls there fail with SUC_EFORKED; open the directory again instead.
 *
 * Ownership
 *   Every *_free / *_close accepts NULL. Memory returned through suc_entry is owned by the
 *   entry and valid until suc_entry_free().
 */
#ifndef SHARED_URL_CACHE_H
#define SHARED_URL_CACHE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Formats ---------------------------------------------------------------------------- */

/* What this build reads and writes (docs/Formats.md). The directory format is the index's
 * "format" meta record: this build creates directories of SUC_DIRECTORY_FORMAT and opens those of
 * SUC_DIRECTORY_FORMAT_OLDEST up to it; a directory of another one is refused at open
 * (SUC_EVERSION). Format 2 keeps one recency order where format 1 keeps two. Index records and
 * body files carry their own format, major × 256 + minor: a newer minor is read (what it adds
 * is skipped), a newer major is a miss that is never purged. */
#define SUC_DIRECTORY_FORMAT 2
#define SUC_DIRECTORY_FORMAT_OLDEST 1
#define SUC_RECORD_FORMAT_MAJOR 0
#define SUC_RECORD_FORMAT_MINOR 3
#define SUC_BODY_FORMAT_MAJOR 0
#define SUC_BODY_FORMAT_MINOR 1

/* ---- Result codes --------------------------------------------------------------------- */

#define SUC_OK 0
#define SUC_ENOTFOUND (-31000)
#define SUC_EINVAL (-31001)
#define SUC_ECORRUPT (-31002)
#define SUC_ETOOLARGE (-31003)
#define SUC_EDISKFULL (-31004)
#define SUC_EINDEXFULL (-31005)
#define SUC_EPERM (-31006)
#define SUC_EIO (-31007)
#define SUC_ENOMEM (-31008)
#define SUC_EVERSION (-31009)
#define SUC_EUNSAFE (-31010)
#define SUC_ENOTCACHE (-31011)
#define SUC_ENOENT (-31012)
#define SUC_EFORKED (-31013)
#define SUC_EINDEX (-31014)
#define SUC_EREADERS (-31015)
#define SUC_EINJECTED (-31016)
#define SUC_EBUSY (-31017)
#define SUC_ECAPACITY (-31018)

/* Every failure code once, in value order: code, the Swift `CacheError.Code` it surfaces as,
 * and what it means. suc_strerror and suc_error_name are generated from this table and the
 * Swift layer maps codes through suc_error_name, so a code added here is described and mapped
 * everywhere (a test checks the table against the #defines above and the Swift constants). */
#define SUC_RESULT_CODES(X)                                                                        \
    X(SUC_ENOTFOUND, notFound, "no such entry")                                                    \
    X(SUC_EINVAL, invalidInput, "invalid argument (programmer error or malformed input)")          \
    X(SUC_ECORRUPT, corrupt, "stored data failed an integrity check; treated as a miss")           \
    X(SUC_ETOOLARGE, tooLarge, "an entry or one of its parts exceeds a configured limit")          \
    X(SUC_EDISKFULL, diskFull, "disk full (ENOSPC, EDQUOT or EFBIG while writing)")                 \
    X(SUC_EINDEXFULL, indexFull, "the index reached its configured maximum size")                  \
    X(SUC_EPERM, permissionDenied, "permission denied")                                            \
    X(SUC_EIO, io, "I/O error")                                                                    \
    X(SUC_ENOMEM, outOfMemory, "out of memory")                                                    \
    X(SUC_EVERSION, unsupportedVersion, "unsupported cache format version")                        \
    X(SUC_EUNSAFE, unsafeDirectory, "unsafe cache directory (symlink, world-writable or foreign group)") \
    X(SUC_ENOTCACHE, notACache, "the directory holds something that is not a cache")               \
    X(SUC_ENOENT, directoryNotFound, "the cache directory does not exist")                         \
    X(SUC_EFORKED, usedAfterFork, "cache handle used in a child after fork()")                     \
    X(SUC_EINDEX, index, "index (LMDB) error")                                                     \
    X(SUC_EREADERS, readersFull, "no free index reader slot, even after clearing stale ones")      \
    X(SUC_EINJECTED, io, "injected fault (tests)")                                                 \
    X(SUC_EBUSY, busy, "another compaction holds the directory's maintenance lock")                \
    X(SUC_ECAPACITY, overCapacity, "the entry alone exceeds the capacity, even after eviction")

/* Detail about a failure. `op` names the failing operation (static string). */
typedef struct suc_error {
    int code;          /* the SUC_E* code also returned */
    int sys_errno;     /* errno of the failing syscall, or 0 */
    int lib_rc;        /* LMDB or zlib return code, or 0 */
    const char *op;    /* e.g. "openat(body)", "mdb_txn_commit", "inflate" */
    char message[192]; /* human-readable summary */
} suc_error;

/* A static description of a SUC_E* code (never NULL; "unknown error" for other values). No
 * result code. */
const char *suc_strerror(int code);

/* The name of the Swift CacheError.Code a SUC_E* code surfaces as ("success" for SUC_OK,
 * "unknown" for other values); from SUC_RESULT_CODES. No result code. */
const char *suc_error_name(int code);

/* ---- Opening a cache directory --------------------------------------------------------- */

/* Durability modes (docs/Design.md invariant 7).
 * SUC_DURABILITY_DEFAULT: a process crash loses no acknowledged store; a power loss never
 *   corrupts the index but may lose the last commits (LMDB MDB_NOMETASYNC: one fdatasync per
 *   commit, the meta page synced with the next one). Body files are not synced; a body lost to
 *   power loss fails its checksum and reads as a miss.
 * SUC_DURABILITY_DURABLE: every acknowledged store survives power loss: the body file and its
 *   directory are fsynced before the index commit, and the commit is fully synced.
 * SUC_DURABILITY_RELAXED: a process crash loses no acknowledged store; commits are not synced
 *   (LMDB MDB_NOSYNC) but the index is synced at most relaxed_sync_interval_ms apart and when
 *   the last handle closes. A restart of the machine while unsynced commits may exist (a power
 *   loss, a kernel crash, or a shutdown with the cache still open) is detected at the next open
 *   and the index is discarded, never read half-written: the cache starts empty
 *   (docs/Formats.md, "The unsynced marker"). An index a live process holds is never discarded,
 *   nor one holding stores of the other modes: their first store makes every later commit to
 *   that index synced. SUC_EINVAL at open without a boot id. Opt-in; for caches that can be
 *   refilled.
 * Stores from many threads of one process are batched into one commit (group commit). */
#define SUC_DURABILITY_DEFAULT 0
#define SUC_DURABILITY_DURABLE 1
#define SUC_DURABILITY_RELAXED 2

typedef struct suc_options {
    int create;                   /* create the directory and index if missing */
    int durability;               /* SUC_DURABILITY_* */
    uint64_t map_size_initial;    /* bytes; 0 = 64 MiB */
    uint64_t map_size_max;        /* bytes; 0 = 64 GiB. At the cap, stores fail with SUC_EINDEXFULL */
    uint64_t max_body_bytes;      /* 0 = 64 MiB */
    uint32_t max_key_bytes;       /* 0 = 16 KiB (key + variant + partition) */
    uint32_t max_head_bytes;      /* 0 = 256 KiB */
    uint32_t max_user_info_bytes; /* 0 = 64 KiB */
    uint32_t inline_max_bytes;    /* stored (compressed) bodies up to this live in the record; 0 = 8192;
                                     SUC_INLINE_NEVER stores every body in a file */
    uint32_t max_readers;         /* LMDB reader slots; 0 = 1024 */
    int compression_level;        /* zlib level 1…9; 0 = 1 (fastest) */
    uint32_t touch_interval_ms;   /* last-use times are updated at most this often; 0 = 60000 */
    uint64_t hard_cap_bytes;      /* online cap on what entries take on disk (record bytes plus
                                     block-rounded body files: suc_disk_usage's entry_bytes); 0 =
                                     none. A store that
                                     would pass it first evicts least-recently-used entries in
                                     the same commit (as URLCache does at its disk capacity); only
                                     an entry larger than the cap itself fails: SUC_ECAPACITY */
    uint32_t relaxed_sync_interval_ms; /* SUC_DURABILITY_RELAXED: longest time between index
                                          syncs while stores go on; 0 = 1000 */
    uint64_t min_free_bytes;      /* free-space floor on the directory's file system (nginx's
                                     min_free); 0 = none. A store that would leave less free first
                                     evicts least-recently-used entries (docs/Reliability.md §3.8) */
} suc_options;

#define SUC_INLINE_NEVER UINT32_MAX

/* Fills `opts` with the defaults described above. No result code. */
void suc_options_init(suc_options *opts);

typedef struct suc_cache suc_cache;

/*
 * Opens (or, with opts->create, creates) the cache directory at `path`.
 *
 * Why so many checks: every file in the directory may have been written by another user of the
 * group (docs/Reliability.md §3.4). The root must not be a symlink (O_NOFOLLOW + lstat), must not be
 * world-writable, and must belong to the caller's user or one of its groups. A new root is
 * created 2770 (setgid, so the group is inherited) whatever the umask. A non-empty directory
 * with no index is refused (SUC_ENOTCACHE) so that a typo cannot turn /home into a cache.
 * Stale reader slots left by crashed processes are cleared (mdb_reader_check) at open.
 *
 * Returns SUC_OK; SUC_EINVAL without a path or `out`, or for a relaxed open on a machine with
 * no boot id; SUC_ENOENT (no directory and no opts->create), SUC_EUNSAFE, SUC_ENOTCACHE,
 * SUC_EVERSION (another directory format); SUC_EBUSY when another process holds the
 * directory's creation lock past its bounded wait; or an environment error.
 */
int suc_cache_open(const char *path, const suc_options *opts, suc_cache **out, suc_error *err);

/* Flushes pending last-use updates and releases the handle (NULL is allowed). No result code:
 * a flush or sync that fails here is dropped (call suc_cache_flush first to see its result).
 * The last close of a directory in the process also waits for the close of an index generation
 * it left (closed on a thread of its own after another process rewrote the index): when it
 * returns, none of the handle's descriptors or mappings is left. */
void suc_cache_close(suc_cache *cache);

/* Writes pending last-use times and usage counters (one write transaction, or none if nothing
 * is pending). Hits never write; this is where their effects reach the index. Returns SUC_OK
 * (also when nothing was pending), or an environment error; after a failure the hit and miss
 * counts wait for the next write, the last-use times (hints) are dropped. */
int suc_cache_flush(suc_cache *cache, suc_error *err);

/* SUC_DURABILITY_RELAXED: makes every commit so far durable now (one sync of the index) and
 * clears the directory's unsynced marker; a no-op in the other modes. Returns SUC_OK, or an
 * environment error (the sync, or writing the marker). */
int suc_cache_sync(suc_cache *cache, suc_error *err);

/* 1 when this open found that the machine had restarted while unsynced (relaxed) commits may
 * have existed, and discarded the index of that time (the cache started empty); else 0 (also
 * for NULL). No result code. */
int suc_cache_discarded_unsynced_index(const suc_cache *cache);

/* ---- Storing --------------------------------------------------------------------------- */

#define SUC_PUT_RAW 0x1u /* store the body uncompressed (already content-encoded, or incompressible) */
/* What a store does to the key's other variants, in its own commit (so a response and the record
 * that selects among its variants never disagree, and one store is one commit; docs/Formats.md
 * "Variants"). Without either flag a store touches only its own key and variant. */
#define SUC_PUT_SOLE_VARIANT 0x2u /* the entry is the key's only one: every other variant goes */
#define SUC_PUT_SELECTOR 0x4u     /* also put the selector record (selector_head, selector_app_flags,
                                     no body) at the empty variant, unless an identical one is
                                     there; replacing another record there removes every variant
                                     but this entry's */

typedef struct suc_put_params {
    const void *key; size_t key_len;             /* primary key bytes (required, non-empty) */
    const void *variant; size_t variant_len;     /* secondary key bytes (may be empty) */
    const void *partition; size_t partition_len; /* partition name, for stats and purge (may be empty) */
    const void *head; size_t head_len;           /* opaque response head (status, headers…) */
    const void *user_info; size_t user_info_len; /* opaque caller data */
    int64_t stored_at_ms;                        /* store time (ms since 1970) for remove-since */
    uint32_t app_flags;                          /* opaque to the core; returned on lookup */
    uint32_t flags;                              /* SUC_PUT_* */
    uint64_t capacity_bytes;                     /* this store's online cap (see hard_cap_bytes);
                                                    0 = the handle's hard_cap_bytes */
    const void *selector_head; size_t selector_head_len; /* SUC_PUT_SELECTOR: the selector's head */
    uint32_t selector_app_flags;                 /* SUC_PUT_SELECTOR: the selector's app_flags */
    const void *tags; size_t tags_len;           /* the entry's tags, each ended by '\n' (may be
                                                    empty): suc_purge_tag finds it by any of them.
                                                    Each tag 1…SUC_TAG_MAX_BYTES bytes, no NUL;
                                                    all together at most SUC_TAGS_MAX_BYTES */
} suc_put_params;

#define SUC_TAG_MAX_BYTES 1024
#define SUC_TAGS_MAX_BYTES 16384

/* A body being written: bytes are compressed and streamed to a temp file as they arrive, so a
 * large body never sits in memory whole. */
typedef struct suc_writer suc_writer;

/* Starts a body. `flags` takes SUC_PUT_RAW. Returns SUC_OK, or an environment error. */
int suc_writer_begin(suc_cache *cache, uint32_t flags, suc_writer **out, suc_error *err);

/* Appends body bytes. Past max_body_bytes the writer fails with SUC_ETOOLARGE and its temp
 * file is removed; only suc_writer_abort() is then valid. Returns SUC_OK; SUC_ETOOLARGE;
 * SUC_EINVAL after the writer was committed; once the writer has failed, the code it failed
 * with; or an environment error (writing the temp file). */
int suc_writer_append(suc_writer *w, const void *bytes, size_t len, suc_error *err);

/*
 * Publishes the body and its index record, in the order of docs/Design.md invariant 1: body complete
 * (fsynced in durable mode) → renamed into place → one index commit that carries the body's
 * length and checksum. Replaces any previous entry with the same key and variant (its body file
 * is unlinked after the commit). The writer is consumed whatever the result.
 * `out_version` (may be NULL) receives the record version: a number that changes whenever the
 * entry is replaced, which memory tiers use to validate what they hold.
 *
 * Returns SUC_OK; SUC_EINVAL without a key, for a NULL pointer with a length, for
 * SUC_PUT_SOLE_VARIANT with SUC_PUT_SELECTOR, for SUC_PUT_SELECTOR without a variant, or for
 * tags that are not each 1 to SUC_TAG_MAX_BYTES without NUL and ended by '\n'; SUC_ETOOLARGE
 * for a key (with variant and partition), head, selector head, user info or tags over their
 * limits; SUC_ECAPACITY for an entry larger than the capacity or its partition's quota (the
 * entry it would have replaced is removed all the same); once the writer has failed, the code
 * it failed with; or an environment error (SUC_EUNSAFE when the body's fan-out directory is not
 * a real directory).
 */
int suc_writer_commit(suc_writer *w, const suc_put_params *params, uint64_t *out_version,
                      suc_error *err);

/* Discards the body (removes its temp file). NULL is allowed. No result code. */
void suc_writer_abort(suc_writer *w);

/* Convenience: begin + append(body) + commit. Returns what those return, and SUC_EINVAL for a
 * NULL body with a length; a body over max_body_bytes is SUC_ETOOLARGE before any work. */
int suc_put(suc_cache *cache, const suc_put_params *params, const void *body, size_t body_len,
            uint64_t *out_version, suc_error *err);

/* The CRC-32 of `len` bytes (zlib's crc32: ISO-HDLC, reflected 0xEDB88320), continuing `crc`
 * (0 starts one): the checksum the core gives raw bodies, for callers' own files (snapshots).
 * No result code; `bytes` may be NULL when `len` is 0. */
uint32_t suc_checksum_crc32(uint32_t crc, const void *bytes, size_t len);

/* Replaces the head of the entry at (params->key, params->variant) while it is still
 * `expect_version` (the version a lookup read), keeping its body: the new record names the same
 * body file (or carries the same inline body), so a revalidation by 304 writes one index record
 * whatever the body's size. From `params` it takes the head, userInfo, tags, app_flags and
 * stored_at_ms; the partition must be the entry's; flags must be 0 (the variants stay as they
 * are). The refreshed entry is no longer soft-purged, and counts as used now. Durable as a store
 * in the handle's mode. Returns SUC_OK (with the new version), SUC_ENOTFOUND when the entry is
 * gone, was replaced since `expect_version`, or is in another partition (store the whole
 * response instead), SUC_EINVAL or SUC_ETOOLARGE for parameters a store would refuse, or an
 * environment error. */
int suc_refresh(suc_cache *cache, const suc_put_params *params, uint64_t expect_version, uint64_t *out_version,
                suc_error *err);

/* ---- Looking up ------------------------------------------------------------------------ */

#define SUC_GET_NO_BODY 0x1u  /* read the record only (head, sizes, version), not the body */
#define SUC_GET_NO_TOUCH 0x2u /* do not count this lookup as a use for LRU */

/* A looked-up entry. Pointers stay valid until suc_entry_free(). */
typedef struct suc_entry_view {
    const uint8_t *key; size_t key_len;
    const uint8_t *variant; size_t variant_len;
    const uint8_t *partition; size_t partition_len;
    const uint8_t *head; size_t head_len;
    const uint8_t *user_info; size_t user_info_len;
    const uint8_t *body; size_t body_len; /* NULL/0 with SUC_GET_NO_BODY; body_size is still set */
    uint64_t body_size;                   /* logical (uncompressed) body length */
    uint64_t stored_size;                 /* the body as stored: compressed (or raw) bytes */
    uint64_t footprint_size;              /* what the body adds to the directory: its file (header,
                                             stored bytes, record copy), or the stored bytes inside
                                             the record when inline; the stats' stored_bytes sum it */
    uint64_t version;
    int64_t stored_at_ms;
    int64_t last_used_ms;
    uint32_t app_flags;
    uint32_t flags;                       /* SUC_ENTRY_* */
    const uint8_t *tags; size_t tags_len; /* as stored: each tag ended by '\n' */
    int64_t invalidated_at_ms;            /* when a soft purge marked it stale; 0 = never */
} suc_entry_view;

#define SUC_ENTRY_INLINE 0x1u /* the body lives in the index record */
#define SUC_ENTRY_RAW 0x2u    /* the body is stored uncompressed */

typedef struct suc_entry suc_entry;

/*
 * Looks up the entry for (key, variant). A hit takes no write lock: one short LMDB read
 * transaction, then the body is read with pread (never mmap, so a concurrent truncation is a
 * short read, not SIGBUS), its header and length checked, and inflated no further than the
 * recorded length; the checksum is the zlib stream's Adler-32 for a compressed body, the
 * record's CRC-32 for a raw one. A body that fails a check is a miss (SUC_ENOTFOUND is returned, with
 * err->code SUC_ECORRUPT), and the entry is purged if it is still the one that was read.
 *
 * Returns SUC_OK with *out set; SUC_ENOTFOUND for a miss (no entry, a hash collision, a damaged
 * record or body, or one of another release's format: err->code says SUC_ECORRUPT or
 * SUC_EVERSION then); SUC_EINVAL without a key; or an environment error.
 */
int suc_get(suc_cache *cache, const void *key, size_t key_len, const void *variant,
            size_t variant_len, uint32_t flags, suc_entry **out, suc_error *err);

/* The entry's view (NULL for a NULL entry), and its release (NULL is allowed). No result code. */
const suc_entry_view *suc_entry_get_view(const suc_entry *entry);
void suc_entry_free(suc_entry *entry);

/* ---- Streaming a body ------------------------------------------------------------------ */

/* A body read piece by piece, so a large body never sits in memory whole. A reader belongs to
 * one thread at a time (callers serialise their reads); it holds an open descriptor and an
 * inflate stream until suc_body_reader_close(), and must be closed before its cache handle. */
typedef struct suc_body_reader suc_body_reader;

/*
 * Opens the body of an entry looked up with SUC_GET_NO_BODY (any entry works; the reader keeps
 * its own copy of the record, so `entry` may be freed at once). The checks suc_get makes before
 * reading are made here: the body file is opened relative to its fan-out directory with
 * O_NOFOLLOW|O_NONBLOCK, must be a regular file of exactly the recorded size, and its header
 * must match the record. Inline bodies are read from the record copy.
 *
 * A body that fails a check, or whose file is gone, is purged if it is still the version that
 * was read, as suc_get does, and SUC_ENOTFOUND is returned with err->code SUC_ECORRUPT (or
 * SUC_ENOTFOUND for a vanished file): the caller has not produced a byte yet, so it is a miss.
 *
 * Returns SUC_OK with *out set; SUC_ENOTFOUND for such a miss, and for a body file of another
 * release's format (err->code SUC_EVERSION; left alone); SUC_EINVAL without an entry (or with
 * one whose record no longer decodes); or an environment error.
 */
int suc_body_reader_open(suc_cache *cache, const suc_entry *entry, suc_body_reader **out,
                         suc_error *err);

/*
 * Reads up to `cap` bytes of the logical body into `buf`; `*out_len` gets the count, and 0
 * means the body ended (after it was verified). Payload bytes are read with pread in chunks
 * (never mmap) and inflated no further than the recorded length.
 *
 * The checksum (the zlib stream's Adler-32, which inflate checks at Z_STREAM_END, or the CRC-32
 * of a raw body), the stream's exact end and the file size are verified on the read that
 * produces the last byte: if anything is wrong that read fails with SUC_ECORRUPT (its bytes are
 * not returned), the entry is purged if it is still the version that was read, and the body
 * never "ends" normally. Bytes handed out earlier were not yet verified: a consumer that must
 * not act on unverified bytes keeps them until the end (an HTTP relay cannot, and instead fails
 * the response mid-stream). After any failure every later call returns the same code.
 *
 * Returns SUC_OK (with *out_len 0 once the body has ended); SUC_EINVAL without a reader, or
 * without `buf` for a non-zero `cap`; SUC_ECORRUPT as above, and for a body file shorter than
 * its record says or a stream that ends before its recorded length; after a failure, that
 * failure's code; or an environment error (pread; SUC_ENOMEM from inflate).
 */
int suc_body_reader_read(suc_body_reader *reader, void *buf, size_t cap, size_t *out_len,
                         suc_error *err);

/*
 * Moves the reader `count` logical bytes forward without handing them out: a byte range that
 * starts deep in a large body (HTTP Range) reads only what it sends. A raw body is not read at
 * all in between (the offset moves); a compressed one is inflated through the skipped part into
 * a scratch buffer (a deflate stream cannot be entered in the middle), so its Adler-32 is still
 * checked at the end. A raw body's CRC-32 cannot be checked after a skip: such a reader still
 * verifies the file's size at the end, nothing more (as any read that stops early). Returns
 * SUC_OK; SUC_EINVAL without a reader, for an encoded reader, or for `count` past the end;
 * otherwise what suc_body_reader_read returns.
 */
int suc_body_reader_skip(suc_body_reader *reader, uint64_t count, suc_error *err);

/* The length of what the reader hands out: the logical body length (from the record), or for
 * an encoded reader the stored stream's length; 0 for NULL. No result code. */
uint64_t suc_body_reader_size(const suc_body_reader *reader);

/*
 * Opens the stored zlib stream of a compressed body (not SUC_ENTRY_RAW; else SUC_EINVAL) to be
 * handed out as it is: HTTP's `deflate` content coding, or with a gzip header and trailer
 * `gzip`. The open checks and the file-size check at the end are suc_body_reader_open's; the
 * stream is not inflated, so its checksum is the reader's client's to verify. Returns what
 * suc_body_reader_open returns, and SUC_EINVAL for a raw body.
 */
int suc_body_reader_open_encoded(suc_cache *cache, const suc_entry *entry, suc_body_reader **out,
                                 suc_error *err);

/* The logical body length and its CRC-32 (what a gzip trailer carries), from the record; 0 for
 * NULL. No result code. */
uint64_t suc_body_reader_logical_size(const suc_body_reader *reader);
uint32_t suc_body_reader_crc32(const suc_body_reader *reader);

/* Releases the reader (NULL is allowed). No result code. */
void suc_body_reader_close(suc_body_reader *reader);

/* The current version of (key, variant). One index read; no body I/O. Returns SUC_OK;
 * SUC_ENOTFOUND (no entry, or a record that does not decode or whose key differs); SUC_EINVAL
 * without a key; or an environment error. */
int suc_get_version(suc_cache *cache, const void *key, size_t key_len, const void *variant,
                    size_t variant_len, uint64_t *out_version, suc_error *err);

/* Lists the variants stored under `key`: calls `fn` once per variant with its bytes and
 * version. Returning non-zero from `fn` stops the walk. Records that do not decode are skipped.
 * Returns SUC_OK (also when none is stored, or `fn` stopped the walk); SUC_EINVAL without a key
 * or `fn`; or an environment error. */
typedef int (*suc_variant_fn)(void *ctx, const uint8_t *variant, size_t variant_len,
                              uint64_t version);
int suc_list_variants(suc_cache *cache, const void *key, size_t key_len, suc_variant_fn fn,
                      void *ctx, suc_error *err);

/* ---- Removing -------------------------------------------------------------------------- */

/* Removes (key, variant); with variant == NULL removes every variant of key. Index commit
 * first, then the body files are unlinked. `out_removed` (may be NULL) gets the count. Returns
 * SUC_OK (also when nothing matched: a count of 0); SUC_EINVAL without a key, or for a NULL
 * variant with a length; or an environment error. */
int suc_remove(suc_cache *cache, const void *key, size_t key_len, const void *variant,
               size_t variant_len, uint64_t *out_removed, suc_error *err);

/* One key, or one variant of it, for suc_remove_many and suc_invalidate_many: variant == NULL
 * names every variant of key, as in suc_remove. */
typedef struct suc_key_ref {
    const void *key;
    size_t key_len;
    const void *variant;
    size_t variant_len;
} suc_key_ref;

/* Removes each of `count` keys (or variants) as suc_remove does, many in one write transaction
 * (up to 1000, with one commit and one fdatasync for them all, where a call of suc_remove each
 * costs a commit each). The transactions are sized to hold the write lock about 20 ms, with a
 * pause between two, so a store of another process waits for one of them at most; the handle keeps
 * the size from one call to the next. Every key is checked before
 * any is removed (SUC_EINVAL for a missing key or a NULL variant with a length: nothing removed).
 * `out_removed` (may be NULL) gets the count; after an environment error it counts what the
 * transactions committed before it removed, which stay removed. */
int suc_remove_many(suc_cache *cache, const suc_key_ref *refs, size_t count, uint64_t *out_removed,
                    suc_error *err);

/* Removes every entry stored at or after `since_ms`, through the store-time index (no scan), in
 * write transactions of at most 1000 entries. Returns SUC_OK, or an environment error; entries
 * removed by the transactions committed before a failure stay removed (`out_removed` counts
 * them). */
int suc_remove_since(suc_cache *cache, int64_t since_ms, uint64_t *out_removed, suc_error *err);

/* Removes every entry, in write transactions of at most 1000. Returns as suc_remove_since. */
int suc_remove_all(suc_cache *cache, uint64_t *out_removed, suc_error *err);

/* ---- Tags and soft purge (tags.c; docs/Formats.md "Tags and soft purge") --------------- */

/* Marks entries stale instead of removing them: the record keeps its body and gets a new
 * version and invalidated_at_ms (the earliest mark stays), so a layer above may still serve it
 * where stale answers are allowed (stale-while-revalidate, stale-if-error) and revalidates it. */
#define SUC_PURGE_SOFT 0x1u

typedef struct suc_purge_report {
    uint64_t removed;        /* entries removed (hard purge) */
    uint64_t invalidated;    /* entries marked stale now (soft purge; already marked ones not) */
    uint64_t records_read;   /* index records the purge read: what it cost */
    uint64_t stale_postings; /* postings whose entries were gone (or no longer tagged): dropped */
} suc_purge_report;

/*
 * Removes (or with SUC_PURGE_SOFT marks stale) every entry stored with `tag`, in `partition`
 * when `partition` is not NULL. The index keeps a posting per (tag, entry) written in the
 * store's own commit, so this reads the postings of `tag` and those entries' records only,
 * never the rest of the directory; write transactions of at most 1000 entries.
 *
 * Returns SUC_OK (also when no entry has the tag); SUC_EINVAL for a tag that is empty, longer
 * than SUC_TAG_MAX_BYTES or holds a '\n', or for a NULL partition with a length; or an
 * environment error. What the transactions before a failure did stays done, and `out` counts it.
 */
int suc_purge_tag(suc_cache *cache, const void *tag, size_t tag_len, const void *partition,
                  size_t partition_len, uint32_t flags, suc_purge_report *out, suc_error *err);

/*
 * Removes (or with SUC_PURGE_SOFT marks stale) every entry whose key is in the URL layout the
 * Swift layers write ('K' 1 ‖ partition ‖ method ‖ URL, docs/Formats.md) with this partition and
 * method and a URL starting with `url_prefix` (bytes, as keys hold them). The index keeps a
 * posting per such key in URL order, written in the store's own commit, so this reads the
 * postings under the prefix and those keys' records only, in a directory that keeps them
 * (suc_key_order_set). Entries an earlier release stored have no posting: suc_key_order_state
 * says whether every entry has one.
 *
 * Returns SUC_OK (also when nothing is under the prefix, or the directory keeps no postings);
 * SUC_EINVAL without a method, for a NULL pointer with a length, or for a partition, method or
 * prefix over 1 MiB; or an environment error; as suc_purge_tag, what the transactions before a
 * failure did stays done.
 */
int suc_purge_url_prefix(suc_cache *cache, const void *partition, size_t partition_len, const void *method,
                         size_t method_len, const void *url_prefix, size_t url_prefix_len, uint32_t flags,
                         suc_purge_report *out, suc_error *err);

/* Starts (keep = 1: builds the postings by one walk of the index, in one transaction) or stops
 * (keep = 0: drops them) keeping key-order postings in this directory; every process obeys it
 * from its next store. They cost one index key per stored URL (docs/Formats.md). Returns
 * SUC_OK, or an environment error (nothing changed). */
int suc_key_order_set(suc_cache *cache, int keep, suc_error *err);

/* Whether the directory keeps key-order postings, and whether every entry's key has its posting
 * (0 when an earlier release stored or removed entries since they were built: verify --fix
 * builds them again). Returns SUC_OK, or an environment error (both outputs 0). */
int suc_key_order_state(suc_cache *cache, int *out_kept, int *out_complete, suc_error *err);

/* The directory's eviction policy, recorded in its index: least recently used (the default, and
 * what a directory that never chose one does) or S3-FIFO (docs/Capacity.md). Every process of
 * this release obeys it from its next eviction: the online cap, compaction; partition quotas
 * evict least recently used under both. */
#define SUC_EVICTION_LRU 0
#define SUC_EVICTION_S3FIFO 1
/* Chooses the policy, building (S3-FIFO: every entry in its main queue, in last-use order) or
 * dropping its queues in one transaction. Returns SUC_OK, SUC_EINVAL for an unknown policy, or
 * an environment error (nothing changed). */
int suc_eviction_policy_set(suc_cache *cache, int policy, suc_error *err);
/* The policy the directory records (SUC_EVICTION_LRU when it records none or one this release
 * does not know). Returns SUC_OK or an environment error. */
int suc_eviction_policy_get(suc_cache *cache, int *out_policy, suc_error *err);

/* Turns a directory of format 1 (both time orders) into format 2 (the use order alone) while
 * other processes use it (docs/Formats.md, "One recency order"): in write transactions of 1,000
 * entries or keys; an upgrade stopped anywhere is finished by the next call. A directory of
 * format 2 is left as it is. Returns SUC_OK; SUC_EBUSY while a process of a release before index
 * generations has the directory open, or when /proc/locks cannot tell (nothing changed); or an
 * environment error. */
typedef struct suc_upgrade_report {
    uint32_t format_before, format_after;
    uint64_t rekeyed_entries; /* entries stored ahead of their last use, moved in the use order */
    uint64_t dropped_keys;    /* keys of the stored-time order dropped */
} suc_upgrade_report;
int suc_directory_upgrade(suc_cache *cache, suc_upgrade_report *out, suc_error *err);

/* Marks (key, variant), or with variant == NULL every variant of key, stale (see
 * SUC_PURGE_SOFT). `out_marked` (may be NULL) gets how many were marked now. Returns as
 * suc_remove: SUC_OK (also when nothing was marked); SUC_EINVAL without a key, or for a NULL
 * variant with a length; or an environment error. */
int suc_invalidate(suc_cache *cache, const void *key, size_t key_len, const void *variant,
                   size_t variant_len, uint64_t *out_marked, suc_error *err);

/* suc_invalidate for each of `count` keys (or variants), in write transactions as
 * suc_remove_many's; checked and counted as suc_remove_many. */
int suc_invalidate_many(suc_cache *cache, const suc_key_ref *refs, size_t count, uint64_t *out_marked,
                        suc_error *err);

/* ---- Request leases (lease.c; docs/Design.md "Collapsing across processes") ------------- */

/* A lease says "one process is fetching this from the origin": processes that miss the same
 * name meanwhile wait for it and then read what it stored, instead of sending the same request.
 * A lease is an advisory write lock (Linux open-file-description lock) on one byte of the
 * directory's `leases` file, at an offset given by SHA-256(name): it takes no disk write, no
 * index transaction and no thread, and the kernel drops it when its process dies (kill -9
 * included), so a dead owner's lease is free at once. Within one process leases never conflict
 * (one open file description per directory): collapse within a process first. */
#define SUC_LEASE_ACQUIRED 0 /* this process holds the lease now */
#define SUC_LEASE_HELD 1     /* another process holds it */
#define SUC_LEASE_FREE 2     /* suc_lease_state: nobody holds it */
#define SUC_LEASE_FINISHED 3 /* suc_lease_try: free because its owner finished since the given time; not taken */

/* Takes the lease of `name`, or says who has it (never waits). With `unless_finished_since_ms`
 * >= 0, a lease whose last owner released it normally at or after that time is not taken
 * (SUC_LEASE_FINISHED): the caller decided to fetch from a view of the cache older than what
 * that owner stored, and should look again. -1 takes a free lease whatever its history.
 * Returns SUC_OK with *out_state set (a lease another process holds is SUC_OK with
 * SUC_LEASE_HELD); SUC_EINVAL without a name; or an environment error from opening the `leases`
 * file or locking in it (never an LMDB code: a lease does not touch the index). */
int suc_lease_try(suc_cache *cache, const void *name, size_t name_len, int64_t unless_finished_since_ms,
                  int *out_state, suc_error *err);

/* Whether another process holds the lease of `name` now (SUC_LEASE_HELD or SUC_LEASE_FREE), and,
 * when free, whether its last owner released it normally at or after `since_ms` (1) or not
 * (0: it died, or released long ago, or a release of another name shares the note slot).
 * Returns as suc_lease_try. */
int suc_lease_state(suc_cache *cache, const void *name, size_t name_len, int64_t since_ms, int *out_state,
                    int *out_released, suc_error *err);

/* Releases the lease of `name`, first noting that its owner finished normally (what waiting
 * processes read to tell a finished owner from a dead one). Returns SUC_OK (also when the note
 * could not be written: waiters then take the lease over, still correct); SUC_EINVAL without a
 * name; or an environment error from opening the `leases` file or unlocking. */
int suc_lease_release(suc_cache *cache, const void *name, size_t name_len, suc_error *err);

/* ---- Partitions: counters and quotas (partitions.c, quota.c; docs/Capacity.md) --------- */

/* One partition's counters, kept in the index in the same commit as every put and removal.
 * `bytes` is what its entries take on disk as the capacity counts it: records + body files
 * rounded up to whole 4 KiB blocks. */
typedef struct suc_partition_info {
    const uint8_t *name; size_t name_len; /* valid during the callback only */
    uint64_t entries;
    uint64_t bytes;
    uint64_t body_bytes;  /* logical (uncompressed) body bytes */
    uint64_t stored_bytes; /* body bytes as stored (compressed or raw; a body file whole, header
                             and record copy included; inline bodies inside their record) */
    uint64_t quota_bytes; /* the partition's byte quota; 0 = none */
} suc_partition_info;

/* Calls `fn` for every partition with entries or a quota, inside one short read transaction (no
 * walk over the entries: O(partitions)); `fn` must not call into the cache; non-zero stops.
 * `out_exact` (may be NULL) is 0 when the partitions' sums differ from the directory's counters:
 * a process of an earlier release (which keeps no partition counters) stored or removed entries
 * since they were counted; `suc_verify` with SUC_VERIFY_FIX counts them again. Returns SUC_OK
 * (also when `fn` stopped); SUC_EINVAL without `fn`; or an environment error. */
typedef int (*suc_partition_fn)(void *ctx, const suc_partition_info *info);
int suc_partitions_list(suc_cache *cache, suc_partition_fn fn, void *ctx, int *out_exact, suc_error *err);

/* Let suc_partition_set_quota set a quota on a partition that has no entries yet. */
#define SUC_QUOTA_NEW_PARTITION 0x1u

typedef struct suc_quota_report {
    uint64_t indexed_entries; /* entries of the partition put into its last-use order */
    uint64_t evicted_entries; /* evicted to bring it under the quota now */
    uint64_t transactions;
} suc_quota_report;

/*
 * Sets (max_bytes > 0) or removes (max_bytes == 0) the byte quota of `partition` for the whole
 * directory: every process of this release obeys it. A store that would take the partition over
 * its quota first evicts that partition's own least recently used entries in its commit (never
 * another partition's); an entry larger than the quota is refused with SUC_ECAPACITY. Setting
 * one walks the entries once (write transactions of 1000) to build the partition's last-use
 * order, then evicts down to the quota.
 *
 * Returns SUC_OK; SUC_ENOTFOUND for a partition without entries (unless
 * SUC_QUOTA_NEW_PARTITION); SUC_EVERSION while a process of an earlier release, which would
 * neither obey the quota nor keep the counters, has the directory open; SUC_EINVAL for a NULL
 * partition with a length or a quota over INT64_MAX; or an environment error. The quota is
 * committed first: a failure in the walk or the eviction after it leaves the quota set, and
 * `out` says how far they got.
 */
int suc_partition_set_quota(suc_cache *cache, const void *partition, size_t partition_len, uint64_t max_bytes,
                            uint32_t flags, suc_quota_report *out, suc_error *err);

/* ---- Counters -------------------------------------------------------------------------- */

typedef struct suc_stats {
    uint64_t entries;
    uint64_t body_bytes;      /* sum of logical body sizes */
    uint64_t stored_bytes;    /* sum of on-disk body sizes (compressed or raw, inline included) */
    uint64_t record_bytes;    /* sum of index record sizes */
    uint64_t map_size;        /* current LMDB map size */
    uint64_t map_used;        /* bytes of the map in use (last page × page size) */
    uint32_t readers_used;
    uint32_t readers_max;
    uint64_t evictions;       /* entries removed by compaction or the hard cap, ever */
    uint64_t corrupt_purges;  /* entries purged because a check failed, ever */
    uint64_t stores;          /* entries stored, ever (every process) */
    uint64_t hits;            /* lookups answered, ever, as reported by suc_cache_count_usage */
    uint64_t misses;          /* lookups not answered, ever, likewise */
    uint32_t directory_format; /* the directory's format (SUC_DIRECTORY_FORMAT_OLDEST..SUC_DIRECTORY_FORMAT) */
} suc_stats;

/* Counters, kept exact in the same transaction as every change. Returns SUC_OK, or an
 * environment error (one read transaction). */
int suc_cache_stats(suc_cache *cache, suc_stats *out, suc_error *err);

/* Adds to the shared hit and miss counters. Lookups must not write, so the counts wait in this
 * process (atomically) and reach the index with its next write or suc_cache_flush(); what a
 * process that crashes has not yet written is lost (they are statistics, not data). No result
 * code; ignored for NULL and in a child after fork(). */
void suc_cache_count_usage(suc_cache *cache, uint64_t hits, uint64_t misses);

/* ---- Disk usage ----------------------------------------------------------------------- */

/* What the directory takes on disk, in allocated blocks, as `du -s --block-size=1` counts it
 * (docs/Capacity.md). `total_bytes` = index_bytes + body_file_bytes + leftover_bytes +
 * overhead_bytes. `entry_bytes` is informational: what the live entries take (their index
 * records plus their body files), the figure eviction works on. */
typedef struct suc_disk_usage {
    uint64_t total_bytes;
    uint64_t index_bytes;      /* the current index file and its lock file */
    uint64_t body_file_bytes;  /* body files of live entries */
    uint64_t leftover_bytes;   /* temp files, orphan bodies, retired index generations */
    uint64_t leftover_files;
    uint64_t overhead_bytes;   /* directories and the small control files */
    uint64_t entry_bytes;      /* live entries: record bytes + body_file_bytes */
    int measured;              /* 1: every file was stat'ed just now (SUC_USAGE_MEASURE) */
} suc_disk_usage;

/* Walk the whole directory and stat every file (exact; O(files)). Without it the figure comes
 * from the counters, two fstat calls and a listing of tmp/ (cheap; leftovers and directories
 * as the last measurement in this process found them). */
#define SUC_USAGE_MEASURE 0x1u

/* Returns SUC_OK; SUC_EINVAL without `out`; or an environment error (reading the counters; a
 * file that cannot be listed or stat'ed during a walk is left out, not a failure). */
int suc_cache_disk_usage(suc_cache *cache, uint32_t flags, suc_disk_usage *out, suc_error *err);

/* ---- Maintenance (compaction, verification, listing) ----------------------------------- */

/* Walks every entry in index order, in read transactions of at most `batch` entries (so no
 * reader pins old pages for long); `fn` runs outside any transaction with the record only (no
 * body; body == NULL). Entries whose record is unreadable are counted in `out_unreadable` and
 * skipped. Returning non-zero from `fn` stops the walk. Returns SUC_OK (also when `fn` stopped
 * the walk); SUC_EINVAL without `fn`; or an environment error, which ends the walk after the
 * batches `fn` has seen. */
typedef int (*suc_scan_fn)(void *ctx, const suc_entry_view *view);
int suc_scan(suc_cache *cache, uint32_t batch, suc_scan_fn fn, void *ctx, uint64_t *out_unreadable,
             suc_error *err);

typedef struct suc_compact_params {
    uint64_t target_bytes;     /* evict (by the directory's policy) until the entries' record and
                                  body file bytes, as suc_cache_disk_usage's entry_bytes and the
                                  capacity count them, are <= this; UINT64_MAX = no size target */
    uint64_t disk_target_bytes; /* hold the directory to this many bytes on disk as `du` counts
                                  them (suc_cache_disk_usage): evict, remove leftovers, rewrite
                                  the index, measure; 0 or UINT64_MAX = no such target */
    int64_t unused_before_ms;  /* also evict entries last used before this time; 0 = none */
    uint64_t grace_ms;         /* orphan body files and temp files older than this are removed */
    uint32_t batch;            /* entries per write transaction at most (a batch also ends after 8 ms
                                  of work); 0 = 500 */
    int dry_run;               /* count what would go, change nothing */
    int wait_for_lock;         /* wait for a running compaction instead of SUC_EBUSY */
    /* progress: called between transactions with entries evicted so far (may be NULL) */
    void (*progress)(void *ctx, uint64_t evicted_entries, uint64_t evicted_bytes);
    void *progress_ctx;
} suc_compact_params;

typedef struct suc_compact_report {
    uint64_t evicted_entries;
    uint64_t evicted_bytes;    /* record and body file bytes freed */
    uint64_t expired_entries;  /* of those, evicted for unused_before_ms */
    uint64_t orphan_files;
    uint64_t orphan_bytes;
    uint64_t temp_files;
    uint64_t stray_index_keys; /* time-index keys whose record is gone */
    uint64_t transactions;
    uint64_t disk_bytes_before;  /* suc_disk_usage total_bytes before and after: measured with a
                                    disk target, the cheap estimate without one */
    uint64_t disk_bytes_after;
    uint64_t index_bytes_before; /* the index file and its lock file */
    uint64_t index_bytes_after;
    uint64_t index_rewrites;     /* generations written */
    uint64_t longest_rewrite_ms; /* the longest rewrite, start to switch (stores go on meanwhile) */
    int index_rewrite_deferred;  /* evicted, but the index file was not rewritten: why in
                                    index_rewrite_deferred_reason */
    uint64_t quota_evicted_entries; /* of evicted_entries, evicted to hold partitions to their
                                    quotas (suc_partition_set_quota) */
    int index_rewrite_skipped_for_space; /* the file system had no room for the rewritten index:
                                    evicted and unlinked, the index file left as it was */
    uint64_t longest_lock_ms;    /* the longest this compaction held the index's write lock (an
                                    eviction batch or a rewrite's switch): the longest any store
                                    of any process waited for it */
    int index_rewrite_deferred_reason; /* SUC_REWRITE_DEFERRED_*, 0 when not deferred */
    int index_rewrite_deferred_pid;    /* with SUC_REWRITE_DEFERRED_EARLIER_RELEASE: that process */
    char index_rewrite_deferred_message[192]; /* the refusal in words, "" when not deferred */
    uint64_t carried_stores; /* other processes' stores committed by this compaction's eviction
                                batches: they were queued behind one and went in its commit */
} suc_compact_report;

/* Why a compaction left the index file as it was (suc_compact_report.index_rewrite_deferred). */
enum {
    SUC_REWRITE_DEFERRED_EARLIER_RELEASE = 1,   /* a process of a release before index generations
                                                   has index.lmdb open (its pid in the report) */
    SUC_REWRITE_DEFERRED_CANNOT_TELL = 2,       /* /proc/locks could not say whether one has: a pid
                                                   namespace of its own, no /proc/locks, or this
                                                   process's own lock not listed in it */
    SUC_REWRITE_DEFERRED_GENERATION_CHANGED = 3, /* another generation was published during the copy,
                                                   twice in a row */
    SUC_REWRITE_DEFERRED_LOCK_HELD = 4,         /* a process held a generation's lock file
                                                   exclusively past the bounded wait */
};

/*
 * Holds the directory to a size while services keep using it (`urlcache compact` from cron).
 * Eviction walks the last-use index oldest first in write transactions of `batch` entries and
 * unlinks bodies only after each commit (delete order), so live writers wait at most one batch;
 * a batch shrinks when its commit held the write lock past 20 ms, and a waiting store takes the
 * lock between two; another process's store queued behind a batch goes in its commit
 * (carried_stores).
 * Then the index is rewritten compactly into a new generation when that is what stands between
 * the directory and its target, or frees a quarter of the index file: LMDB never returns pages
 * to the file system, so without it `du` would not go down. The rewrite copies from read
 * snapshots while every process journals what it changes, then holds the write lock only to
 * replay the last changes and switch (milliseconds); lookups never wait. The eviction target comes from a model of the rewritten
 * index; the result is measured, and up to four rounds close the gap.
 * Orphans — body files no record refers to, temp files of crashed writers — are removed only
 * when older than `grace_ms`, so an in-flight store is never touched. An advisory lock on
 * DIR/compact.lock keeps two compactions from overlapping (SUC_EBUSY, or wait).
 *
 * Returns SUC_OK; SUC_EINVAL without params or report; SUC_EBUSY when another compaction holds
 * the lock and `wait_for_lock` is 0; or an environment error (what was evicted before it stays
 * evicted). A rewrite that cannot run is not a failure: the report says so
 * (index_rewrite_deferred, with its reason, when an earlier release holds index.lmdb or that
 * cannot be told,
 * index_rewrite_skipped_for_space when the file system has no room for the copy).
 */
int suc_compact(suc_cache *cache, const suc_compact_params *params, suc_compact_report *out,
                suc_error *err);

/*
 * Rewrites the index compactly into a new generation now (what suc_compact does when the index
 * stands between the directory and its target): every process switches to it at its next
 * operation; stores wait for the copy, lookups never do. This process has closed the old
 * generation's index when it returns (other processes close it on a thread of their own).
 * Takes the compaction lock (SUC_EBUSY unless `wait_for_lock`). `out_entries` (may be NULL)
 * gets the entries copied.
 *
 * Returns SUC_OK; SUC_EBUSY when another compaction holds the lock (without `wait_for_lock`), or
 * while a process of a release before index generations may use index.lmdb (also when
 * /proc/locks cannot tell); or an environment error (SUC_EDISKFULL when the file system has no
 * room for the copy).
 */
int suc_rewrite_index(suc_cache *cache, int wait_for_lock, uint64_t *out_entries, suc_error *err);

typedef struct suc_verify_report {
    uint64_t entries;          /* records checked */
    uint64_t unreadable_records;
    uint64_t missing_bodies;
    uint64_t damaged_bodies;   /* wrong size, header, checksum or stream */
    uint64_t orphan_files;     /* body files no record refers to (any age) */
    uint64_t temp_files;
    uint64_t stray_index_keys;
    uint64_t repaired;         /* with fix: entries purged + files removed + keys dropped */
    int counters_match;        /* the meta counters equal the sums over the records */
    int rebuilt;               /* with rebuild: records restored from body files */
    uint64_t inline_entries;   /* bodies inside their record: a lost index cannot be rebuilt
                                  with them (SUC_VERIFY_REBUILD reads body files) */
    uint64_t leftover_bytes;   /* allocated bytes of the orphan and temp files found */
    uint64_t other_format_entries; /* records of another major format (another release's):
                                  neither damage nor purged (docs/Formats.md) */
    int partition_counters_match; /* every partition's counters equal the sums over its records
                                  (an earlier release sharing the directory does not keep them) */
    uint64_t key_order_mismatches; /* with a complete URL order (suc_key_order_set): postings
                                  missing for stored keys plus postings naming no stored key */
} suc_verify_report;

#define SUC_VERIFY_FIX 0x1u      /* purge damaged entries, remove orphans, recompute counters */
#define SUC_VERIFY_BODIES 0x2u   /* read and check every body (slow), not only sizes and headers */
#define SUC_VERIFY_REBUILD 0x4u  /* restore records from body files whose record is missing */

/* Checks the index against the body files both ways (cacache verify, diskcache check(fix:)).
 * Returns SUC_OK whatever damage it found (the report counts it, and with SUC_VERIFY_FIX what
 * was repaired); SUC_EINVAL without a report; or an environment error. */
int suc_verify(suc_cache *cache, uint32_t flags, suc_verify_report *out, suc_error *err);

#ifdef __cplusplus
}
#endif

#endif /* SHARED_URL_CACHE_H */
