/*
 * commit.c — the write operations and their group commit: a store under the online cap and its
 * partition's quota, with its variant rule; removals, soft purges and purges of damaged entries.
 * Operations queue here; the first writer to find no batch in progress commits them all in one
 * transaction (one fsync for many stores), carrying the queued last-use updates and usage counts.
 */
#include "operations.h"
#include "os.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct batch_ctx {
    suc_op *ops;
    suc_op *foreign; /* other processes' queued stores this commit carries (handoff.c) */
    size_t foreign_count;
    suc_touch *touches;
    size_t touch_count;
    suc_counters delta;
    uint64_t hits, misses; /* usage counts this batch carries to the index */
    int removals_alone;    /* the removals of a batch refused at the index's cap, again (below) */
} batch_ctx;

/* Removes every variant of op->key except the ikeys in `keep` (count `nkeep`). */
static int remove_other_variants(suc_cache *c, MDB_txn *txn, suc_op *op, const uint8_t *keep, size_t nkeep,
                                 suc_counters *d, suc_error *err) {
    uint8_t *list = NULL;
    size_t n = 0;
    int rc = suc_index_variants(c, txn, op->ikey, op->key, op->key_len, &list, &n, err);
    for (size_t i = 0; rc == SUC_OK && i < n; i++) {
        const uint8_t *ikey = list + i * SUC_IKEY_LEN;
        int kept = 0;
        for (size_t j = 0; j < nkeep; j++) kept |= memcmp(ikey, keep + j * SUC_IKEY_LEN, SUC_IKEY_LEN) == 0;
        if (kept) continue;
        rc = suc_index_delete(c, txn, ikey, op, d, err);
        if (rc == MDB_NOTFOUND) rc = SUC_OK;
    }
    free(list);
    return rc;
}

/* The put's variant rule (SUC_PUT_SOLE_VARIANT / SUC_PUT_SELECTOR), in the put's transaction,
 * after its record went in. Removals here are the store's bookkeeping, not removals. */
static int apply_variant_rule(suc_cache *c, MDB_txn *txn, suc_op *op, suc_counters *d, uint64_t *seq,
                              suc_error *err) {
    uint64_t removed = op->removed;
    int rc;
    if (op->put_flags & SUC_PUT_SOLE_VARIANT) {
        rc = remove_other_variants(c, txn, op, op->ikey, 1, d, err);
    } else {
        uint8_t keep[2 * SUC_IKEY_LEN];
        memcpy(keep, op->ikey, SUC_IKEY_LEN);
        suc_ikey_make(op->key, op->key_len, NULL, 0, keep + SUC_IKEY_LEN);
        suc_record old, sel;
        int mrc = suc_index_record_get(c, txn, keep + SUC_IKEY_LEN, &old, NULL);
        if (mrc && mrc != MDB_NOTFOUND && mrc != SUC_ECORRUPT) return suc_fail_mdb(err, "mdb_get(selector)", mrc);
        if (suc_record_decode(op->selector, op->selector_len, &sel))
            return suc_fail(err, SUC_EINVAL, "selector", 0, 0, "internal: selector does not decode");
        if (mrc == 0 && old.key_len == op->key_len &&
            memcmp(old.key, op->key, op->key_len) == 0 && old.app_flags == sel.app_flags &&
            old.head_len == sel.head_len && memcmp(old.head, sel.head, sel.head_len) == 0)
            return SUC_OK; /* the same selector: the other variants stay selectable */
        suc_op put = {0};
        memcpy(put.ikey, keep + SUC_IKEY_LEN, SUC_IKEY_LEN);
        put.record = op->selector;
        put.record_len = op->selector_len;
        rc = suc_index_put(c, txn, &put, d, seq, err);
        d->stores -= 1; /* bookkeeping, not a store */
        /* A response stored there before had a body file: it goes after the commit too. */
        for (size_t i = 0; rc == SUC_OK && i < put.dead_count; i++)
            if (suc_op_add_dead(op, put.dead_ids + i * SUC_BODY_ID_LEN))
                rc = suc_fail(err, SUC_ENOMEM, "realloc(dead)", ENOMEM, 0, "out of memory");
        suc_op_release(&put);
        /* Another record was there: the variants it selected are not this selector's. */
        if (rc == SUC_OK && mrc != MDB_NOTFOUND) rc = remove_other_variants(c, txn, op, keep, 2, d, err);
    }
    op->removed = removed;
    return rc;
}

