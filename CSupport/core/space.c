/*
 * space.c — a full file system is a capacity event, not an outage (docs/Operating.md, "A full
 * file system"; docs/Reliability.md §3.8).
 *
 * The cache's own cap (diskCapacity) counts only its bytes; the file system is shared with
 * everything else on it, and fills up whatever the cap says. A store that meets ENOSPC or EDQUOT
 * (writing its body, or committing the index) frees space by evicting least-recently-used
 * entries and tries once more, instead of failing every store until an operator steps in.
 *
 * Eviction here runs in the opposite order to every other removal: body files are unlinked
 * first, the index commit follows. On a full file system the commit itself may not fit (LMDB
 * writes copies of the pages it changes, and may need new ones at the end of the file), and
 * only the unlinks are sure to free blocks. An entry whose body file is gone before its record
 * is a miss that is purged at its next lookup, which is what a lost body always was; so the
 * reversed order can cost entries, never serve a wrong one.
 */
#include "operations.h"
#include "os.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

/* At most this many entries are evicted for one store's relief: a store waits for them. */
#define RELIEF_MAX_ENTRIES 512u
/* Freed beyond the failed write's own size, so that the next stores fit too. */
#define RELIEF_SLACK_BYTES (4ull << 20)

/* Set while this thread relieves: the relief's own commit must not relieve again. */
static _Thread_local int g_relieving;


typedef struct relief_ctx {
    const uint8_t *ikeys;
    size_t count;
    suc_op op;
    uint64_t evicted;
} relief_ctx;

static void relief_reset(void *vctx) {
    relief_ctx *ctx = vctx;
    ctx->op.dead_count = 0;
    ctx->evicted = 0;
}

static int relief_apply(suc_cache *c, MDB_txn *txn, void *vctx, suc_error *err) {
    relief_ctx *ctx = vctx;
    suc_counters d = {0};
    for (size_t i = 0; i < ctx->count; i++) {
        int rc = suc_index_delete(c, txn, ctx->ikeys + i * SUC_IKEY_LEN, &ctx->op, &d, err);
        if (rc == MDB_NOTFOUND) continue; /* removed or replaced meanwhile */
        if (rc) return rc;
        ctx->evicted++;
    }
    d.evictions = (int64_t)ctx->evicted;
    return suc_meta_add_counters(c, txn, &d, err);
}

/* The least recently used entries with body files, oldest first, until their files add up to
 * `want` bytes: their index keys and body ids. */
static size_t pick_victims(suc_cache *c, uint64_t want, uint8_t *ikeys, uint8_t *ids) {
    MDB_txn *txn;
    if (suc_rtxn_begin(c, &txn, NULL)) return 0;
    MDB_cursor *cur;
    size_t n = 0;
    uint64_t freed = 0;
    if (mdb_cursor_open(txn, c->dbi_by_use, &cur) == 0) {
        MDB_val k, v;
        for (int mrc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); mrc == 0 && n < RELIEF_MAX_ENTRIES && freed < want;
             mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
            if (k.mv_size != SUC_TKEY_LEN) continue;
            const uint8_t *ikey = (const uint8_t *)k.mv_data + 8;
            MDB_val mv;
            suc_record r;
            if (!suc_use_order_key_live(c, txn, k.mv_data)) continue; /* a stray: not this entry's age */
            if (suc_index_record_get(c, txn, ikey, &r, &mv)) continue;
            if (r.flags & SUC_REC_INLINE) continue; /* frees no block by itself */
            memcpy(ikeys + n * SUC_IKEY_LEN, ikey, SUC_IKEY_LEN);
            memcpy(ids + n * SUC_BODY_ID_LEN, r.body_id, SUC_BODY_ID_LEN);
            freed += suc_record_file_bytes(&r, mv.mv_size);
            n++;
        }
        mdb_cursor_close(cur);
    }
    suc_rtxn_end(c, txn);
    return n;
}

uint64_t suc_relieve_disk_full(suc_cache *c, uint64_t want) {
    if (g_relieving) return 0;
    g_relieving = 1;
    uint8_t *ikeys = malloc((size_t)RELIEF_MAX_ENTRIES * SUC_IKEY_LEN);
    uint8_t *ids = malloc((size_t)RELIEF_MAX_ENTRIES * SUC_BODY_ID_LEN);
    uint64_t evicted = 0;
    size_t n = ikeys && ids ? pick_victims(c, want + RELIEF_SLACK_BYTES, ikeys, ids) : 0;
    if (n) {
        suc_body_unlink_ids(c, ids, n); /* first: the blocks are free whatever the commit does */
        relief_ctx ctx = {ikeys, n, {0}, 0};
        if (suc_write_txn_ex(c, relief_apply, relief_reset, &ctx, 1, NULL) == SUC_OK) evicted = ctx.evicted;
        suc_op_release(&ctx.op);
        if (!evicted) evicted = n; /* their bodies are gone all the same: misses, purged when read */
    }
    free(ikeys);
    free(ids);
    g_relieving = 0;
    return evicted;
}

void suc_hold_free_floor(suc_cache *c, uint64_t incoming) {
    if (!c->opts.min_free_bytes) return;
    int64_t available = suc_fs_free_bytes(c);
    uint64_t want = c->opts.min_free_bytes + incoming;
    if (available < 0 || (uint64_t)available >= want) return;
    (void)suc_relieve_disk_full(c, want - (uint64_t)available);
}

int suc_pwrite_relieving(suc_cache *c, int fd, const void *buf, size_t len, off_t off) {
    if (suc_os_pwrite_full(fd, buf, len, off) == 0) return 0;
    if (!suc_errno_is_disk_full(errno) || !suc_relieve_disk_full(c, len)) return -1;
    return suc_os_pwrite_full(fd, buf, len, off);
}
