/*
 * time_orders.c — the time orders over the entries, as secondary structures of the index:
 *   by_use   use time ‖ ikey → value : least-recently-used order, read by every eviction, and in
 *                                      a directory of format 2 by remove-since as well; the value
 *                                      is the eviction policy's (empty under LRU; the entry's
 *                                      place in the queues under S3-FIFO) and moves with the key
 *   by_time  stored time ‖ ikey → "" : remove-since-date without a scan, kept in a directory of
 *                                      format 1 only (an empty table in format 2)
 * A key is the entry's time, big-endian with the sign flipped (suc_tkey_make), then its ikey, so
 * one cursor walks entries oldest first. Each is a table of its own, which the index rewrite
 * copies; a key whose record is gone or has another time is a stray, dropped when met.
 *
 * Why format 2 keeps one order: a store rewrites the pages on the path to every key it changes,
 * and a replacing store changed four time keys (the old and the new place in each order); with
 * one order it changes two, about a quarter of a store's pages. Remove-since then walks the use
 * order from the date, which finds every entry stored since it because an entry's use time in
 * that order is never before its stored time: max(last use, stored time), so a stored time in
 * the future (a caller's, an import's, a skewed clock's) holds its place until it is passed.

 *
 * Keys left behind: in a directory of format 2 under least recently used, an entry that moves in
 * the use order (stored again, or used) does not delete its old key. Deleting it wrote and synced
 * that key's leaf and the branch above it, about a fifth of a store's pages, for a key with no
 * value to carry under this policy; left, it is a stray (its record gone or at another time).
 * Every walk of the order tells a stray from the entry's own key (suc_use_order_key_live) and
 * drops it when it meets it, and while the keys outnumber the entries by half, each commit sweeps
 * the next few keys from where its handle's last sweep stopped (suc_use_order_sweep), so below
 * the capacity, where no eviction walks the order, it holds at most 1.5 times the entries (plus
 * a slack). S3-FIFO keeps each entry's place in the key's value, so a move under it still takes
 * the key along.
 */
#include "index.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int64_t stored_time(const suc_cache *c, const suc_record *r) {
    (void)c;
    return r->stored_at_ms;
}
int64_t suc_use_order_time(const suc_cache *c, const suc_record *r) {
    if (suc_directory_format(c) < 2 || r->last_used_ms >= r->stored_at_ms) return r->last_used_ms;
    return r->stored_at_ms;
}
static int keeps_stored_order(const suc_cache *c) { return suc_directory_format(c) < 2; }
/* Where format 1 put the entry in the use order (its last use). An entry stored ahead of its use
 * keeps that key in a directory being upgraded until the upgrade's re-keying reaches it, so a
 * change to it before then removes the key from there as well; otherwise it would stay a stray. */
static int64_t use_order_former_time(const suc_cache *c, const suc_record *r) {
    (void)c;
    return r->last_used_ms;
}

/* `value` is the key's value (NULL: empty). */
static int key_put(suc_cache *c, MDB_txn *txn, MDB_dbi dbi, int64_t t, const uint8_t ikey[SUC_IKEY_LEN],
                   const MDB_val *value, const char *what, suc_error *err) {
    uint8_t key[SUC_TKEY_LEN];
    suc_tkey_make(t, ikey, key);
    MDB_val k = {SUC_TKEY_LEN, key}, v = value ? *value : (MDB_val){0, NULL};
    int mrc = suc_txn_put(c, txn, dbi, &k, &v, 0);
    return mrc ? suc_fail_mdb(err, what, mrc) : SUC_OK;
}

/* A use-order key's value is the eviction policy's: empty under LRU, the entry's place in the
 * queues under S3-FIFO (s3fifo.c), so that the commits which write the key anyway (a store, an
 * eviction) carry the place too. It moves with the key. */
typedef struct carried_value {
    uint8_t bytes[SUC_USE_VALUE_MAX];
    MDB_val val;
} carried_value;

/* Copies the value of the key at time t into `carry` unless it holds one already; a value
 * longer than any policy writes is not carried (damage). */