/* A put under the online cap (a full cache evicts, as URLCache does, and a missed cron run
 * cannot fill the disk) and under its partition's quota: entries are evicted in the same commit
 * until the new entry fits, first the partition's own least recently used (so one noisy
 * partition cannot evict the others), then the directory's by its eviction policy; only an entry larger than the cap
 * or the quota itself is refused (the batch goes on). */
#define SUC_CAP_EVICT_MAX 100000u

static int refuse(suc_op *op, uint64_t need, const char *what, uint64_t limit) {
    op->op_rc = suc_fail(&op->err, SUC_ECAPACITY, "capacity", 0, 0,
                         "store refused: the entry (%llu bytes) is larger than %s of %llu bytes",
                         (unsigned long long)need, what, (unsigned long long)limit);
    return SUC_OK;
}

/* What the entry a put replaces takes (the counters' bytes: record and body file), 0 when there
 * is none, and whether it counts in partition `pkey`. */
static int replaced_bytes(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN],
                          const uint8_t pkey[SUC_PART_KEY_LEN], uint64_t *bytes, int *in_partition, suc_error *err) {
    MDB_val v;
    suc_record old;
    *bytes = 0, *in_partition = 0;
    int rc = suc_index_record_get(c, txn, ikey, &old, &v);
    if (rc == MDB_NOTFOUND) return SUC_OK;
    if (rc && rc != SUC_ECORRUPT) return suc_fail_mdb(err, "mdb_get(main)", rc);
    *bytes = v.mv_size; /* an undecodable record counts its bytes alone, in no partition */
    if (rc) return SUC_OK;
    *bytes += suc_record_file_bytes(&old, v.mv_size);
    uint8_t old_pkey[SUC_PART_KEY_LEN];
    suc_partition_key(old.partition, old.partition_len, old_pkey);
    *in_partition = memcmp(old_pkey, pkey, SUC_PART_KEY_LEN) == 0;
    return SUC_OK;
}

/* A store refused: the entry it would have replaced goes all the same (its response is stale). */
static int refuse_replacing(suc_cache *c, MDB_txn *txn, suc_op *op, suc_counters *d, uint64_t need, const char *what,
                            uint64_t limit, suc_error *err) {
    int rc = suc_index_delete(c, txn, op->ikey, op, d, err);
    return rc && rc != MDB_NOTFOUND ? rc : refuse(op, need, what, limit);
}

/* limit - need + room (need ≤ limit), at most INT64_MAX: the evictions compare signed totals, and
 * a limit near the largest value must stay there rather than wrap. */
static uint64_t room_for(uint64_t limit, uint64_t need, uint64_t room) {
    uint64_t left = limit - need, most = (uint64_t)INT64_MAX;
    if (left >= most) return most;
    return room > most - left ? most : left + room;
}

/* Makes room for `need` bytes in the partition (its quota, 0: none) and the directory (`cap`).
 * The entry the put replaces stays where it is, so the put replaces it in place (under S3-FIFO it
 * keeps its place in the queues and its counter: a response stored again is the same entry, not
 * a newcomer on probation), and its bytes count as room; when an eviction takes it first, room
 * is made again without them. */
static int make_room(suc_cache *c, MDB_txn *txn, suc_op *op, const uint8_t pkey[SUC_PART_KEY_LEN], uint64_t quota,
                     uint64_t cap, uint64_t need, suc_counters *d, suc_error *err) {
    uint64_t old, old_here;
    int in_partition, rc = replaced_bytes(c, txn, op->ikey, pkey, &old, &in_partition, err);
    if (rc) return rc;
    if (quota && need > quota) return refuse_replacing(c, txn, op, d, need, "the partition's quota", quota, err);
    if (need > cap) return refuse_replacing(c, txn, op, d, need, "the capacity", cap, err); /* could never fit */
    for (;;) {
        old_here = in_partition ? old : 0;
        if (quota && (rc = suc_partition_evict(c, txn, pkey, room_for(quota, need, old_here), SUC_CAP_EVICT_MAX, NULL,
                                               op, d, NULL, err)))
            return rc;
        rc = suc_evict(c, txn, room_for(cap, need, old), SUC_CAP_EVICT_MAX, op, d, NULL, err);
        if (rc == SUC_ECAPACITY) return refuse_replacing(c, txn, op, d, need, "the capacity", cap, err);
        if (rc || !old) return rc;
        uint64_t still;
        if ((rc = replaced_bytes(c, txn, op->ikey, pkey, &still, &in_partition, err)) || still) return rc;
        old = 0;
    }
}

