/*
 * s3fifo.c — the S3-FIFO eviction queues (Yang et al., SOSP '23) as a secondary structure of
 * the index, and the directory's choice of eviction policy.
 *
 * A directory evicts least-recently-used entries (the by_use order) unless its `meta` table
 * names S3-FIFO. Then every entry this release stores sits in one of two FIFO queues: `small`,
 * where a new key starts (about a tenth of the capacity), and `main`. An entry carries a use
 * counter, 0..3, raised by its hits (a hit on a counter already at 3 writes nothing). At the
 * capacity the small queue's oldest entry moves to main when it was hit since it came in, or is
 * evicted and its key hash remembered in the `ghost`; main's next entry (main turns as a
 * clock, below) stays with its counter lowered when it is above 0, or is evicted. A key stored again
 * while the ghost remembers it starts in main. A one-hit wonder thus passes through the small
 * queue only, and a scan never reaches the entries in main.
 *
 * Kept in `meta`, under 0x00-prefixed keys but for the counters, for the reasons tag postings are
 * (every release's index rewrite copies `meta` whole; an earlier release reads none of these keys):
 *   0x00 'E'                                  u8 policy: 1 = S3-FIFO (absent: least recently used)
 *   "s3fifo"                                  u64 next queue position, small-queue bytes, small
 *                                             entries, ghost clock, the i64 time no small-queue
 *                                             entry's use-order key is before (little endian),
 *                                             and main's hand (a use-order key); beside the
 *                                             directory's counters (earlier builds: 0x00 'E' 'c',
 *                                             and "s3fifo" without the last one or two fields)
 *   0x00 'F' ‖ queue ‖ position ‖ ikey        ""   queue keys of earlier builds: main's ('M') and
 *                                             the small queue's ('S'); position big-endian, so
 *                                             one cursor walks a queue oldest first
 *   0x00 'g' ‖ bucket (u16, big-endian)       an earlier build's ghost, dropped at this build's
 *                                             first write of the counters; the ghost is the file
 *                                             `ghost` beside the index (below, "the ghost")
 * and each entry's place in the value of its use-order key (below, "each entry's place"):
 *   by_use: use time ‖ ikey                   queue, position (big-endian), counter, u64 bytes
 *                                             (record + block-rounded body file); queue 's' is
 *                                             the small queue and 'm' main, with no queue key
 *                                             (below, "the small queue" and "main"); 'S' and 'M'
 *                                             earlier builds' places, which have one
 * An entry no queue knows (stored by an earlier release, or before the policy was chosen) is
 * evicted by the use order once the queues are empty; a queue key whose record is gone is a
 * stray, dropped when met. Every change runs in the caller's write transaction.
 */
#include "index.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { POLICY_S3FIFO = 1 };
enum { QUEUE_SMALL = 'S', QUEUE_MAIN = 'M', SMALL_KEYLESS = 's', MAIN_KEYLESS = 'm' };
#define COUNTER_MAX 3
#define MOVES_PER_VICTIM 256
#define QKEY_LEN (3 + 8 + SUC_IKEY_LEN)
#define EKEY_LEN (2 + SUC_IKEY_LEN)
#define EVALUE_LEN (1 + 8 + 1 + 8)
#define STATE_LEN (40 + SUC_TKEY_LEN)
#define STATE_SMALL_FROM_LEN 40 /* earlier builds': without main's hand */
#define STATE_OLD_LEN 32        /* and without small_from */
/* How many use-order keys one look for a queue's next entry passes over (the other queue's
 * entries) before it stops where it is (WALK_PAUSED); the next look goes on from there. One
 * eviction's looks pass over at most SCAN_PER_VICTIM keys in all, so a store waits for a bounded
 * walk however its 256 moves fall. */
#define SCAN_MAX 1024
#define SCAN_PER_VICTIM (16 * SCAN_MAX)
#define WALK_PAUSED (-31500) /* outside LMDB's codes and errno values */

static const uint8_t policy_key[2] = {0, 'E'};
/* The queues' counters sit among the directory's own counters ("entries", "stores", …), in the
 * `meta` leaf every commit that stores or evicts writes anyway; under 0x00 'E' 'c', where earlier
 * builds kept them, they cost such a commit a leaf of their own (Benchmarks/RESULTS.md). That key
 * is still read when this one is missing, and dropped when the counters are next written. */
static const uint8_t state_key[6] = {'s', '3', 'f', 'i', 'f', 'o'};
static const uint8_t legacy_state_key[3] = {0, 'E', 'c'};

typedef struct queue_state {
    uint64_t next_position, small_bytes, small_entries, ghost_clock;
    /* No entry of the small queue has a use-order key before this time (below, "the small
     * queue"): INT64_MAX when none has one, INT64_MIN to look from the start. */
    int64_t small_from;
    /* The use-order key main's hand looks at next (below, "main"): all zeros from the start. */
    uint8_t main_hand[SUC_TKEY_LEN];
    int legacy;  /* read from legacy_state_key */
    int earlier; /* read as an earlier build (or damage) left it: its ghost may be in `meta` */
} queue_state;

typedef struct entry_state {
    uint8_t queue;
    uint64_t position;
    uint8_t counter;
    uint64_t bytes;
    uint8_t legacy;  /* read from a `meta` key of its own (0x00 'f'), where earlier builds kept it */
    uint8_t keyless; /* in a queue with no queue key of its own (this build's places) */
} entry_state;

static int meta_put(MDB_txn *txn, suc_cache *c, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen,
                    suc_error *err) {
    MDB_val k = {klen, (void *)key}, v = {vlen, (void *)val};
    int mrc = suc_txn_put(c, txn, c->dbi_meta, &k, &v, 0);
    return mrc ? suc_fail_mdb(err, "mdb_put(eviction queues)", mrc) : SUC_OK;
}
static int meta_del(MDB_txn *txn, suc_cache *c, const uint8_t *key, size_t klen, suc_error *err) {
    MDB_val k = {klen, (void *)key};
    int mrc = suc_txn_del(c, txn, c->dbi_meta, &k);
    return mrc && mrc != MDB_NOTFOUND ? suc_fail_mdb(err, "mdb_del(eviction queues)", mrc) : SUC_OK;
}

/* ---- the policy ---- */

int suc_s3fifo_chosen(suc_cache *c, MDB_txn *txn) {
    MDB_val k = {sizeof policy_key, (void *)policy_key}, v;
    /* Anything but the one known value is least recently used: a damaged key never stops eviction. */
    return mdb_get(txn, c->dbi_meta, &k, &v) == 0 && v.mv_size == 1 && *(uint8_t *)v.mv_data == POLICY_S3FIFO;
}