static int value_carry(MDB_txn *txn, MDB_dbi dbi, int64_t t, const uint8_t ikey[SUC_IKEY_LEN], carried_value *carry) {
    if (!carry || carry->val.mv_size) return 0;
    uint8_t key[SUC_TKEY_LEN];
    suc_tkey_make(t, ikey, key);
    MDB_val k = {SUC_TKEY_LEN, key}, v;
    int mrc = mdb_get(txn, dbi, &k, &v);
    if (mrc == MDB_NOTFOUND) return 0;
    if (mrc) return mrc;
    if (v.mv_size <= sizeof carry->bytes) memcpy(carry->bytes, v.mv_data, v.mv_size), carry->val.mv_size = v.mv_size;
    carry->val.mv_data = carry->bytes;
    return 0;
}

static int key_del(suc_cache *c, MDB_txn *txn, MDB_dbi dbi, int64_t t, const uint8_t ikey[SUC_IKEY_LEN], const char *what,
                   suc_error *err) {
    uint8_t key[SUC_TKEY_LEN];
    suc_tkey_make(t, ikey, key);
    MDB_val k = {SUC_TKEY_LEN, key};
    int mrc = suc_txn_del(c, txn, dbi, &k);
    return mrc && mrc != MDB_NOTFOUND ? suc_fail_mdb(err, what, mrc) : SUC_OK;
}

/* One order: its table, the record time it sorts by, whether the directory keeps it, and (NULL
 * when none) another time an entry's key may still have from an earlier format. */
typedef struct time_order {
    MDB_dbi (*dbi)(const suc_cache *c);
    int64_t (*time)(const suc_cache *c, const suc_record *r);
    int (*kept)(const suc_cache *c);
    int64_t (*former_time)(const suc_cache *c, const suc_record *r);
} time_order;

static MDB_dbi by_time_dbi(const suc_cache *c) { return c->dbi_by_time; }
static MDB_dbi by_use_dbi(const suc_cache *c) { return c->dbi_by_use; }
static int always(const suc_cache *c) {
    (void)c;
    return 1;
}
static const time_order stored_order = {by_time_dbi, stored_time, keeps_stored_order, NULL};
static const time_order use_order = {by_use_dbi, suc_use_order_time, always, use_order_former_time};

/* Removes the entry's key for record `r`: at its time, and at its former time where that differs
 * (one more lookup, for the rare entry stored ahead of its use in format 2). */
static int order_key_del(const time_order *o, suc_cache *c, MDB_txn *txn, const suc_record *r,
                         const uint8_t ikey[SUC_IKEY_LEN], carried_value *carry, suc_error *err) {
    int64_t t = o->time(c, r);
    int mrc = value_carry(txn, o->dbi(c), t, ikey, carry);
    int rc = mrc ? suc_fail_mdb(err, "mdb_get(time order)", mrc) : key_del(c, txn, o->dbi(c), t, ikey, "mdb_del(time order)", err);
    if (rc || !o->former_time || o->former_time(c, r) == t) return rc;
    if ((mrc = value_carry(txn, o->dbi(c), o->former_time(c, r), ikey, carry)))
        return suc_fail_mdb(err, "mdb_get(time order)", mrc);
    return key_del(c, txn, o->dbi(c), o->former_time(c, r), ikey, "mdb_del(time order)", err);
}

/* Whether a move in the use order leaves the old key behind (above). */
static int leaves_keys_behind(const time_order *o, suc_cache *c, MDB_txn *txn) {
    return o == &use_order && suc_directory_format(c) >= 2 && !suc_s3fifo_chosen(c, txn);
}

/* An order the directory does not keep (format 2's stored-time order) is left alone. A replaced
 * entry's key moves to its new time with its value, or is left behind. */
static int order_put(const time_order *o, suc_cache *c, MDB_txn *txn, suc_change *ch, suc_error *err) {
    if (!o->kept(c)) return SUC_OK;
    carried_value carry = {.val = {0, NULL}};
    int moves = ch->old && !leaves_keys_behind(o, c, txn);
    int rc = moves ? order_key_del(o, c, txn, ch->old, ch->ikey, &carry, err) : SUC_OK;
    return rc ? rc
              : key_put(c, txn, o->dbi(c), o->time(c, ch->new_rec), ch->ikey, &carry.val, "mdb_put(time order)", err);
}

static int order_delete(const time_order *o, suc_cache *c, MDB_txn *txn, suc_change *ch, suc_error *err) {
    if (!o->kept(c)) return SUC_OK;
    return order_key_del(o, c, txn, ch->old, ch->ikey, NULL, err);
}

typedef struct stray_ctx {
    const time_order *o;
    int upgrading;
    uint8_t (*keys)[SUC_TKEY_LEN];
    size_t n;
} stray_ctx;