static int apply_put_capped(suc_cache *c, MDB_txn *txn, suc_op *op, suc_counters *d, uint64_t *seq,
                            suc_error *err) {
    uint64_t cap = op->capacity_fixed || op->capacity_bytes ? op->capacity_bytes : c->opts.hard_cap_bytes;
    suc_record r;
    if (suc_record_decode(op->record, op->record_len, &r) != SUC_OK) return suc_index_put(c, txn, op, d, seq, err);
    uint64_t need = (uint64_t)op->record_len + suc_record_file_bytes(&r, op->record_len);
    uint8_t pkey[SUC_PART_KEY_LEN];
    suc_partition_key(r.partition, r.partition_len, pkey);
    int rc;
    if (cap) {
        /* The partition's own entries go before the directory's: its quota is read first. */
        uint64_t quota = 0, counted = 0;
        if ((rc = suc_partition_quota(c, txn, pkey, &quota, &counted))) return suc_fail_mdb(err, "mdb_get(partition)", rc);
        if ((rc = make_room(c, txn, op, pkey, quota, cap, need, d, err)) || op->op_rc) return rc;
    }
    if ((rc = suc_index_put(c, txn, op, d, seq, err))) return rc;
    /* Without a cap the quota is checked after the put, from the counters the put just wrote:
     * no read of its own for a partition without one (the common case). */
    if (!cap && op->part_quota && op->part_bytes > op->part_quota) {
        uint64_t quota = op->part_quota;
        if (need > quota) { /* could never fit: the entry goes again, and so is the one it replaced */
            rc = suc_index_delete(c, txn, op->ikey, op, d, err);
            if (rc && rc != MDB_NOTFOUND) return rc;
            d->stores -= 1;
            return refuse(op, need, "the partition's quota", quota);
        }
        if ((rc = suc_partition_evict(c, txn, pkey, quota, SUC_CAP_EVICT_MAX, op->ikey, op, d, NULL, err))) return rc;
    }
    if (!op->put_flags) return SUC_OK;
    return apply_variant_rule(c, txn, op, d, seq, err);
}

/* The index keys a remove or invalidate names: its one variant, unless the record there belongs
 * to another key (a hash collision must not touch another entry), or every variant of its key. */
static int op_targets(suc_cache *c, MDB_txn *txn, suc_op *op, uint8_t **out, size_t *count, suc_error *err) {
    *out = NULL;
    *count = 0;
    if (op->variant_all) return suc_index_variants(c, txn, op->ikey, op->key, op->key_len, out, count, err);
    suc_record r;
    int rc = suc_index_record_get(c, txn, op->ikey, &r, NULL);
    if (rc == MDB_NOTFOUND) return SUC_OK;
    if (rc && rc != SUC_ECORRUPT) return suc_fail_mdb(err, "mdb_get(main)", rc);
    if (rc == 0 && (r.key_len != op->key_len || memcmp(r.key, op->key, op->key_len) != 0)) return SUC_OK;
    if (!(*out = malloc(SUC_IKEY_LEN))) return suc_fail(err, SUC_ENOMEM, "malloc(targets)", ENOMEM, 0, "out of memory");
    memcpy(*out, op->ikey, SUC_IKEY_LEN);
    *count = 1;
    return SUC_OK;
}

static int apply_remove(suc_cache *c, MDB_txn *txn, suc_op *op, suc_counters *d, suc_error *err) {
    uint8_t *list;
    size_t n;
    int rc = op_targets(c, txn, op, &list, &n, err);
    for (size_t i = 0; rc == SUC_OK && i < n; i++) {
        rc = suc_index_delete(c, txn, list + i * SUC_IKEY_LEN, op, d, err);
        if (rc == MDB_NOTFOUND) rc = SUC_OK;
    }
    free(list);
    return rc;
}