/* ---- keys and values ---- */

static void qkey_make(uint8_t queue, uint64_t position, const uint8_t ikey[SUC_IKEY_LEN], uint8_t out[QKEY_LEN]) {
    out[0] = 0, out[1] = 'F', out[2] = queue;
    suc_put_be64(out + 3, position);
    memcpy(out + 11, ikey, SUC_IKEY_LEN);
}
static void ekey_make(const uint8_t ikey[SUC_IKEY_LEN], uint8_t out[EKEY_LEN]) {
    out[0] = 0, out[1] = 'f';
    memcpy(out + 2, ikey, SUC_IKEY_LEN);
}
static int state_read(suc_cache *c, MDB_txn *txn, queue_state *s) {
    memset(s, 0, sizeof *s); /* absent or garbage: from zero, the small queue looked for from the start */
    s->small_from = INT64_MIN;
    MDB_val k = {sizeof state_key, (void *)state_key}, v;
    int mrc = mdb_get(txn, c->dbi_meta, &k, &v);
    if (mrc == MDB_NOTFOUND) {
        k = (MDB_val){sizeof legacy_state_key, (void *)legacy_state_key};
        mrc = mdb_get(txn, c->dbi_meta, &k, &v);
        s->legacy = mrc == 0;
    }
    s->earlier = mrc == 0 && (s->legacy || v.mv_size != STATE_LEN);
    if (mrc == MDB_NOTFOUND ||
        (mrc == 0 && v.mv_size != STATE_LEN && v.mv_size != STATE_SMALL_FROM_LEN && v.mv_size != STATE_OLD_LEN))
        return 0;
    if (mrc) return mrc;
    const uint8_t *p = v.mv_data;
    s->next_position = suc_get_u64(p), s->small_bytes = suc_get_u64(p + 8);
    s->small_entries = suc_get_u64(p + 16), s->ghost_clock = suc_get_u64(p + 24);
    /* Counters an earlier build wrote: its small entries have queue keys, but keyless ones of
     * this build may be there too (both builds in one group), so they are looked for from the
     * start of the use order (a bounded walk per eviction, which moves on as it goes). */
    s->small_from = v.mv_size != STATE_OLD_LEN ? (int64_t)suc_get_u64(p + 32) : INT64_MIN;
    if (v.mv_size == STATE_LEN) memcpy(s->main_hand, p + 40, SUC_TKEY_LEN);
    return 0;
}
static int delete_under(suc_cache *c, MDB_txn *txn, uint8_t kind, suc_error *err);

static int state_write(suc_cache *c, MDB_txn *txn, const queue_state *s, suc_error *err) {
    /* The first write of these counters after an earlier build's drops the ghost it kept in
     * `meta` (below, "the ghost"): bounded by its table (4,096 keys), once. */
    int rc = s->earlier ? delete_under(c, txn, 'g', err) : SUC_OK;
    if (rc) return rc;
    uint8_t v[STATE_LEN];
    suc_put_u64(v, s->next_position), suc_put_u64(v + 8, s->small_bytes);
    suc_put_u64(v + 16, s->small_entries), suc_put_u64(v + 24, s->ghost_clock);
    suc_put_u64(v + 32, (uint64_t)s->small_from);
    memcpy(v + 40, s->main_hand, SUC_TKEY_LEN);
    rc = meta_put(txn, c, state_key, sizeof state_key, v, sizeof v, err);
    return rc || !s->legacy ? rc : meta_del(txn, c, legacy_state_key, sizeof legacy_state_key, err);
}

/* ---- each entry's place ----
 *
 * An entry's queue, position, counter and bytes are the value of its use-order key (by_use),
 * which a store and an eviction write anyway: kept under keys of their own in `meta`, they cost
 * a commit two more leaves of a deeper `meta` (Benchmarks/RESULTS.md, "Where a commit's pages
 * go"). A directory that chose S3-FIFO under an earlier build still has some there (0x00 'f' ‖
 * ikey, the same value): they are read when the use-order key has none, and dropped when the
 * entry's place is next written or the entry goes. */

/* 1 when `v` holds a place; a value of another shape (or none) is an entry in no queue. */
static int entry_decode(const MDB_val *v, entry_state *e) {
    const uint8_t *p = v->mv_data;
    if (v->mv_size != EVALUE_LEN ||
        (p[0] != QUEUE_SMALL && p[0] != QUEUE_MAIN && p[0] != SMALL_KEYLESS && p[0] != MAIN_KEYLESS))
        return 0;
    e->keyless = p[0] == SMALL_KEYLESS || p[0] == MAIN_KEYLESS;
    e->queue = p[0] == SMALL_KEYLESS ? QUEUE_SMALL : p[0] == MAIN_KEYLESS ? QUEUE_MAIN : p[0];
    e->position = suc_get_be64(p + 1), e->counter = p[9], e->bytes = suc_get_u64(p + 10);
    if (e->counter > COUNTER_MAX) e->counter = COUNTER_MAX;
    e->legacy = 0;
    return 1;
}
static int legacy_read(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN], entry_state *e, int *found) {
    uint8_t k[EKEY_LEN];
    ekey_make(ikey, k);
    MDB_val mk = {EKEY_LEN, k}, v;
    int mrc = mdb_get(txn, c->dbi_meta, &mk, &v);
    *found = mrc == 0 && entry_decode(&v, e);
    e->legacy = (uint8_t)*found;
    return mrc == MDB_NOTFOUND ? 0 : mrc;
}
/* 0 with *found set when the entry (its record `r`) has a place, or an LMDB error. */
static int entry_read(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN], const suc_record *r,
                      entry_state *e, int *found) {
    MDB_val v;
    int mrc = suc_use_order_value(c, txn, r, ikey, &v);
    if (mrc && mrc != MDB_NOTFOUND) return mrc;
    if (mrc == 0 && (*found = entry_decode(&v, e))) return 0;
    return legacy_read(c, txn, ikey, e, found);
}
static int entry_write(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN], const suc_record *r,
                       entry_state *e, suc_error *err) {
    uint8_t v[EVALUE_LEN];
    v[0] = !e->keyless ? e->queue : e->queue == QUEUE_SMALL ? SMALL_KEYLESS : MAIN_KEYLESS;
    suc_put_be64(v + 1, e->position);
    v[9] = e->counter;
    suc_put_u64(v + 10, e->bytes);
    int rc = suc_use_order_value_put(c, txn, r, ikey, v, sizeof v, err);
    if (rc || !e->legacy) return rc;
    e->legacy = 0;
    uint8_t k[EKEY_LEN];
    ekey_make(ikey, k);
    return meta_del(txn, c, k, sizeof k, err);
}
/* A small-queue entry's use-order key at `t`: the small queue is looked for from there on. */
static void small_from_at_most(queue_state *s, int64_t t) {
    if (t < s->small_from) s->small_from = t;
}

