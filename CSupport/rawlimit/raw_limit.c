/*
 * raw_limit.c — the raw limit of the hot paths (see suc_raw_limit.h): LMDB + files + zlib and
 * nothing else. Benchmarks only; the cache never calls it.
 *
 * Record (the LMDB value), little-endian host order (one machine, benchmarks only):
 *    0  u8      flags: 1 = inline
 *    1  u8[3]   padding
 *    4  u32     stored_size (compressed bytes)
 *    8  u64     body_size
 *   16  u8[16]  body id (file bodies: bodies/<hex id[0]>/<hex id>)
 *   32  payload (inline bodies only)
 */
#include "suc_raw_limit.h"

#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define ID_LEN 16
#define REC_LEN 32
#define PATH_LEN (3 + 2 * ID_LEN + 1)

typedef struct rec {
    uint8_t flags;
    uint8_t pad[3];
    uint32_t stored_size;
    uint64_t body_size;
    uint8_t id[ID_LEN];
} rec;
_Static_assert(sizeof(rec) == REC_LEN, "record layout");

struct rl_env {
    MDB_env *env;
    MDB_dbi dbi;
    MDB_txn *rtxn; /* the reused read transaction (reset between uses) */
    int bodiesfd, tmpfd;
    uint32_t inline_max;
    int durable; /* RL_DURABLE */
    z_stream inflater, deflater;
    uint8_t *buf; /* compressed bytes: read for hits, written for stores */
    size_t cap;
    uint8_t id_seed[8];
    uint64_t id_counter;
};

static const char HEX[] = "0123456789abcdef";

void rl_key_hash(const void *key, size_t key_len, uint8_t out[32]) {
    static const uint64_t seeds[4] = {0xcbf29ce484222325ull, 0x84222325cbf29ce4ull,
                                      0x9e3779b97f4a7c15ull, 0xc2b2ae3d27d4eb4full};
    const uint8_t *p = key;
    for (int lane = 0; lane < 4; lane++) {
        uint64_t h = seeds[lane];
        for (size_t i = 0; i < key_len; i++) {
            h ^= p[i];
            h *= 0x100000001b3ull;
        }
        h ^= h >> 33; /* finalise so nearby keys spread over the B-tree */
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 33;
        memcpy(out + 8 * lane, &h, 8);
    }
}

static void body_path(const uint8_t id[ID_LEN], char out[PATH_LEN]) {
    out[0] = HEX[id[0] >> 4];
    out[1] = HEX[id[0] & 15];
    out[2] = '/';
    for (int i = 0; i < ID_LEN; i++) {
        out[3 + 2 * i] = HEX[id[i] >> 4];
        out[4 + 2 * i] = HEX[id[i] & 15];
    }
    out[PATH_LEN - 1] = '\0';
}

static int reserve(rl_env *e, size_t n) {
    if (e->cap >= n) return 0;
    size_t cap = e->cap ? e->cap : 4096;
    while (cap < n) cap *= 2;
    uint8_t *p = realloc(e->buf, cap);
    if (!p) return -ENOMEM;
    e->buf = p;
    e->cap = cap;
    return 0;
}

int rl_open(const char *dir, unsigned flags, uint32_t inline_max, uint64_t map_size, int level,
            rl_env **out) {
    *out = NULL;
    rl_env *e = calloc(1, sizeof *e);
    if (!e) return -ENOMEM;
    e->bodiesfd = e->tmpfd = -1;
    e->inline_max = inline_max;
    e->durable = (flags & RL_DURABLE) != 0;
    int rc = 0;
    char path[4096];
    if (mkdir(dir, 0770) < 0 && errno != EEXIST) { rc = -errno; goto fail; }
    snprintf(path, sizeof path, "%s/bodies", dir);
    if (mkdir(path, 0770) < 0 && errno != EEXIST) { rc = -errno; goto fail; }
    if ((e->bodiesfd = open(path, O_RDONLY | O_DIRECTORY)) < 0) { rc = -errno; goto fail; }
    for (int i = 0; i < 256; i++) {
        char sub[3] = {HEX[i >> 4], HEX[i & 15], 0};
        if (mkdirat(e->bodiesfd, sub, 0770) < 0 && errno != EEXIST) { rc = -errno; goto fail; }
    }
    snprintf(path, sizeof path, "%s/tmp", dir);
    if (mkdir(path, 0770) < 0 && errno != EEXIST) { rc = -errno; goto fail; }
    if ((e->tmpfd = open(path, O_RDONLY | O_DIRECTORY)) < 0) { rc = -errno; goto fail; }
    if (getrandom(e->id_seed, sizeof e->id_seed, 0) != (ssize_t)sizeof e->id_seed) { rc = -EIO; goto fail; }

    if ((rc = mdb_env_create(&e->env))) goto fail;
    if ((rc = mdb_env_set_mapsize(e->env, map_size ? (size_t)map_size : (size_t)8 << 30))) goto fail;
    unsigned mflags = MDB_NOSUBDIR | MDB_NOTLS | MDB_NORDAHEAD;
    if (!e->durable) mflags |= MDB_NOMETASYNC;
    if (flags & RL_NOSYNC) mflags |= MDB_NOSYNC;
    snprintf(path, sizeof path, "%s/index.lmdb", dir);
    if ((rc = mdb_env_open(e->env, path, mflags, 0660))) goto fail;
    MDB_txn *txn;
    if ((rc = mdb_txn_begin(e->env, NULL, 0, &txn))) goto fail;
    if ((rc = mdb_dbi_open(txn, NULL, 0, &e->dbi)) || (rc = mdb_txn_commit(txn))) goto fail;
    if ((rc = mdb_txn_begin(e->env, NULL, MDB_RDONLY, &e->rtxn))) goto fail;
    mdb_txn_reset(e->rtxn);

    if (inflateInit(&e->inflater) != Z_OK) { rc = Z_MEM_ERROR; goto fail; }
    if (deflateInit(&e->deflater, level < 1 ? 1 : level > 9 ? 9 : level) != Z_OK) {
        inflateEnd(&e->inflater);
        rc = Z_MEM_ERROR;
        goto fail;
    }
    *out = e;
    return 0;
fail:
    if (e->rtxn) mdb_txn_abort(e->rtxn);
    if (e->env) mdb_env_close(e->env);
    if (e->bodiesfd >= 0) close(e->bodiesfd);
    if (e->tmpfd >= 0) close(e->tmpfd);
    free(e);
    return rc ? rc : -EIO;
}