static int apply_invalidate(suc_cache *c, MDB_txn *txn, suc_op *op, uint64_t *seq, suc_error *err) {
    uint32_t now_s = (uint32_t)(suc_os_now_ms() / 1000);
    uint8_t *list;
    size_t n;
    int rc = op_targets(c, txn, op, &list, &n, err);
    for (size_t i = 0; rc == SUC_OK && i < n; i++) {
        int marked = 0;
        rc = suc_index_invalidate(c, txn, list + i * SUC_IKEY_LEN, now_s, seq, &marked, err);
        op->removed += (uint64_t)marked;
    }
    free(list);
    return rc;
}

static int apply_purge_if(suc_cache *c, MDB_txn *txn, suc_op *op, suc_counters *d, suc_error *err) {
    suc_record r;
    int rc = suc_index_record_get(c, txn, op->ikey, &r, NULL);
    if (rc == MDB_NOTFOUND) return SUC_OK;
    if (rc && rc != SUC_ECORRUPT) return suc_fail_mdb(err, "mdb_get(main)", rc);
    int decoded = rc == 0;
    /* Only what was read and found bad: a newer entry stored since then stays. */
    if (op->expect_version == 0 ? decoded : (!decoded || r.version != op->expect_version)) return SUC_OK;
    d->corrupt_purges++;
    rc = suc_index_delete(c, txn, op->ikey, op, d, err);
    return rc == MDB_NOTFOUND ? SUC_OK : rc;
}

static void op_reset(suc_op *op) {
    if (op->settled) return; /* another process's commit: its results stand */
    op->removed = 0;
    op->version = 0;
    op->dead_count = 0;
    op->op_rc = 0;
}

static void batch_reset(void *vctx) {
    batch_ctx *ctx = vctx;
    memset(&ctx->delta, 0, sizeof ctx->delta);
    for (suc_op *op = ctx->ops; op; op = op->next) op_reset(op);
    for (size_t i = 0; i < ctx->foreign_count; i++) op_reset(&ctx->foreign[i]);
}

static int apply_op(suc_cache *c, MDB_txn *txn, suc_op *op, suc_counters *d, uint64_t *seq, suc_error *err) {
    switch (op->kind) {
    case SUC_OP_PUT: return apply_put_capped(c, txn, op, d, seq, err);
    case SUC_OP_REMOVE: return apply_remove(c, txn, op, d, err);
    case SUC_OP_PURGE_IF: return apply_purge_if(c, txn, op, d, err);
    case SUC_OP_INVALIDATE: return apply_invalidate(c, txn, op, seq, err);
    case SUC_OP_REFRESH: return suc_refresh_apply(c, txn, op, d, seq, err);
    default: return SUC_OK;
    }
}

/* Other processes' stores claimed from `handoff`, each with the ticket that tells its owner. */
static int apply_foreign(suc_cache *c, MDB_txn *txn, suc_op *ops, size_t count, suc_counters *d, uint64_t *seq,
                         suc_error *err) {
    int rc = SUC_OK;
    for (size_t i = 0; i < count && rc == SUC_OK; i++) {
        rc = apply_op(c, txn, &ops[i], d, seq, err);
        if (rc == SUC_OK) rc = suc_handoff_ticket(c, txn, &ops[i], err);
    }
    return rc;
}

/* The version counter, read once per transaction (suc_meta_next_version), written back once. */
static int write_seq(suc_cache *c, MDB_txn *txn, uint64_t seq, suc_error *err) {
    uint8_t buf[8];
    suc_put_u64(buf, seq);
    MDB_val k = {3, "seq"}, v = {8, buf};
    int mrc = suc_txn_put(c, txn, c->dbi_meta, &k, &v, 0);
    return mrc ? suc_fail_mdb(err, "mdb_put(meta seq)", mrc) : SUC_OK;
}