/* Puts the entry in `queue` (a new position), dropping the queue key an earlier build gave it:
 * this build's places have none (below, "the small queue" and "main"). */
static int enqueue(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN], const suc_record *r,
                   entry_state *e, int had_place, uint8_t queue, queue_state *s, suc_error *err) {
    int rc;
    if (had_place) {
        uint8_t qk[QKEY_LEN];
        qkey_make(e->queue, e->position, ikey, qk);
        if (!e->keyless && (rc = meta_del(txn, c, qk, sizeof qk, err))) return rc;
        if (e->queue == QUEUE_SMALL) s->small_bytes -= e->bytes < s->small_bytes ? e->bytes : s->small_bytes;
        if (e->queue == QUEUE_SMALL && s->small_entries) s->small_entries--;
    }
    e->queue = queue;
    e->position = s->next_position++;
    e->keyless = 1;
    if (queue == QUEUE_SMALL) {
        s->small_bytes += e->bytes, s->small_entries++;
        small_from_at_most(s, suc_use_order_time(c, r));
    }
    return entry_write(c, txn, ikey, r, e, err);
}

static uint64_t entry_bytes(const suc_record *r, size_t len) { return (uint64_t)len + suc_record_file_bytes(r, len); }

/* The first meta key under `prefix` (copied into out, at most `cap` bytes): 0, MDB_NOTFOUND, or an error. */
static int first_under(suc_cache *c, MDB_txn *txn, const uint8_t *prefix, size_t plen, uint8_t *out, size_t cap,
                       size_t *out_len) {
    MDB_cursor *cur;
    int mrc = mdb_cursor_open(txn, c->dbi_meta, &cur);
    if (mrc) return mrc;
    MDB_val k = {plen, (void *)prefix}, v;
    mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    if (mrc == 0 && (k.mv_size < plen || k.mv_size > cap || memcmp(k.mv_data, prefix, plen) != 0)) mrc = MDB_NOTFOUND;
    if (mrc == 0) memcpy(out, k.mv_data, k.mv_size), *out_len = k.mv_size;
    mdb_cursor_close(cur);
    return mrc;
}

/* ---- the ghost ----
 *
 * A direct-mapped table of slots in the `ghost` file beside the index (ghost_file.c): a slot
 * holds a key's fingerprint and the ghost clock (state.ghost_clock: how many keys the ghost has
 * taken in) when it came in, both u32. A key is remembered while fewer than `entries` keys came
 * in after it and no other key took its slot. The table uses as many slots as the directory has
 * entries (a power of two, at least 1,024, at most the file's 2^20), so a small cache touches a
 * few blocks of the file; a key that came in before the table grew or shrank is forgotten, which
 * only starts it in the small queue. The ghost costs a commit no index page: kept in `meta` it
 * was a leaf and a branch of a commit's pages wherever a small-queue eviction happened
 * (Benchmarks/RESULTS.md). Earlier builds kept it there, under 0x00 'g' ‖ bucket. */
typedef struct ghost_slot {
    uint32_t index, print;
    uint64_t entries; /* the directory's entries, which size the table and bound a key's age */
} ghost_slot;

static void ghost_place(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN], ghost_slot *g) {
    g->entries = 0;
    suc_meta_get(c, txn, "entries", &g->entries);
    uint32_t slots = 1024;
    while (slots < suc_ghost_file_slots() && slots < g->entries) slots <<= 1;
    g->index = suc_get_u32(ikey + 7) & (slots - 1);
    /* The key's hash and its variant's: a collision only starts a key in main. */
    g->print = suc_get_u32(ikey + 3) ^ suc_get_u32(ikey + SUC_KEY_HASH_LEN);
    if (!g->print) g->print = 1; /* 0 is an empty slot */
}

/* Whether the ghost remembers the key (and forgets it: it is stored again). */
static int ghost_take(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN], const queue_state *s) {
    ghost_slot g;
    ghost_place(c, txn, ikey, &g);
    uint8_t slot[8];
    suc_ghost_file_read(c, g.index, slot);
    if (suc_get_u32(slot) != g.print) return 0;
    uint32_t age = (uint32_t)s->ghost_clock - suc_get_u32(slot + 4);
    static const uint8_t empty[8];
    suc_ghost_file_write(c, g.index, empty);
    return age <= g.entries;
}

/* Remembers an entry evicted from the small queue. */
static void ghost_add(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN], queue_state *s) {
    ghost_slot g;
    ghost_place(c, txn, ikey, &g);
    s->ghost_clock++;
    uint8_t slot[8];
    suc_put_u32(slot, g.print);
    suc_put_u32(slot + 4, (uint32_t)s->ghost_clock);
    suc_ghost_file_write(c, g.index, slot);
}

/* ---- the secondary structure's hooks ---- */

static int queues_put(suc_cache *c, MDB_txn *txn, suc_change *ch, suc_error *err) {
    if (!suc_s3fifo_chosen(c, txn)) return SUC_OK;
    queue_state s;
    entry_state e = {0};
    int found = 0, mrc = state_read(c, txn, &s);
    /* A replaced entry's place came along with its use-order key (time_orders.c, a row above). */
    if (!mrc && ch->old) mrc = entry_read(c, txn, ch->ikey, ch->new_rec, &e, &found);
    if (mrc) return suc_fail_mdb(err, "mdb_get(eviction queues)", mrc);
    uint64_t bytes = entry_bytes(ch->new_rec, ch->new_len);
    if (found) { /* replaced in place: it keeps its place and counter, with its new size */
        if (e.queue == QUEUE_SMALL) s.small_bytes = s.small_bytes - (e.bytes < s.small_bytes ? e.bytes : s.small_bytes) + bytes;
        if (e.keyless && e.queue == QUEUE_SMALL) /* its key may have moved back */
            small_from_at_most(&s, suc_use_order_time(c, ch->new_rec));
        e.bytes = bytes;
        int rc = entry_write(c, txn, ch->ikey, ch->new_rec, &e, err);
        return rc ? rc : state_write(c, txn, &s, err);
    }
    int remembered = ghost_take(c, txn, ch->ikey, &s), rc;
    e.bytes = bytes;
    e.counter = 0;
    if ((rc = enqueue(c, txn, ch->ikey, ch->new_rec, &e, 0, remembered ? QUEUE_MAIN : QUEUE_SMALL, &s, err)))
        return rc;
    return state_write(c, txn, &s, err);
}