/* What a time key names: its entry at that time (or at the time an earlier format gave it), an
 * entry since moved (a stray), no record (a stray), a record that does not decode, or another
 * release's record (whose time keys are its own business). */
typedef enum key_state { KEY_CURRENT, KEY_FORMER, KEY_MOVED, KEY_GONE, KEY_DAMAGED, KEY_FOREIGN } key_state;
static key_state key_state_of(suc_cache *c, MDB_txn *txn, const uint8_t key[SUC_TKEY_LEN], const time_order *o) {
    MDB_val mk = {SUC_IKEY_LEN, (uint8_t *)key + 8}, mv;
    suc_record r;
    if (mdb_get(txn, c->dbi_main, &mk, &mv)) return KEY_GONE;
    int drc = suc_record_decode(mv.mv_data, mv.mv_size, &r);
    if (drc == SUC_EVERSION) return KEY_FOREIGN;
    if (drc != SUC_OK) return KEY_DAMAGED;
    int64_t t = suc_tkey_time(key);
    if (o->time(c, &r) == t) return KEY_CURRENT;
    return o->former_time && o->former_time(c, &r) == t ? KEY_FORMER : KEY_MOVED;
}

/* Whether a key in state `s` of an order the directory keeps is a stray; while an upgrade is
 * unfinished, one at an entry's former time is not (the upgrade moves it). */
static int stray_in_state(key_state s, int upgrading) {
    switch (s) {
    case KEY_CURRENT:
    case KEY_FOREIGN: return 0;
    case KEY_FORMER: return !upgrading;
    default: return 1;
    }
}

/* Every key of an order the directory does not keep is a stray (another release's, or damage). */
static int is_stray(suc_cache *c, MDB_txn *txn, const uint8_t key[SUC_TKEY_LEN], const time_order *o,
                    int upgrading) {
    return !o->kept(c) || stray_in_state(key_state_of(c, txn, key, o), upgrading);
}

/* A key a move left behind (an empty value, no entry of its own), not damage: verify does not
 * count it, and the sweep and the walks drop it. */
static int left_behind_in_state(const time_order *o, key_state s, const MDB_val *value) {
    return o == &use_order && !value->mv_size && (s == KEY_GONE || s == KEY_MOVED);
}

int suc_use_order_key_live(suc_cache *c, MDB_txn *txn, const uint8_t key[SUC_TKEY_LEN]) {
    key_state s = key_state_of(c, txn, key, &use_order);
    /* A key at the entry's former time is its own only while an upgrade has yet to move it (as
     * verify judges it); otherwise a move left it there. Rare: the marker is read only then. */
    if (s == KEY_FORMER) return suc_format_upgrade_unfinished(c, txn);
    return s != KEY_GONE && s != KEY_MOVED;
}

/* A sweep looks at this many keys a commit, about a leaf and a half of the use order, and three
 * more for each key over the bound, so that a commit which moved many entries (a batch of hits
 * written with the next store: up to SUC_TOUCH_MAX) drops about as many as it left. */
#define SWEEP_LOOK 64
#define SWEEP_LOOK_MAX 16384
/* Keys left behind are swept only while more than half the entries, plus this many. */
#define SWEEP_SLACK 256

/* Drops the keys left behind among at most `look` keys from `from` (the oldest unless `resume`),
 * leaving in `from` the last key looked at: 0, MDB_NOTFOUND at the end of the order, or an LMDB
 * error. Only keys without a value: one with a value is S3-FIFO's place, its walks' business. */
static int sweep(suc_cache *c, MDB_txn *txn, uint8_t from[SUC_TKEY_LEN], int resume, uint32_t look) {
    MDB_cursor *cur;
    int mrc = mdb_cursor_open(txn, c->dbi_by_use, &cur);
    if (mrc) return mrc;
    MDB_val k = {SUC_TKEY_LEN, from}, v;
    mrc = mdb_cursor_get(cur, &k, &v, resume ? MDB_SET_RANGE : MDB_FIRST);
    for (uint32_t looked = 0; mrc == 0 && looked < look; looked++) {
        if (k.mv_size == SUC_TKEY_LEN) {
            memcpy(from, k.mv_data, SUC_TKEY_LEN); /* before the delete, which moves the page */
            int behind = !v.mv_size && left_behind_in_state(&use_order, key_state_of(c, txn, from, &use_order), &v);
            if (behind && (mrc = suc_txn_cursor_del(c, txn, c->dbi_by_use, cur))) break;
        }
        mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    }
    mdb_cursor_close(cur);
    return mrc;
}