static int batch_apply(suc_cache *c, MDB_txn *txn, void *vctx, suc_error *err) {
    batch_ctx *ctx = vctx;
    uint64_t seq0 = 0, seq;
    int rc = SUC_OK;
    suc_handoff_commit_begins(c, txn);
    int has_put = 0; /* or another operation that assigns versions */
    int stores = 0, work = 0;
    /* A store queued for other processes may have been committed by one of them already. */
    for (suc_op *op = ctx->ops; op; op = op->next)
        if (!op->settled && suc_handoff_resolve(c, txn, op) == SUC_HANDOFF_DONE) op->settled = 1;
    /* Other processes' queued stores ride in this commit (they are all PUTs). */
    if (!ctx->foreign && !(ctx->foreign = calloc(SUC_HANDOFF_SLOTS, sizeof *ctx->foreign)))
        return suc_fail(err, SUC_ENOMEM, "calloc(handoff)", ENOMEM, 0, "out of memory");
    if (!ctx->removals_alone) suc_handoff_claim(c, txn, ctx->foreign, &ctx->foreign_count);
    for (suc_op *op = ctx->ops; op; op = op->next) {
        if (op->settled) continue;
        work = 1;
        has_put |= op->kind == SUC_OP_PUT || op->kind == SUC_OP_INVALIDATE || op->kind == SUC_OP_REFRESH;
        stores |= op->kind == SUC_OP_PUT || op->kind == SUC_OP_REFRESH;
    }
    if (ctx->foreign_count) work = has_put = stores = 1;
    /* Every store here was committed by another process: nothing to sync (last-use updates and
     * usage counts wait for the next commit). */
    if (!work && !ctx->touch_count && !ctx->hits && !ctx->misses) return SUC_ABORT_TXN;
    if (has_put) {
        /* Read the version counter once; written back once at the end of the batch. */
        if ((rc = suc_meta_next_version(c, txn, &seq0, err))) return rc;
    }
    /* A store a power loss must not take makes relaxed commits to this index synced. */
    if (stores && (rc = suc_unsynced_note_synced_store(c, txn, err))) return rc;
    seq = seq0 ? seq0 - 1 : 0;
    /* The hits first: they came before these stores, whose evictions must see them (applied after,
     * an entry hit just before a store could be that store's victim). */
    if ((rc = suc_touch_apply(c, txn, ctx->touches, ctx->touch_count, err))) return rc;
    for (suc_op *op = ctx->ops; op && rc == SUC_OK; op = op->next)
        if (!op->settled) rc = apply_op(c, txn, op, &ctx->delta, &seq, err);
    if (rc == SUC_OK) rc = apply_foreign(c, txn, ctx->foreign, ctx->foreign_count, &ctx->delta, &seq, err);
    /* And the stores queued while this batch applied: claimed again at the last moment, since
     * every microsecond before the commit is one more in which another process's store can ride. */
    if (rc == SUC_OK && has_put && !ctx->removals_alone) {
        size_t before = ctx->foreign_count;
        suc_handoff_claim(c, txn, ctx->foreign, &ctx->foreign_count);
        rc = apply_foreign(c, txn, ctx->foreign + before, ctx->foreign_count - before, &ctx->delta, &seq, err);
    }
    /* Keys these moves left behind in the use order, a few at a time (time_orders.c). */
    if (rc == SUC_OK) rc = suc_use_order_sweep(c, txn, err);
    if (rc) return rc;
    if (has_put && seq != seq0 && (rc = write_seq(c, txn, seq, err))) return rc;
    ctx->delta.hits = (int64_t)ctx->hits;
    ctx->delta.misses = (int64_t)ctx->misses;
    return suc_meta_add_counters(c, txn, &ctx->delta, err);
}

int suc_carry_queued_stores(suc_cache *c, MDB_txn *txn, suc_carry *carry, suc_error *err) {
    if (!carry->ops && !(carry->ops = calloc(SUC_HANDOFF_SLOTS, sizeof *carry->ops)))
        return suc_fail(err, SUC_ENOMEM, "calloc(handoff)", ENOMEM, 0, "out of memory");
    suc_handoff_claim(c, txn, carry->ops, &carry->count);
    if (!carry->count) return SUC_OK;
    uint64_t seq0 = 0;
    int rc = suc_meta_next_version(c, txn, &seq0, err);
    /* A store a power loss must not take makes relaxed commits to this index synced. */
    if (rc == SUC_OK) rc = suc_unsynced_note_synced_store(c, txn, err);
    uint64_t seq = seq0 ? seq0 - 1 : 0;
    suc_counters d = {0};
    if (rc == SUC_OK) rc = apply_foreign(c, txn, carry->ops, carry->count, &d, &seq, err);
    if (rc == SUC_OK && seq != seq0) rc = write_seq(c, txn, seq, err);
    return rc ? rc : suc_meta_add_counters(c, txn, &d, err);
}

void suc_carry_reset(suc_carry *carry) {
    for (size_t i = 0; i < carry->count; i++) op_reset(&carry->ops[i]);
}