/* Drops an entry's queue key, and its place where it has one of its own in `meta` (its record `r`
 * goes, or it is gone: NULL; a place in the use-order key goes with that key, a row above). */
static int forget(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN], const suc_record *r, suc_error *err) {
    entry_state e;
    int found, mrc = r ? entry_read(c, txn, ikey, r, &e, &found) : legacy_read(c, txn, ikey, &e, &found);
    if (mrc) return suc_fail_mdb(err, "mdb_get(eviction queues)", mrc);
    uint8_t ek[EKEY_LEN];
    ekey_make(ikey, ek);
    if (!found) return meta_del(txn, c, ek, sizeof ek, err);
    queue_state s;
    if ((mrc = state_read(c, txn, &s))) return suc_fail_mdb(err, "mdb_get(eviction queues)", mrc);
    uint8_t qk[QKEY_LEN];
    qkey_make(e.queue, e.position, ikey, qk);
    int rc = e.keyless ? SUC_OK : meta_del(txn, c, qk, sizeof qk, err);
    if (!rc && e.legacy) rc = meta_del(txn, c, ek, sizeof ek, err);
    if (rc) return rc;
    if (e.queue == QUEUE_SMALL) {
        s.small_bytes -= e.bytes < s.small_bytes ? e.bytes : s.small_bytes;
        if (s.small_entries) s.small_entries--;
    }
    return state_write(c, txn, &s, err);
}

static int queues_delete(suc_cache *c, MDB_txn *txn, suc_change *ch, suc_error *err) {
    return forget(c, txn, ch->ikey, ch->old, err);
}

static int queues_want_touches(suc_cache *c, MDB_txn *txn) { return suc_s3fifo_chosen(c, txn); }

/* A hit raises the counter; one already at its top writes nothing. */
static int queues_touch(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN], const suc_record *r,
                        int64_t when_ms, int last_use_moves, suc_error *err) {
    /* The use order takes touches under S3-FIFO only while a partition has a quota; then it has
     * moved the entry's key, and the place with it, to this use (time_orders.c, a row above). */
    suc_record used = *r;
    used.last_used_ms = when_ms;
    const suc_record *where = last_use_moves ? &used : r;
    entry_state e;
    int found, mrc = entry_read(c, txn, ikey, where, &e, &found);
    if (mrc) return suc_fail_mdb(err, "mdb_get(eviction queues)", mrc);
    if (!found || e.counter >= COUNTER_MAX) return SUC_OK;
    e.counter++;
    return entry_write(c, txn, ikey, where, &e, err);
}

/* A hit counts while the entry's counter is below its top, however soon after its store or its
 * last counted hit it comes: the touch interval, which spares LRU a record write per hit, would
 * otherwise hide every hit of an entry's first minute (its record's last use is its store, and
 * S3-FIFO does not move it), the very hits that keep an entry out of the small queue's evictions.
 * The policy is remembered with the snapshot it was read in, so a directory evicting by last use
 * pays a comparison per hit, not a lookup; a stale answer (another generation's snapshot of the
 * same number) costs or saves one touch, never an entry. */
static int queues_count_every_hit(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN],
                                  const MDB_val *record) {
    uint64_t id = (uint64_t)mdb_txn_id(txn);
    uint64_t seen = atomic_load_explicit(&c->eviction_policy_seen, memory_order_relaxed);
    int chosen;
    if (seen >> 1 == id) {
        chosen = (int)(seen & 1);
    } else {
        chosen = suc_s3fifo_chosen(c, txn);
        atomic_store_explicit(&c->eviction_policy_seen, id << 1 | (uint64_t)chosen, memory_order_relaxed);
    }
    suc_record r;
    entry_state e;
    int found;
    return chosen && suc_record_decode(record->mv_data, record->mv_size, &r) == SUC_OK &&
           entry_read(c, txn, ikey, &r, &e, &found) == 0 && found && e.counter < COUNTER_MAX;
}

/* ---- eviction: the next victim ---- */

/* The oldest queue key of `queue`: 0, MDB_NOTFOUND, or an LMDB error. */
static int queue_oldest(suc_cache *c, MDB_txn *txn, uint8_t queue, uint8_t out[QKEY_LEN]) {
    uint8_t prefix[3] = {0, 'F', queue};
    size_t len;
    int mrc = first_under(c, txn, prefix, sizeof prefix, out, QKEY_LEN, &len);
    return mrc == 0 && len != QKEY_LEN ? MDB_NOTFOUND : mrc;
}

/* ---- the small queue ----
 *
 * The small queue's entries have no queue key: a new entry's use-order key (which its store
 * writes anyway) is its place in the queue. Under S3-FIFO a hit does not move that key, so the
 * use order is the order entries came in, and the small queue's oldest entry is the first
 * use-order key from `small_from` on whose place says "small, keyless"; the entries passed over
 * are main's (stored again, or remembered by the ghost, after it). Every entry that joins the
 * small queue, or whose key moves back in time while in it, lowers `small_from` to its key, so
 * none sits before it. Queue keys of the small queue that earlier builds wrote (all older) are
 * walked first. Without keys at its two ends the small queue costs a storing commit no `meta`
 * leaf of its own (Benchmarks/RESULTS.md). */

/* 0 with the oldest keyless small entry's use-order key and place (small_from moved up to it),
 * MDB_NOTFOUND when there is none, WALK_PAUSED when it passed over `limit` keys (small_from moved
 * on as far as it looked; *passed says how many), or an LMDB error. */
static int small_oldest(suc_cache *c, MDB_txn *txn, queue_state *s, uint32_t limit, uint8_t tkey[SUC_TKEY_LEN],
                        entry_state *e, uint32_t *passed_out) {
    *passed_out = 0;
    if (s->small_from == INT64_MAX) return MDB_NOTFOUND;
    if (!limit) return WALK_PAUSED;
    MDB_cursor *cur;
    int mrc = mdb_cursor_open(txn, c->dbi_by_use, &cur);
    if (mrc) return mrc;
    static const uint8_t none[SUC_IKEY_LEN];
    uint8_t start[SUC_TKEY_LEN];
    suc_tkey_make(s->small_from, none, start);
    MDB_val k = {SUC_TKEY_LEN, start}, v;
    uint32_t passed = 0;
    for (mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); mrc == 0; mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        int ours = k.mv_size == SUC_TKEY_LEN; /* another length is not a use-order key: passed over */
        if (ours && entry_decode(&v, e) && e->keyless && e->queue == QUEUE_SMALL) {
            memcpy(tkey, k.mv_data, SUC_TKEY_LEN);
            s->small_from = suc_tkey_time(tkey);
            break;
        }
        if (++passed == limit) { /* the next look goes on from here */
            if (ours) s->small_from = suc_tkey_time(k.mv_data);
            mrc = WALK_PAUSED;
            break;
        }
    }
    if (mrc == MDB_NOTFOUND) s->small_from = INT64_MAX; /* none left at all */
    mdb_cursor_close(cur);
    *passed_out = passed;
    return mrc;
}