void rl_close(rl_env *e) {
    if (!e) return;
    mdb_txn_abort(e->rtxn);
    mdb_env_close(e->env);
    close(e->bodiesfd);
    close(e->tmpfd);
    inflateEnd(&e->inflater);
    deflateEnd(&e->deflater);
    free(e->buf);
    free(e);
}

/* Inflates exactly body_size bytes from `in` into `out` with the reused stream. */
static int inflate_into(rl_env *e, const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len) {
    z_stream *zs = &e->inflater;
    if (inflateReset(zs) != Z_OK) return Z_STREAM_ERROR;
    zs->next_in = (Bytef *)in;
    zs->avail_in = (uInt)in_len;
    zs->next_out = out;
    zs->avail_out = (uInt)out_len;
    int zrc = inflate(zs, Z_FINISH);
    return zrc == Z_STREAM_END && zs->avail_out == 0 ? 0 : (zrc == Z_STREAM_END ? Z_DATA_ERROR : zrc);
}

int rl_get(rl_env *e, const void *key, size_t key_len, uint8_t *out, size_t cap, size_t *out_len) {
    uint8_t k32[32];
    rl_key_hash(key, key_len, k32);
    int rc = mdb_txn_renew(e->rtxn);
    if (rc) return rc;
    MDB_val k = {32, k32}, v;
    rc = mdb_get(e->rtxn, e->dbi, &k, &v);
    if (rc) {
        mdb_txn_reset(e->rtxn);
        return rc;
    }
    rec r;
    memcpy(&r, v.mv_data, REC_LEN);
    *out_len = (size_t)r.body_size;
    if (r.body_size > cap) {
        mdb_txn_reset(e->rtxn);
        return -ENOBUFS;
    }
    if (r.flags & 1) { /* inline: inflate straight out of the map, then end the read */
        rc = inflate_into(e, (const uint8_t *)v.mv_data + REC_LEN, r.stored_size, out, (size_t)r.body_size);
        mdb_txn_reset(e->rtxn);
        return rc;
    }
    mdb_txn_reset(e->rtxn); /* short read transaction: the file is read outside it */
    char path[PATH_LEN];
    body_path(r.id, path);
    int fd = openat(e->bodiesfd, path, O_RDONLY);
    if (fd < 0) return errno == ENOENT ? RL_NOTFOUND : -errno;
    if ((rc = reserve(e, r.stored_size))) {
        close(fd);
        return rc;
    }
    ssize_t got = pread(fd, e->buf, r.stored_size, 0);
    int saved = errno;
    close(fd);
    if (got != (ssize_t)r.stored_size) return got < 0 ? -saved : -EIO;
    return inflate_into(e, e->buf, r.stored_size, out, (size_t)r.body_size);
}

int rl_contains(rl_env *e, const void *key, size_t key_len) {
    uint8_t k32[32];
    rl_key_hash(key, key_len, k32);
    int rc = mdb_txn_renew(e->rtxn);
    if (rc) return rc;
    MDB_val k = {32, k32}, v;
    rc = mdb_get(e->rtxn, e->dbi, &k, &v);
    mdb_txn_reset(e->rtxn);
    return rc;
}