void suc_carry_finish(suc_cache *c, suc_carry *carry, int committed) {
    suc_handoff_finish(c, carry->ops, carry->count, committed);
    free(carry->ops);
    carry->ops = NULL;
    carry->count = 0;
}

static int is_removal(const suc_op *o) { return o->kind == SUC_OP_REMOVE || o->kind == SUC_OP_PURGE_IF; }

/* The batch's transaction, with the last uses and usage counts queued so far. */
static int commit_batch(suc_cache *c, batch_ctx *ctx, suc_error *err) {
    pthread_mutex_lock(&c->touch_mu);
    suc_touch *mine = NULL;
    if (c->touch_count && (mine = malloc(sizeof(suc_touch) * c->touch_count))) {
        memcpy(mine, c->touches, sizeof(suc_touch) * c->touch_count);
        ctx->touches = mine;
        ctx->touch_count = c->touch_count;
        c->touch_count = 0;
    }
    pthread_mutex_unlock(&c->touch_mu);

    ctx->hits = atomic_exchange(&c->pending_hits, 0);
    ctx->misses = atomic_exchange(&c->pending_misses, 0);
    int removal_only = 1;
    for (suc_op *o = ctx->ops; o; o = o->next) removal_only &= is_removal(o);
    int rc = suc_write_txn_ex(c, batch_apply, batch_reset, ctx, removal_only, err);
    suc_handoff_commit_ends(c);
    if (rc == SUC_ABORT_TXN) rc = SUC_OK; /* nothing left to commit: every store went in another's */
    free(mine);
    ctx->touches = NULL;
    if (rc) { /* not written: keep them for the next write */
        atomic_fetch_add(&c->pending_hits, ctx->hits);
        atomic_fetch_add(&c->pending_misses, ctx->misses);
    }
    return rc;
}

/* A batch refused at the index's cap (SUC_EINDEXFULL) refuses every operation in it, but a
 * removal must still succeed there: a transaction that only removes may grow the map past the
 * cap by a small reserve (txn.c, grow_map), or a full index could never be shrunk. So when a
 * batch that mixed removals with stores is refused, its removals are committed again, alone and
 * carrying no other process's store. The list is reordered, the removals last; *removals_rc is
 * their result. Returns the new head. */
static suc_op *commit_removals_alone(suc_cache *c, suc_op *ops, int *removals_rc, suc_error *err) {
    suc_op *others = NULL, **others_tail = &others, *removals = NULL, **removals_tail = &removals;
    for (suc_op *o = ops, *next; o; o = next) {
        next = o->next;
        o->next = NULL;
        if (is_removal(o) && !o->settled) {
            *removals_tail = o;
            removals_tail = &o->next;
        } else {
            *others_tail = o;
            others_tail = &o->next;
        }
    }
    *others_tail = removals;
    if (!removals || !others) return others ? others : removals; /* not mixed: nothing to retry */
    batch_ctx alone = {.ops = removals, .removals_alone = 1};
    batch_reset(&alone); /* what the refused transaction left in them */
    *removals_rc = suc_write_txn_ex(c, batch_apply, batch_reset, &alone, 1, err);
    suc_handoff_commit_ends(c);
    if (*removals_rc == SUC_ABORT_TXN) *removals_rc = SUC_OK;
    free(alone.foreign);
    return others;
}

/*
 * Group commit (leader/follower): the first writer to find no batch in progress takes every
 * queued operation and commits them in one transaction; the others wait for it. With N writer
 * threads, one fsync serves up to N stores. Queued last-use updates ride along for free.
 * Ops first..last (linked by next) are queued as one piece, so the leader that takes one of them
 * takes them all: they share one transaction.
 */