int suc_use_order_sweep(suc_cache *c, MDB_txn *txn, suc_error *err) {
    MDB_stat keys, entries;
    if (mdb_stat(txn, c->dbi_by_use, &keys) || mdb_stat(txn, c->dbi_main, &entries)) return SUC_OK;
    size_t bound = entries.ms_entries + entries.ms_entries / 2 + SWEEP_SLACK;
    if (keys.ms_entries <= bound) return SUC_OK;
    size_t over = keys.ms_entries - bound;
    uint32_t look = over < (SWEEP_LOOK_MAX - SWEEP_LOOK) / 3 ? SWEEP_LOOK + 3 * (uint32_t)over : SWEEP_LOOK_MAX;
    int mrc = sweep(c, txn, c->use_sweep_from, c->use_sweep_resumes, look);
    c->use_sweep_resumes = mrc == 0; /* at the end: from the oldest next time */
    return mrc && mrc != MDB_NOTFOUND ? suc_fail_mdb(err, "sweep(by_use)", mrc) : SUC_OK;
}

/* The whole order swept, in write transactions of at most DRAIN_LOOK keys, fewer when that holds
 * the write lock too long (pace.c). */
#define DRAIN_LOOK 4096
typedef struct drain_ctx {
    uint8_t from[SUC_TKEY_LEN];
    int resume, done;
    uint32_t look;
} drain_ctx;

static int drain_apply(suc_cache *c, MDB_txn *txn, void *vctx, suc_error *err) {
    drain_ctx *d = vctx;
    int mrc = sweep(c, txn, d->from, d->resume, d->look);
    if (mrc && mrc != MDB_NOTFOUND) return suc_fail_mdb(err, "sweep(by_use)", mrc);
    d->done = mrc == MDB_NOTFOUND;
    return SUC_OK;
}

int suc_use_order_drain(suc_cache *c, suc_error *err) {
    drain_ctx d = {.resume = 0, .done = 0, .look = suc_pace_first(DRAIN_LOOK)};
    while (!d.done) {
        int rc = suc_write_txn_ex(c, drain_apply, NULL, &d, 1, err);
        if (rc) return rc;
        d.resume = 1;
        if (!d.done) d.look = suc_pace_next(d.look, DRAIN_LOOK); /* a waiting store of any process goes first */
    }
    return SUC_OK;
}

/* Drops the keys that are still stray inside the write (the entry may have been stored again
 * since the read). */
static int drop_strays_apply(suc_cache *c, MDB_txn *txn, void *vctx, suc_error *err) {
    stray_ctx *ctx = vctx;
    for (size_t i = 0; i < ctx->n; i++) {
        if (!is_stray(c, txn, ctx->keys[i], ctx->o, ctx->upgrading)) continue;
        MDB_val tk = {SUC_TKEY_LEN, ctx->keys[i]};
        int mrc = suc_txn_del(c, txn, ctx->o->dbi(c), &tk);
        if (mrc && mrc != MDB_NOTFOUND) return suc_fail_mdb(err, "mdb_del(time order)", mrc);
    }
    return SUC_OK;
}

#define CHECK_BATCH 1000

static int upgrade_unfinished(suc_cache *c) {
    MDB_txn *txn;
    if (suc_rtxn_begin(c, &txn, NULL)) return 0;
    int unfinished = suc_format_upgrade_unfinished(c, txn);
    suc_rtxn_end(c, txn);
    return unfinished;
}

/* Every key must name a record with that very time; strays are counted (and dropped with fix),
 * one batch of keys per read transaction. Keys moves left behind are dropped by fix but not
 * counted: a stray whose record is gone and has no value is one of them or damage alike. */