/* ---- main ----
 *
 * Main's entries have no queue key either: an entry's use-order key is its place in main too,
 * and main is walked as a clock over the use order. `main_hand` is the use-order key main looks
 * at next; from there (round to the start at the end) the first key whose place says "main,
 * keyless" is main's next entry. An entry used since the hand last passed it stays where it is
 * with its counter lowered, and the hand moves past it; one that was not is evicted. That is
 * S3-FIFO's main FIFO with reinsertion as a clock (a reinserted entry is next looked at after a
 * whole round), except that an entry joining main (from the small queue, or remembered by the
 * ghost) keeps its use-order key, so the hand may reach it sooner than a round; the in-memory
 * model gives the same misses within 0.5% on both traces (Benchmarks/RESULTS.md). So main costs a
 * commit no `meta` leaf: the hand is a field of the queues' counters, and an entry's move is a
 * change of its use-order value, where the walk has just read it. Main's queue keys that earlier
 * builds wrote are walked first. */

/* The use-order key right after `k`: the hand passes an entry it let stay. */
static void tkey_after(uint8_t k[SUC_TKEY_LEN]) {
    for (int i = SUC_TKEY_LEN - 1; i >= 0 && ++k[i] == 0; i--) {
    }
}

/* 0 with main's next keyless entry's use-order key and place (the hand moved to it),
 * MDB_NOTFOUND when a whole round found none, WALK_PAUSED when it passed over `limit` keys (the
 * hand moved on as far as it looked; *passed says how many), or an LMDB error. */
static int main_next(suc_cache *c, MDB_txn *txn, queue_state *s, uint32_t limit, uint8_t tkey[SUC_TKEY_LEN],
                     entry_state *e, uint32_t *passed_out) {
    *passed_out = 0;
    if (!limit) return WALK_PAUSED;
    MDB_cursor *cur;
    int mrc = mdb_cursor_open(txn, c->dbi_by_use, &cur);
    if (mrc) return mrc;
    uint8_t start[SUC_TKEY_LEN];
    memcpy(start, s->main_hand, SUC_TKEY_LEN);
    MDB_val k = {SUC_TKEY_LEN, start}, v;
    int round = 0;
    uint32_t passed = 0;
    for (mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);; mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (mrc == MDB_NOTFOUND && !round) { /* past the newest key: on from the oldest */
            round = 1;
            if ((mrc = mdb_cursor_get(cur, &k, &v, MDB_FIRST))) break;
        } else if (mrc) {
            break;
        }
        int ours = k.mv_size == SUC_TKEY_LEN; /* another length is not a use-order key: passed over */
        if (round && ours && memcmp(k.mv_data, start, SUC_TKEY_LEN) >= 0) { /* all the way round */
            mrc = MDB_NOTFOUND;
            break;
        }
        if (ours && entry_decode(&v, e) && e->keyless && e->queue == QUEUE_MAIN) {
            memcpy(tkey, k.mv_data, SUC_TKEY_LEN);
            memcpy(s->main_hand, tkey, SUC_TKEY_LEN);
            break;
        }
        if (++passed == limit) { /* the next look goes on from here */
            if (ours) memcpy(s->main_hand, k.mv_data, SUC_TKEY_LEN);
            mrc = WALK_PAUSED;
            break;
        }
    }
    mdb_cursor_close(cur);
    *passed_out = passed;
    return mrc;
}

static int record_exists(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN]) {
    MDB_val k = {SUC_IKEY_LEN, (void *)ikey}, v;
    return mdb_get(txn, c->dbi_main, &k, &v) == 0;
}

/* A queue's next entry to look at: a queue key an earlier build wrote (all older than this
 * build's places), else this build's keyless entry. */
typedef struct candidate {
    uint8_t qkey[QKEY_LEN];     /* its queue key, or the key it would have (keyless) */
    uint8_t tkey[SUC_TKEY_LEN]; /* its use-order key (keyless) */
    int keyless;
} candidate;

/* 0 with `queue`'s next entry in *out, MDB_NOTFOUND, or an LMDB error. A look that passes over
 * SCAN_MAX keys goes on from where it stopped (the same queue: taking the other queue's entry, or
 * the use order's oldest, would be another policy), until this eviction's *scan_left is spent;
 * then MDB_NOTFOUND. */
static int queue_next(suc_cache *c, MDB_txn *txn, uint8_t queue, queue_state *s, uint32_t *scan_left,
                      candidate *out) {
    int mrc = queue_oldest(c, txn, queue, out->qkey);
    out->keyless = 0;
    if (mrc != MDB_NOTFOUND) return mrc;
    entry_state e;
    do {
        uint32_t limit = *scan_left < SCAN_MAX ? *scan_left : SCAN_MAX, passed;
        mrc = queue == QUEUE_SMALL ? small_oldest(c, txn, s, limit, out->tkey, &e, &passed)
                                   : main_next(c, txn, s, limit, out->tkey, &e, &passed);
        *scan_left -= passed;
    } while (mrc == WALK_PAUSED && *scan_left);
    if (mrc == WALK_PAUSED) return MDB_NOTFOUND;
    if (mrc) return mrc;
    out->keyless = 1;
    qkey_make(queue, e.position, out->tkey + 8, out->qkey);
    return 0;
}