static void queue_and_wait(suc_cache *c, suc_op *first, suc_op *last) {
    pthread_mutex_lock(&c->commit_mu);
    if (c->queue_tail) c->queue_tail->next = first;
    else c->queue_head = first;
    c->queue_tail = last;
    while (!last->done) {
        if (c->leader_active) {
            pthread_cond_wait(&c->commit_cv, &c->commit_mu);
            continue;
        }
        c->leader_active = 1;
        batch_ctx ctx = {0};
        ctx.ops = c->queue_head;
        c->queue_head = c->queue_tail = NULL;
        pthread_mutex_unlock(&c->commit_mu);

        suc_error berr = {0};
        /* Every store of the batch may go in the commit another process is running: then there is
         * nothing to take the write lock for (the last uses and usage counts wait for the next). */
        int brc = suc_handoff_wait_carried(c, ctx.ops) ? SUC_OK : commit_batch(c, &ctx, &berr);
        uint64_t held = suc_last_write_lock_ms(); /* this thread's: it ran the transaction */
        int removals_rc = brc;
        suc_error removals_err = berr;
        if (brc == SUC_EINDEXFULL) ctx.ops = commit_removals_alone(c, ctx.ops, &removals_rc, &removals_err);

        suc_handoff_finish(c, ctx.foreign, ctx.foreign_count, brc == SUC_OK);
        free(ctx.foreign);
        for (suc_op *o = ctx.ops; o; o = o->next) {
            /* A failed commit never resolved its stores: one may have gone in another's. */
            if (brc && !o->settled && suc_handoff_resolve_failed(c, o) == SUC_HANDOFF_DONE) o->settled = 1;
            suc_handoff_release(c, o);
        }

        pthread_mutex_lock(&c->commit_mu);
        for (suc_op *o = ctx.ops; o; o = o->next) {
            /* op_rc: refused alone, the batch committed (or another process's did) */
            int orc = is_removal(o) ? removals_rc : brc;
            o->rc = orc && !o->settled ? orc : o->op_rc;
            if (orc && !o->settled) o->err = is_removal(o) ? removals_err : berr;
            o->held_ms = held;
            o->done = 1;
        }
        c->leader_active = 0;
        pthread_cond_broadcast(&c->commit_cv);
    }
    pthread_mutex_unlock(&c->commit_mu);
}

int suc_index_submit(suc_cache *c, suc_op *op, suc_error *err) {
    int rc = suc_cache_check_fork(c, err);
    if (rc) return rc;
    op->next = NULL;
    op->done = 0;
    /* A store waits for the write lock queued where another process's commit can take it. */
    if (op->kind == SUC_OP_PUT && !op->handoff) op->handoff = suc_handoff_reserve(c);
    suc_handoff_enqueue(c, op);
    queue_and_wait(c, op, op);
    if (op->rc && err) *err = op->err;
    return op->rc;
}

/* ---- purges of damaged entries and removals ---------------------------------------- */

/* Purges an entry found bad, if it is still the one that was read (a write; rare). */
void suc_index_purge_if(suc_cache *c, const uint8_t ikey[SUC_IKEY_LEN], uint64_t version) {
    suc_op op = {0};
    op.kind = SUC_OP_PURGE_IF;
    memcpy(op.ikey, ikey, SUC_IKEY_LEN);
    op.expect_version = version;
    if (suc_index_submit(c, &op, NULL) == SUC_OK) suc_body_unlink_ids(c, op.dead_ids, op.dead_count);
    suc_op_release(&op);
}

/* ---- removals ----------------------------------------------------------------------- */

/* Fills `op` for one operation on (key, variant), or with variant == NULL on every variant. */
static void key_op_fill(suc_op *op, suc_op_kind kind, const void *key, size_t key_len, const void *variant,
                        size_t variant_len) {
    op->kind = kind;
    op->key = key;
    op->key_len = key_len;
    op->variant_all = variant == NULL;
    suc_ikey_make(key, key_len, variant, variant_len, op->ikey);
}

/* One operation on (key, variant), or with variant == NULL on every variant of key, through the
 * group commit; `out_count` gets how many entries it removed (or marked). */
static int key_op(suc_cache *c, suc_op_kind kind, const char *name, const void *key, size_t key_len,
                  const void *variant, size_t variant_len, uint64_t *out_count, suc_error *err) {
    int rc = suc_cache_check_fork(c, err);
    if (rc) return rc;
    if (!key || !key_len || (variant_len && !variant)) return suc_fail(err, SUC_EINVAL, name, 0, 0, "a key is required");
    suc_op op = {0};
    key_op_fill(&op, kind, key, key_len, variant, variant_len);
    rc = suc_index_submit(c, &op, err);
    if (rc == SUC_OK) {
        suc_body_unlink_ids(c, op.dead_ids, op.dead_count); /* delete order: commit, then unlink */
        if (out_count) *out_count = op.removed;
    }
    suc_op_release(&op);
    return rc;
}