static int order_check(const time_order *o, suc_cache *c, suc_check *chk, suc_error *err) {
    int upgrading = upgrade_unfinished(c);
    if (!o->kept(c) && upgrading) return SUC_OK; /* the upgrade drops these keys itself */
    uint8_t last[SUC_TKEY_LEN];
    int have_last = 0;
    uint8_t (*bad)[SUC_TKEY_LEN] = malloc(CHECK_BATCH * SUC_TKEY_LEN);
    if (!bad) return suc_fail(err, SUC_ENOMEM, "malloc", ENOMEM, 0, "out of memory");
    int rc = SUC_OK;
    for (;;) {
        size_t nbad = 0, ndamage = 0, seen = 0;
        MDB_txn *txn;
        if ((rc = suc_rtxn_begin(c, &txn, err))) break;
        MDB_cursor *cur;
        int mrc = mdb_cursor_open(txn, o->dbi(c), &cur);
        if (!mrc) {
            MDB_val k = {SUC_TKEY_LEN, last}, v;
            mrc = have_last ? mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE) : mdb_cursor_get(cur, &k, &v, MDB_FIRST);
            if (mrc == 0 && have_last && k.mv_size == SUC_TKEY_LEN && !memcmp(k.mv_data, last, SUC_TKEY_LEN))
                mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
            for (; mrc == 0 && seen < CHECK_BATCH; mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT), seen++) {
                if (k.mv_size != SUC_TKEY_LEN) continue;
                memcpy(last, k.mv_data, SUC_TKEY_LEN);
                have_last = 1;
                /* One look at the record per key: whether a stray, and whether one left behind. */
                key_state s = o->kept(c) ? key_state_of(c, txn, k.mv_data, o) : KEY_GONE;
                if (o->kept(c) && !stray_in_state(s, upgrading)) continue;
                ndamage += !left_behind_in_state(o, s, &v);
                memcpy(bad[nbad++], k.mv_data, SUC_TKEY_LEN);
            }
            mdb_cursor_close(cur);
        }
        suc_rtxn_end(c, txn);
        chk->report->stray_index_keys += ndamage; /* keys left behind are not damage; fix drops them all the same */
        if (chk->fix && nbad) {
            chk->report->repaired += nbad;
            stray_ctx ctx = {o, upgrading, bad, nbad};
            if ((rc = suc_write_txn_ex(c, drop_strays_apply, NULL, &ctx, 1, err))) break;
        }
        if (seen < CHECK_BATCH) break;
    }
    free(bad);
    return rc;
}

static int stored_put(suc_cache *c, MDB_txn *txn, suc_change *ch, suc_error *err) {
    return order_put(&stored_order, c, txn, ch, err);
}
static int stored_delete(suc_cache *c, MDB_txn *txn, suc_change *ch, suc_error *err) {
    return order_delete(&stored_order, c, txn, ch, err);
}
static int stored_check(suc_cache *c, suc_check *chk, suc_error *err) { return order_check(&stored_order, c, chk, err); }

static int use_put(suc_cache *c, MDB_txn *txn, suc_change *ch, suc_error *err) {
    return order_put(&use_order, c, txn, ch, err);
}
static int use_delete(suc_cache *c, MDB_txn *txn, suc_change *ch, suc_error *err) {
    return order_delete(&use_order, c, txn, ch, err);
}
static int use_touch(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN], const suc_record *r,
                     int64_t when_ms, int last_use_moves, suc_error *err) {
    (void)last_use_moves; /* this row is what moves it */
    suc_record used = *r;
    used.last_used_ms = when_ms;
    int64_t from = suc_use_order_time(c, r), to = suc_use_order_time(c, &used);
    if (from == to) { /* a use before a stored time ahead: its place holds (a key at the former goes) */
        int64_t former = use_order_former_time(c, r);
        return former == from ? SUC_OK : key_del(c, txn, c->dbi_by_use, former, ikey, "mdb_del(by_use)", err);
    }
    carried_value carry = {.val = {0, NULL}};
    int rc = leaves_keys_behind(&use_order, c, txn) ? SUC_OK : order_key_del(&use_order, c, txn, r, ikey, &carry, err);
    return rc ? rc : key_put(c, txn, c->dbi_by_use, to, ikey, &carry.val, "mdb_put(by_use)", err);
}
static int use_check(suc_cache *c, suc_check *chk, suc_error *err) { return order_check(&use_order, c, chk, err); }
/* Under S3-FIFO a hit only raises a use counter: the use order (and the record's last use) moves
 * only where a partition's quota still evicts by last use. */
static int use_wants_touches(suc_cache *c, MDB_txn *txn) {
    return !suc_s3fifo_chosen(c, txn) || suc_partition_any_use_keys(c, txn);
}

const suc_secondary suc_stored_order_secondary = {
    .name = "by_time", .table = by_time_dbi, .on_put = stored_put, .on_delete = stored_delete, .check = stored_check,
};