int suc_s3fifo_victim(suc_cache *c, MDB_txn *txn, uint64_t capacity, uint8_t out_ikey[SUC_IKEY_LEN], suc_error *err) {
    queue_state s;
    int mrc = state_read(c, txn, &s), rc;
    if (mrc) return suc_fail_mdb(err, "mdb_get(eviction queues)", mrc);
    uint64_t entries = 0;
    suc_meta_get(c, txn, "entries", &entries);
    /* Each entry moves at most four times before it is evicted (small to main, then its counter
     * down from 3): past that the queues are inconsistent, and the caller takes the use order. */
    uint64_t steps_left = 4 * entries + 64;
    uint64_t small_target = capacity / 10;
    /* A store waits for its evictions: past this many moves, the entry at hand goes whatever its
     * counter (a main queue of entries all hit three times would otherwise move every entry,
     * three times, inside one store's commit). */
    uint32_t moves_left = MOVES_PER_VICTIM, scan_left = SCAN_PER_VICTIM;
    for (; steps_left; steps_left--) {
        /* The small queue's turn while it holds more than its tenth; the other queue's when the
         * one whose turn it is has no entry. */
        uint8_t first = s.small_bytes > small_target ? QUEUE_SMALL : QUEUE_MAIN;
        uint8_t order[2] = {first, first == QUEUE_SMALL ? QUEUE_MAIN : QUEUE_SMALL};
        candidate at;
        uint8_t from = 0;
        for (int i = 0; i < 2 && !from; i++) {
            mrc = queue_next(c, txn, order[i], &s, &scan_left, &at);
            if (mrc && mrc != MDB_NOTFOUND) return suc_fail_mdb(err, "mdb_cursor_get(eviction queues)", mrc);
            if (!mrc) from = order[i];
        }
        if (!from) break;
        const uint8_t *ikey = at.qkey + 11;
        suc_record r;
        int have_record = suc_index_record_get(c, txn, ikey, &r, NULL) == 0;
        entry_state e;
        int found = 0;
        mrc = have_record ? entry_read(c, txn, ikey, &r, &e, &found) : legacy_read(c, txn, ikey, &e, &found);
        if (mrc) return suc_fail_mdb(err, "mdb_get(eviction queues)", mrc);
        if (!found || e.queue != at.qkey[2] || e.position != suc_get_be64(at.qkey + 3) || !have_record ||
            e.keyless != at.keyless) {
            if (at.keyless) { /* a use-order key whose record is gone, or has another */
                if ((rc = suc_time_order_drop_stray(c, txn, SUC_ORDER_USE, at.tkey, err))) return rc;
                continue;
            }
            /* A stray: its record is gone, or the entry sits elsewhere. */
            uint8_t stray[QKEY_LEN];
            memcpy(stray, at.qkey, QKEY_LEN);
            if ((rc = meta_del(txn, c, stray, QKEY_LEN, err))) return rc;
            if (!found || have_record) continue;
            /* A place of its own in `meta` whose record is gone. forget() keeps the counters in
             * `meta`: hand it this walk's changes and take its own back. */
            if ((rc = state_write(c, txn, &s, err)) || (rc = forget(c, txn, stray + 11, NULL, err))) return rc;
            if ((mrc = state_read(c, txn, &s))) return suc_fail_mdb(err, "mdb_get(eviction queues)", mrc);
            continue;
        }
        if (e.counter > 0 && moves_left) { /* used since it came in (small) or its last pass (main): it stays */
            moves_left--;
            e.counter = from == QUEUE_SMALL ? 0 : e.counter - 1;
            if ((rc = enqueue(c, txn, ikey, &r, &e, 1, QUEUE_MAIN, &s, err))) return rc;
            if (from == QUEUE_MAIN && at.keyless) tkey_after(s.main_hand); /* next looked at after a round */
            continue;
        }
        memcpy(out_ikey, ikey, SUC_IKEY_LEN);
        if (from == QUEUE_SMALL) ghost_add(c, txn, ikey, &s);
        /* The caller's delete drops its queue keys (on_delete) and reads the state written here. */
        return state_write(c, txn, &s, err);
    }
    rc = state_write(c, txn, &s, err);
    return rc ? rc : SUC_ENOTFOUND;
}

/* Reads what one queue's next victim will touch in the index: its record and its place. */
static void prefetch_one(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN]) {
    suc_record r;
    entry_state e;
    int found;
    if (suc_index_record_get(c, txn, ikey, &r, NULL) == 0) (void)entry_read(c, txn, ikey, &r, &e, &found);
}

/* Reads the next `count` keyless entries of `queue` from the use-order key `start` on. */
static void prefetch_walk(suc_cache *c, MDB_txn *txn, const uint8_t start[SUC_TKEY_LEN], uint8_t queue,
                          uint32_t count) {
    MDB_cursor *cur;
    if (mdb_cursor_open(txn, c->dbi_by_use, &cur)) return;
    uint8_t from[SUC_TKEY_LEN];
    memcpy(from, start, SUC_TKEY_LEN);
    MDB_val k = {SUC_TKEY_LEN, from}, v;
    uint32_t found = 0, passed = 0;
    for (int mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); mrc == 0 && found < count && passed < SCAN_MAX;
         mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT), passed++) {
        entry_state e;
        if (k.mv_size != SUC_TKEY_LEN || !entry_decode(&v, &e) || !e.keyless || e.queue != queue) continue;
        prefetch_one(c, txn, (const uint8_t *)k.mv_data + 8);
        found++;
    }
    mdb_cursor_close(cur);
}

/* Reads, in the read transaction `txn`, what the next `count` victims of each queue will touch:
 * the oldest queue keys or use-order keys, each entry's place and record; compaction calls it
 * before a batch takes the write lock (maintenance.c). */
void suc_s3fifo_prefetch(suc_cache *c, MDB_txn *txn, uint32_t count) {
    static const uint8_t queues[2] = {QUEUE_SMALL, QUEUE_MAIN};
    for (int q = 0; q < 2; q++) { /* the queue keys earlier builds wrote */
        MDB_cursor *cur;
        if (mdb_cursor_open(txn, c->dbi_meta, &cur)) return;
        uint8_t prefix[3] = {0, 'F', queues[q]};
        MDB_val k = {sizeof prefix, prefix}, v;
        int mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
        for (uint32_t n = 0; mrc == 0 && n < count; n++, mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
            if (k.mv_size != QKEY_LEN || memcmp(k.mv_data, prefix, sizeof prefix) != 0) break;
            prefetch_one(c, txn, (const uint8_t *)k.mv_data + 11);
        }
        mdb_cursor_close(cur);
    }
    /* The keyless entries each queue's walk meets next (it reads their use-order keys). */
    queue_state s;
    if (state_read(c, txn, &s)) return;
    static const uint8_t none[SUC_IKEY_LEN];
    uint8_t small_start[SUC_TKEY_LEN];
    suc_tkey_make(s.small_from, none, small_start);
    if (s.small_from != INT64_MAX) prefetch_walk(c, txn, small_start, QUEUE_SMALL, count);
    prefetch_walk(c, txn, s.main_hand, QUEUE_MAIN, count);
}