int suc_remove(suc_cache *c, const void *key, size_t key_len, const void *variant, size_t variant_len,
               uint64_t *out_removed, suc_error *err) {
    return key_op(c, SUC_OP_REMOVE, "suc_remove", key, key_len, variant, variant_len, out_removed, err);
}

int suc_invalidate(suc_cache *c, const void *key, size_t key_len, const void *variant, size_t variant_len,
                   uint64_t *out_marked, suc_error *err) {
    return key_op(c, SUC_OP_INVALIDATE, "suc_invalidate", key, key_len, variant, variant_len, out_marked, err);
}

/* Operations of one call to the *_many functions that share a write transaction, at most; fewer
 * when that holds the write lock too long (pace.c). */
#define KEY_OPS_PER_COMMIT 1000

/* The operation on each of `count` keys, in paced commits of up to KEY_OPS_PER_COMMIT: a purge
 * that walks the records and removes what matches costs one fdatasync per commit, not one per
 * entry, and a store of any process waits for one commit at most. */
static int key_ops_many(suc_cache *c, suc_op_kind kind, const char *name, const suc_key_ref *refs, size_t count,
                        uint64_t *out_count, suc_error *err) {
    if (out_count) *out_count = 0;
    int rc = suc_cache_check_fork(c, err);
    if (rc) return rc;
    if (count && !refs) return suc_fail(err, SUC_EINVAL, name, 0, 0, "no keys given");
    /* All checked before any is applied: a bad key in the list changes nothing. */
    for (size_t i = 0; i < count; i++)
        if (!refs[i].key || !refs[i].key_len || (refs[i].variant_len && !refs[i].variant))
            return suc_fail(err, SUC_EINVAL, name, 0, 0, "a key is required (the list's entry %zu has none)", i);
    size_t most = count < KEY_OPS_PER_COMMIT ? count : KEY_OPS_PER_COMMIT;
    suc_op *ops = most ? calloc(most, sizeof *ops) : NULL;
    if (most && !ops) return suc_fail(err, SUC_ENOMEM, name, ENOMEM, 0, "out of memory");
    /* Where the handle's last such call left the pace: a purge hands its matches on a thousand at
     * a time, and each call starting small again would cost it many more commits. */
    uint32_t per = atomic_load_explicit(&c->many_keys_pace, memory_order_relaxed);
    if (!per || per > KEY_OPS_PER_COMMIT) per = suc_pace_first(KEY_OPS_PER_COMMIT);
    for (size_t from = 0, n; from < count && rc == SUC_OK; from += n) {
        if (from) suc_pace_yield(); /* a store of any process waiting for the write lock takes it now */
        n = count - from < per ? count - from : per;
        memset(ops, 0, n * sizeof *ops);
        for (size_t i = 0; i < n; i++) {
            const suc_key_ref *r = &refs[from + i];
            key_op_fill(&ops[i], kind, r->key, r->key_len, r->variant, r->variant_len);
            ops[i].next = i + 1 < n ? &ops[i + 1] : NULL;
        }
        queue_and_wait(c, &ops[0], &ops[n - 1]);
        /* Sized by the hold its leader measured: another thread of the process may have run it. */
        if (ops[n - 1].rc == SUC_OK && n == per) {
            per = suc_pace_resize_held(per, KEY_OPS_PER_COMMIT, ops[n - 1].held_ms);
            atomic_store_explicit(&c->many_keys_pace, per, memory_order_relaxed);
        }
        for (size_t i = 0; i < n; i++) {
            if (ops[i].rc == SUC_OK) {
                suc_body_unlink_ids(c, ops[i].dead_ids, ops[i].dead_count); /* commit, then unlink */
                if (out_count) *out_count += ops[i].removed;
            } else if (rc == SUC_OK) {
                rc = ops[i].rc;
                if (err) *err = ops[i].err;
            }
            suc_op_release(&ops[i]);
        }
    }
    free(ops);
    return rc;
}

int suc_remove_many(suc_cache *c, const suc_key_ref *refs, size_t count, uint64_t *out_removed, suc_error *err) {
    return key_ops_many(c, SUC_OP_REMOVE, "suc_remove_many", refs, count, out_removed, err);
}

int suc_invalidate_many(suc_cache *c, const suc_key_ref *refs, size_t count, uint64_t *out_marked, suc_error *err) {
    return key_ops_many(c, SUC_OP_INVALIDATE, "suc_invalidate_many", refs, count, out_marked, err);
}
