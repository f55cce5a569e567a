/*
 * suc_raw_limit.h — the machine's raw limit for the cache's hot paths (benchmarks only).
 *
 * A minimal C loop doing exactly the design's hot paths and nothing else, so the benchmarks
 * can print "ours / raw limit" measured in the same run on the same machine:
 *
 *   hit    one get in a reused read transaction (renew/reset), then for a file body
 *          openat + pread + close, then inflate with a reused z_stream into the caller's buffer;
 *          an inline body is inflated straight out of the LMDB map.
 *   miss   one get in a reused read transaction.
 *   store  deflate with a reused z_stream; an inline body (compressed <= inline_max) goes into
 *          the LMDB value, a file body is written with openat(O_CREAT|O_EXCL) + one pwrite +
 *          close + renameat into bodies/xx/; then one write transaction (get the old record,
 *          put the new one, commit) and unlink of the replaced body file after the commit.
 *   remove one write transaction (get, del, commit), then unlink of the body file.
 *
 * What a correct cache needs is kept (unique temp names, rename publication, replaced files
 * unlinked after the commit, bounded inflate into a buffer of the recorded size); what it skips
 * is every check and every feature: no key verification against collisions, no CRC or header
 * checks, no fstat, no time or use indexes, no counters, no head/userInfo, no locking (one
 * handle per thread), no map growth, no fork check.
 *
 * Keys: the LMDB key is 32 bytes derived from the caller's key bytes by a cheap
 * non-cryptographic hash (four seeded 64-bit FNV-1a lanes, see rl_key_hash). The cache proper
 * hashes with SHA-256 (key and variant) and stores the full key to rule collisions out; that
 * difference is part of what the ratio shows.
 *
 * Environment: MDB_NOSUBDIR | MDB_NOTLS | MDB_NOMETASYNC (one fdatasync per commit, like the
 * cache's default durability), or with RL_NOSYNC also MDB_NOSYNC (no fsync at all: the
 * "without fsync" limit). Body files are never fsynced (like the cache's default mode), except
 * with RL_DURABLE (the durable mode's limit: full commits, body and directory synced).
 *
 * Not thread-safe: one rl_env per thread. Every function returns 0 on success, RL_NOTFOUND for
 * an absent key, or a negative errno / positive LMDB or zlib code on failure.
 */
#ifndef SUC_RAW_LIMIT_H
#define SUC_RAW_LIMIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rl_env rl_env;

/* The key is absent (LMDB's MDB_NOTFOUND). */
#define RL_NOTFOUND (-30798)

/* rl_open flags */
#define RL_NOSYNC 0x1u /* MDB_NOSYNC: commits do not fsync */
/* The cache's durable mode, done minimally: every commit fully synced (no MDB_NOMETASYNC),
 * a file body fdatasync'ed before its rename and its bodies/xx/ directory fsync'ed after. */
#define RL_DURABLE 0x2u

/* Bodies whose compressed size is at most this live in the LMDB value (the cache's default
 * inline limit); 0 puts every body in a file. */
#define RL_INLINE_DEFAULT 8192u

/*
 * Opens (creating when missing) a raw-limit store at `dir`: dir/index.lmdb, dir/tmp/ and the
 * 256 fan-out directories dir/bodies/00..ff/.
 *   flags          RL_NOSYNC, RL_DURABLE or 0.
 *   inline_max     compressed bodies up to this many bytes are stored in the LMDB value.
 *   map_size       LMDB map size in bytes (fixed; 0 means 8 GiB).
 *   level          zlib level for stores (1 = the cache's default).
 */
int rl_open(const char *dir, unsigned flags, uint32_t inline_max, uint64_t map_size, int level,
            rl_env **out);
void rl_close(rl_env *env);

/* The 32-byte LMDB key of `key` (exposed for tests; the functions below call it). */
void rl_key_hash(const void *key, size_t key_len, uint8_t out[32]);

/*
 * Hit path. Inflates the body of `key` into `out` (capacity `cap`); `*out_len` gets its length.
 * RL_NOTFOUND when absent; -ENOBUFS (with *out_len set) when `cap` is too small.
 */
int rl_get(rl_env *env, const void *key, size_t key_len, uint8_t *out, size_t cap, size_t *out_len);

/* Miss path (and presence test): one get; 0 when present, RL_NOTFOUND when absent. */
int rl_contains(rl_env *env, const void *key, size_t key_len);

/* Store path: compresses and stores `body`, replacing any entry at `key`. */
int rl_put(rl_env *env, const void *key, size_t key_len, const void *body, size_t body_len);

/* Removes `key` (0 also when it was absent). */
int rl_remove(rl_env *env, const void *key, size_t key_len);

/* Number of entries in the index. */
int rl_count(rl_env *env, uint64_t *out);

#ifdef __cplusplus
}
#endif

#endif