/* ---- choosing the policy, rebuilding, checking ---- */

static int delete_under(suc_cache *c, MDB_txn *txn, uint8_t kind, suc_error *err) {
    MDB_cursor *cur;
    int mrc = mdb_cursor_open(txn, c->dbi_meta, &cur);
    if (mrc) return suc_fail_mdb(err, "mdb_cursor_open(meta)", mrc);
    uint8_t prefix[2] = {0, kind};
    MDB_val k = {2, prefix}, v;
    for (mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); mrc == 0; mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size < 2 || memcmp(k.mv_data, prefix, 2) != 0) break;
        if (kind == 'E' && k.mv_size == 2) continue; /* the policy itself stays */
        if ((mrc = suc_txn_cursor_del(c, txn, c->dbi_meta, cur))) break;
    }
    mdb_cursor_close(cur);
    return mrc && mrc != MDB_NOTFOUND ? suc_fail_mdb(err, "mdb_cursor_del(eviction queues)", mrc) : SUC_OK;
}

/* Empties every use-order key's value (each entry's place). */
static int places_clear(suc_cache *c, MDB_txn *txn, suc_error *err) {
    MDB_cursor *cur;
    int mrc = mdb_cursor_open(txn, c->dbi_by_use, &cur);
    if (mrc) return suc_fail_mdb(err, "mdb_cursor_open(by_use)", mrc);
    MDB_val k, v, empty = {0, NULL};
    for (mrc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); mrc == 0; mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (!v.mv_size) continue;
        uint8_t key[SUC_TKEY_LEN]; /* the put may move the page k points into */
        if (k.mv_size != sizeof key) continue;
        memcpy(key, k.mv_data, sizeof key);
        MDB_val kk = {sizeof key, key};
        if ((mrc = suc_txn_put(c, txn, c->dbi_by_use, &kk, &empty, 0))) break;
    }
    mdb_cursor_close(cur);
    return mrc && mrc != MDB_NOTFOUND ? suc_fail_mdb(err, "mdb_put(by_use)", mrc) : SUC_OK;
}

static int drop_all(suc_cache *c, MDB_txn *txn, suc_error *err) {
    static const uint8_t kinds[] = {'F', 'f', 'g', 'E'};
    for (size_t i = 0; i < sizeof kinds; i++) {
        int rc = delete_under(c, txn, kinds[i], err);
        if (rc) return rc;
    }
    int rc = meta_del(txn, c, state_key, sizeof state_key, err);
    return rc ? rc : places_clear(c, txn, err);
}

/* Empty ghost; every entry in main, least recently used oldest, with its counter at 0. */
static int queues_rebuild(suc_cache *c, MDB_txn *txn, suc_error *err) {
    int rc = drop_all(c, txn, err);
    if (rc) return rc;
    if (!suc_s3fifo_chosen(c, txn)) return SUC_OK;
    suc_ghost_file_clear(c);
    queue_state s = {.small_from = INT64_MAX}; /* every entry in main: none in the small queue */
    MDB_cursor *cur;
    int mrc = mdb_cursor_open(txn, c->dbi_by_use, &cur);
    if (mrc) return suc_fail_mdb(err, "mdb_cursor_open(by_use)", mrc);
    MDB_val k, v;
    for (mrc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); mrc == 0 && !rc; mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != SUC_TKEY_LEN) continue;
        const uint8_t *ikey = (const uint8_t *)k.mv_data + 8;
        MDB_val mv;
        suc_record r;
        /* A key least recently used left behind: its entry is placed at its own key. */
        if (!suc_use_order_key_live(c, txn, k.mv_data) || suc_index_record_get(c, txn, ikey, &r, &mv)) continue;
        entry_state e = {.bytes = entry_bytes(&r, mv.mv_size)};
        /* The place is written into this table's keys under the cursor (LMDB moves the cursor
         * along with a page split); the key's bytes are copied before. */
        uint8_t ikey_copy[SUC_IKEY_LEN];
        memcpy(ikey_copy, ikey, SUC_IKEY_LEN);
        rc = enqueue(c, txn, ikey_copy, &r, &e, 0, QUEUE_MAIN, &s, err);
    }
    mdb_cursor_close(cur);
    if (rc) return rc;
    if (mrc != MDB_NOTFOUND) return suc_fail_mdb(err, "mdb_cursor_get(by_use)", mrc);
    return state_write(c, txn, &s, err);
}

static int set_apply(suc_cache *c, MDB_txn *txn, void *vctx, suc_error *err) {
    int s3fifo = *(int *)vctx;
    uint8_t value = POLICY_S3FIFO;
    int rc = s3fifo ? meta_put(txn, c, policy_key, sizeof policy_key, &value, 1, err)
                    : meta_del(txn, c, policy_key, sizeof policy_key, err);
    return rc ? rc : queues_rebuild(c, txn, err);
}

int suc_eviction_policy_set(suc_cache *c, int policy, suc_error *err) {
    int rc = suc_cache_check_fork(c, err);
    if (rc) return rc;
    if (policy != SUC_EVICTION_LRU && policy != SUC_EVICTION_S3FIFO)
        return suc_fail(err, SUC_EINVAL, "suc_eviction_policy_set", 0, 0, "unknown eviction policy %d", policy);
    int s3fifo = policy == SUC_EVICTION_S3FIFO;
    /* One transaction: every process's next store and eviction sees the policy and its queues together. */
    return suc_write_txn_ex(c, set_apply, NULL, &s3fifo, 1, err);
}

int suc_eviction_policy_get(suc_cache *c, int *out_policy, suc_error *err) {
    int rc = suc_cache_check_fork(c, err);
    if (rc) return rc;
    if (!out_policy) return suc_fail(err, SUC_EINVAL, "suc_eviction_policy_get", 0, 0, "out_policy is required");
    MDB_txn *txn;
    if ((rc = suc_rtxn_begin(c, &txn, err))) return rc;
    *out_policy = suc_s3fifo_chosen(c, txn) ? SUC_EVICTION_S3FIFO : SUC_EVICTION_LRU;
    suc_rtxn_end(c, txn);
    return SUC_OK;
}

/* A queue key must name a record whose place is that very one. */
static void count_queue_key(suc_cache *c, MDB_txn *txn, MDB_val k, queue_state *sums, uint64_t *bad) {
    const uint8_t *key = k.mv_data;
    suc_record r;
    entry_state e;
    int found = 0;
    if (k.mv_size != QKEY_LEN || suc_index_record_get(c, txn, key + 11, &r, NULL) ||
        entry_read(c, txn, key + 11, &r, &e, &found) ||
        !found || e.queue != key[2] || e.position != suc_get_be64(key + 3))
        (*bad)++;
    else if (e.queue == QUEUE_SMALL)
        sums->small_bytes += e.bytes, sums->small_entries++;
}