/* One write transaction: put `val` at `k32` and report the body file it replaced, if any. */
static int commit_put(rl_env *e, const uint8_t k32[32], MDB_val *val, uint8_t old_id[ID_LEN], int *had_old) {
    MDB_txn *txn;
    int rc = mdb_txn_begin(e->env, NULL, 0, &txn);
    if (rc) return rc;
    MDB_val k = {32, (void *)k32}, v;
    *had_old = 0;
    if (mdb_get(txn, e->dbi, &k, &v) == 0 && !(((const uint8_t *)v.mv_data)[0] & 1)) {
        memcpy(old_id, (const uint8_t *)v.mv_data + 16, ID_LEN);
        *had_old = 1;
    }
    if (val) rc = mdb_put(txn, e->dbi, &k, val, 0);
    else if ((rc = mdb_del(txn, e->dbi, &k, NULL)) == MDB_NOTFOUND) rc = 0;
    if (rc) {
        mdb_txn_abort(txn);
        return rc;
    }
    return mdb_txn_commit(txn);
}

int rl_put(rl_env *e, const void *key, size_t key_len, const void *body, size_t body_len) {
    uint8_t k32[32];
    rl_key_hash(key, key_len, k32);
    z_stream *zs = &e->deflater;
    if (deflateReset(zs) != Z_OK) return Z_STREAM_ERROR;
    size_t bound = deflateBound(zs, (uLong)body_len);
    int rc = reserve(e, REC_LEN + bound);
    if (rc) return rc;
    zs->next_in = (Bytef *)body;
    zs->avail_in = (uInt)body_len;
    zs->next_out = e->buf + REC_LEN;
    zs->avail_out = (uInt)bound;
    if (deflate(zs, Z_FINISH) != Z_STREAM_END) return Z_BUF_ERROR;
    size_t stored = bound - zs->avail_out;

    rec r = {0};
    r.stored_size = (uint32_t)stored;
    r.body_size = body_len;
    int is_inline = stored <= e->inline_max;
    char final_path[PATH_LEN];
    MDB_val val;
    if (is_inline) {
        r.flags = 1;
        val.mv_size = REC_LEN + stored;
    } else {
        memcpy(r.id, e->id_seed, 8);
        uint64_t n = ++e->id_counter;
        memcpy(r.id + 8, &n, 8);
        r.id[0] ^= (uint8_t)n; /* spread over the fan-out directories */
        char tmp[1 + 2 * ID_LEN + 1];
        tmp[0] = 't';
        for (int i = 0; i < ID_LEN; i++) {
            tmp[1 + 2 * i] = HEX[r.id[i] >> 4];
            tmp[2 + 2 * i] = HEX[r.id[i] & 15];
        }
        tmp[1 + 2 * ID_LEN] = '\0';
        int fd = openat(e->tmpfd, tmp, O_WRONLY | O_CREAT | O_EXCL, 0660);
        if (fd < 0) return -errno;
        ssize_t put = pwrite(fd, e->buf + REC_LEN, stored, 0);
        int saved = errno;
        if (put == (ssize_t)stored && e->durable && fdatasync(fd) < 0) {
            saved = errno;
            put = -1;
        }
        close(fd);
        body_path(r.id, final_path);
        if (put != (ssize_t)stored || renameat(e->tmpfd, tmp, e->bodiesfd, final_path) < 0) {
            saved = put == (ssize_t)stored ? errno : (put < 0 ? saved : EIO);
            unlinkat(e->tmpfd, tmp, 0);
            return -saved;
        }
        if (e->durable) { /* the rename itself survives power loss only once its directory is synced */
            char sub[3] = {final_path[0], final_path[1], 0};
            int dfd = openat(e->bodiesfd, sub, O_RDONLY | O_DIRECTORY);
            int synced = dfd >= 0 && fsync(dfd) == 0;
            saved = errno;
            if (dfd >= 0) close(dfd);
            if (!synced) {
                unlinkat(e->bodiesfd, final_path, 0);
                return -saved;
            }
        }
        val.mv_size = REC_LEN;
    }
    memcpy(e->buf, &r, REC_LEN);
    val.mv_data = e->buf;
    uint8_t old_id[ID_LEN];
    int had_old;
    rc = commit_put(e, k32, &val, old_id, &had_old);
    if (rc) {
        if (!is_inline) unlinkat(e->bodiesfd, final_path, 0);
        return rc;
    }
    if (had_old) { /* the replaced body, after the commit */
        char old_path[PATH_LEN];
        body_path(old_id, old_path);
        unlinkat(e->bodiesfd, old_path, 0);
    }
    return 0;
}

int rl_remove(rl_env *e, const void *key, size_t key_len) {
    uint8_t k32[32];
    rl_key_hash(key, key_len, k32);
    uint8_t old_id[ID_LEN];
    int had_old;
    int rc = commit_put(e, k32, NULL, old_id, &had_old);
    if (rc) return rc;
    if (had_old) {
        char old_path[PATH_LEN];
        body_path(old_id, old_path);
        unlinkat(e->bodiesfd, old_path, 0);
    }
    return 0;
}

int rl_count(rl_env *e, uint64_t *out) {
    int rc = mdb_txn_renew(e->rtxn);
    if (rc) return rc;
    MDB_stat st;
    rc = mdb_stat(e->rtxn, e->dbi, &st);
    mdb_txn_reset(e->rtxn);
    if (rc == 0) *out = st.ms_entries;
    return rc;
}