const suc_secondary suc_use_order_secondary = {
    .name = "by_use", .table = by_use_dbi, .on_put = use_put, .on_delete = use_delete,
    .wants_touches = use_wants_touches, .on_touch = use_touch, .check = use_check, .follows_last_use = 1,
};

/* ---- walking them (eviction, remove-since) ---- */

int suc_use_order_value(suc_cache *c, MDB_txn *txn, const suc_record *r, const uint8_t ikey[SUC_IKEY_LEN],
                        MDB_val *out) {
    uint8_t key[SUC_TKEY_LEN];
    int64_t t = suc_use_order_time(c, r);
    suc_tkey_make(t, ikey, key);
    MDB_val k = {SUC_TKEY_LEN, key};
    int mrc = mdb_get(txn, c->dbi_by_use, &k, out);
    if (mrc != MDB_NOTFOUND || use_order_former_time(c, r) == t) return mrc;
    suc_tkey_make(use_order_former_time(c, r), ikey, key);
    return mdb_get(txn, c->dbi_by_use, &k, out);
}

int suc_use_order_rekey(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN], int64_t from, int64_t to,
                        suc_error *err) {
    carried_value carry = {.val = {0, NULL}};
    int mrc = value_carry(txn, c->dbi_by_use, from, ikey, &carry);
    if (mrc) return suc_fail_mdb(err, "mdb_get(by_use)", mrc);
    int rc = key_del(c, txn, c->dbi_by_use, from, ikey, "mdb_del(by_use)", err);
    return rc ? rc : key_put(c, txn, c->dbi_by_use, to, ikey, &carry.val, "mdb_put(by_use)", err);
}

int suc_use_order_value_put(suc_cache *c, MDB_txn *txn, const suc_record *r, const uint8_t ikey[SUC_IKEY_LEN],
                            const void *value, size_t len, suc_error *err) {
    int64_t t = suc_use_order_time(c, r), former = use_order_former_time(c, r);
    if (former != t) { /* a key an unfinished format upgrade has not moved yet keeps its place */
        uint8_t key[SUC_TKEY_LEN];
        suc_tkey_make(t, ikey, key);
        MDB_val k = {SUC_TKEY_LEN, key}, v;
        int mrc = mdb_get(txn, c->dbi_by_use, &k, &v);
        if (mrc == MDB_NOTFOUND) {
            suc_tkey_make(former, ikey, key);
            mrc = mdb_get(txn, c->dbi_by_use, &k, &v);
            if (mrc == 0) t = former;
        }
        if (mrc && mrc != MDB_NOTFOUND) return suc_fail_mdb(err, "mdb_get(by_use)", mrc);
    }
    MDB_val v = {len, (void *)value};
    return key_put(c, txn, c->dbi_by_use, t, ikey, &v, "mdb_put(by_use)", err);
}

int suc_use_order_oldest(suc_cache *c, MDB_txn *txn, uint8_t out[SUC_TKEY_LEN]) {
    MDB_cursor *cur;
    int mrc = mdb_cursor_open(txn, c->dbi_by_use, &cur);
    if (mrc) return mrc;
    MDB_val k, v;
    mrc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
    if (mrc == 0 && k.mv_size != SUC_TKEY_LEN) mrc = MDB_NOTFOUND; /* not one of ours: stop */
    if (mrc == 0) memcpy(out, k.mv_data, SUC_TKEY_LEN);
    mdb_cursor_close(cur);
    return mrc;
}

int suc_time_order_drop_stray(suc_cache *c, MDB_txn *txn, suc_time_order which, const uint8_t key[SUC_TKEY_LEN],
                              suc_error *err) {
    MDB_val k = {SUC_TKEY_LEN, (void *)key};
    int mrc = suc_txn_del(c, txn, suc_time_order_dbi(c, which), &k);
    return mrc && mrc != MDB_NOTFOUND ? suc_fail_mdb(err, "mdb_del(time order)", mrc) : SUC_OK;
}

int suc_time_order_kept(const suc_cache *c, suc_time_order which) {
    return (which == SUC_ORDER_STORED ? &stored_order : &use_order)->kept(c);
}

MDB_dbi suc_time_order_dbi(const suc_cache *c, suc_time_order which) {
    return which == SUC_ORDER_STORED ? c->dbi_by_time : c->dbi_by_use;
}