/* A place must have its queue key and its record; 1 when it does. */
static int count_place(suc_cache *c, MDB_txn *txn, const uint8_t ikey[SUC_IKEY_LEN], const entry_state *e,
                       uint64_t *bad) {
    uint8_t qk[QKEY_LEN];
    qkey_make(e->queue, e->position, ikey, qk);
    MDB_val qmk = {QKEY_LEN, qk}, qv;
    if (mdb_get(txn, c->dbi_meta, &qmk, &qv) || !record_exists(c, txn, ikey)) {
        (*bad)++;
        return 0;
    }
    return 1;
}
/* A place of its own in `meta` (an earlier build's): the same. */
static int count_legacy_place(suc_cache *c, MDB_txn *txn, MDB_val k, uint64_t *bad) {
    const uint8_t *key = k.mv_data;
    entry_state e;
    int found = 0;
    if (k.mv_size != EKEY_LEN || legacy_read(c, txn, key + 2, &e, &found) || !found) {
        (*bad)++;
        return 0;
    }
    return count_place(c, txn, key + 2, &e, bad);
}
/* The places in the use-order keys' values; a key of no record is the use order's own stray. A
 * keyless entry must have its record, and one of the small queue sit at or after `small_from`
 * and count in the small queue's sums. */
static int count_places(suc_cache *c, MDB_txn *txn, const queue_state *s, queue_state *sums, uint64_t *queued,
                        uint64_t *bad) {
    MDB_cursor *cur;
    int mrc = mdb_cursor_open(txn, c->dbi_by_use, &cur);
    if (mrc) return mrc;
    MDB_val k, v;
    for (mrc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); mrc == 0; mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        entry_state e;
        if (k.mv_size != SUC_TKEY_LEN || !v.mv_size) continue;
        const uint8_t *ikey = (const uint8_t *)k.mv_data + 8;
        if (!entry_decode(&v, &e)) {
            (*bad)++;
        } else if (e.keyless) {
            int small = e.queue == QUEUE_SMALL;
            if (!record_exists(c, txn, ikey) || (small && suc_tkey_time(k.mv_data) < s->small_from)) {
                (*bad)++;
                continue;
            }
            (*queued)++;
            if (small) sums->small_bytes += e.bytes, sums->small_entries++;
        } else {
            *queued += (uint64_t)count_place(c, txn, ikey, &e, bad);
        }
    }
    mdb_cursor_close(cur);
    return mrc == MDB_NOTFOUND ? 0 : mrc;
}

/* Counts what disagrees in one read snapshot: queue keys without their entry state or record,
 * entry states without their queue key or record, records of this release in no queue, and
 * the small queue's counters. */
static int count_mismatches(suc_cache *c, MDB_txn *txn, uint64_t *bad) {
    queue_state s, sums = {0};
    int mrc = state_read(c, txn, &s);
    if (mrc) return mrc;
    MDB_cursor *cur;
    MDB_val k = {sizeof legacy_state_key, (void *)legacy_state_key}, v;
    if (!s.legacy && mdb_get(txn, c->dbi_meta, &k, &v) == 0) (*bad)++; /* counters left where earlier builds kept them */
    uint64_t queued = 0;
    static const uint8_t kinds[3] = {'F', 'f', 'g'};
    for (int i = 0; i < 3; i++) {
        if ((mrc = mdb_cursor_open(txn, c->dbi_meta, &cur))) return mrc;
        uint8_t prefix[2] = {0, kinds[i]};
        k = (MDB_val){2, prefix};
        for (mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); mrc == 0; mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
            if (k.mv_size < 2 || memcmp(k.mv_data, prefix, 2) != 0) break;
            if (kinds[i] == 'F') count_queue_key(c, txn, k, &sums, bad);
            else if (kinds[i] == 'f') queued += (uint64_t)count_legacy_place(c, txn, k, bad);
            else *bad += !s.earlier; /* an earlier build's ghost, left past this build's first write */
        }
        mdb_cursor_close(cur);
        if (mrc && mrc != MDB_NOTFOUND) return mrc;
    }
    if ((mrc = count_places(c, txn, &s, &sums, &queued, bad))) return mrc;
    uint64_t ours = 0;
    if ((mrc = mdb_cursor_open(txn, c->dbi_main, &cur))) return mrc;
    for (mrc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); mrc == 0; mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        suc_record r;
        if (suc_record_decode(v.mv_data, v.mv_size, &r) == SUC_OK) ours++;
    }
    mdb_cursor_close(cur);
    if (mrc && mrc != MDB_NOTFOUND) return mrc;
    if (ours > queued) *bad += ours - queued;
    if (sums.small_bytes != s.small_bytes || sums.small_entries != s.small_entries) (*bad)++;
    return 0;
}

static int rebuild_apply(suc_cache *c, MDB_txn *txn, void *vctx, suc_error *err) {
    (void)vctx;
    return queues_rebuild(c, txn, err);
}

/* With S3-FIFO chosen, verify compares the queues with the records (one read snapshot: the
 * queues change in the stores' own commits) and counts what disagrees as stray index keys;
 * fix rebuilds them. */
static int queues_check(suc_cache *c, suc_check *chk, suc_error *err) {
    MDB_txn *txn;
    int rc = suc_rtxn_begin(c, &txn, err);
    if (rc) return rc;
    uint64_t bad = 0;
    int chosen = suc_s3fifo_chosen(c, txn);
    int mrc = chosen ? count_mismatches(c, txn, &bad) : 0;
    suc_rtxn_end(c, txn);
    if (mrc) return suc_fail_mdb(err, "check(eviction queues)", mrc);
    /* An earlier release's records are in no queue: not damage (the use order evicts them). */
    if (!bad || chk->foreign_records) return SUC_OK;
    chk->report->stray_index_keys += bad;
    if (!chk->fix) return SUC_OK;
    chk->report->repaired += bad;
    return suc_write_txn(c, rebuild_apply, NULL, NULL, err);
}

const suc_secondary suc_eviction_queues_secondary = {
    .name = "eviction queues", .on_put = queues_put, .on_delete = queues_delete,
    .wants_touches = queues_want_touches, .on_touch = queues_touch, .counts_every_hit = queues_count_every_hit,
    .check = queues_check, .rebuild = queues_rebuild,
};
