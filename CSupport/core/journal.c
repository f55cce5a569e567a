/*
 * journal.c — the rewrite journal: while compaction copies the index into the next generation
 * without holding its write lock, every write transaction of every process notes which keys it
 * changed, so the copy can be brought up to date under the lock in a few milliseconds
 * (docs/Capacity.md, "Index generations").
 *
 * Every put and delete of the core goes through suc_txn_put, suc_txn_del and suc_txn_cursor_del. While the
 * journal is on, each also appends a row to the meta table:
 *
 *   "\0J"                 the switch: token, first row, row limit (u64 each, little endian);
 *                         present only while a rewrite is copying
 *   "\0J" ‖ row (u64 BE)  one changed key: table (u8: 0 main, 1 by_time, 2 by_use, 3 meta) ‖ key
 *                         (big endian, so that key order is row order)
 *
 * A row names a key, not a value: the rewrite reads the key's value as it is when it replays the
 * row (or finds it gone), so rows are idempotent and may be replayed more than once. The switch
 * is read once at the start of each write transaction (under the write lock, so every commit
 * after the one that set it journals). Rows stop at the limit: the transaction that reaches it
 * removes the switch, and the rewrite, finding its token gone, copies under the lock instead. So
 * a compactor that died mid-copy leaves at most `limit` rows, which the next rewrite does not
 * copy (nothing under "\0J" is copied).
 */
#include "txn.h"
#include "os.h"

#include <errno.h>
#include <string.h>

static const uint8_t journal_prefix[2] = {0x00, 'J'};

#define ROW_KEY_LEN 10
#define SWITCH_LEN 24

static int is_journal_key(const MDB_val *k) {
    return k->mv_size >= sizeof journal_prefix && !memcmp(k->mv_data, journal_prefix, sizeof journal_prefix);
}

int suc_journal_key(const MDB_val *k) { return is_journal_key(k); }

MDB_dbi suc_journal_table(const suc_cache *c, unsigned id) {
    const MDB_dbi tables[SUC_JOURNAL_TABLES] = {c->dbi_main, c->dbi_by_time, c->dbi_by_use, c->dbi_meta};
    return tables[id];
}

const char *suc_journal_table_name(unsigned id) {
    static const char *const names[SUC_JOURNAL_TABLES] = {"main", "by_time", "by_use", "meta"};
    return id < SUC_JOURNAL_TABLES ? names[id] : NULL;
}

static int table_id(const suc_cache *c, MDB_dbi dbi) {
    for (unsigned id = 0; id < SUC_JOURNAL_TABLES; id++)
        if (suc_journal_table(c, id) == dbi) return (int)id;
    return -1;
}

static int read_switch(suc_cache *c, MDB_txn *txn, uint64_t *token, uint64_t *first, uint64_t *limit) {
    MDB_val k = {sizeof journal_prefix, (void *)journal_prefix}, v;
    if (mdb_get(txn, c->dbi_meta, &k, &v) || v.mv_size != SWITCH_LEN) return 0;
    *token = suc_get_u64(v.mv_data);
    *first = suc_get_u64((const uint8_t *)v.mv_data + 8);
    *limit = suc_get_u64((const uint8_t *)v.mv_data + 16);
    return 1;
}

void suc_journal_begin(suc_cache *c, MDB_txn *txn) {
    uint64_t token, first, limit;
    c->journal_on = read_switch(c, txn, &token, &first, &limit);
    c->journal_next = c->journal_on ? first : 0;
    c->journal_limit = c->journal_on ? limit : 0;
    c->journal_located = 0;
}

/* The sequence number after the last row, or `floor` when no row at or past it exists. */
static int next_row(suc_cache *c, MDB_txn *txn, uint64_t floor, uint64_t *out) {
    MDB_cursor *cur;
    int mrc = mdb_cursor_open(txn, c->dbi_meta, &cur);
    if (mrc) return mrc;
    const uint8_t after[2] = {0x00, 'J' + 1};
    MDB_val k = {sizeof after, (void *)after}, v;
    mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    mrc = mrc == MDB_NOTFOUND ? mdb_cursor_get(cur, &k, &v, MDB_LAST) : mdb_cursor_get(cur, &k, &v, MDB_PREV);
    *out = floor;
    if (mrc == 0 && k.mv_size == ROW_KEY_LEN && is_journal_key(&k)) {
        uint64_t last = suc_get_be64((const uint8_t *)k.mv_data + 2);
        if (last + 1 > floor) *out = last + 1;
    }
    mdb_cursor_close(cur);
    return mrc == MDB_NOTFOUND ? 0 : mrc;
}

static int note(suc_cache *c, MDB_txn *txn, MDB_dbi dbi, const MDB_val *key) {
    if (!c->journal_on) return 0;
    int id = table_id(c, dbi);
    if (id < 0 || (dbi == c->dbi_meta && is_journal_key(key))) return 0;
    int mrc;
    if (!c->journal_located) {
        if ((mrc = next_row(c, txn, c->journal_next, &c->journal_next))) return mrc;
        c->journal_located = 1;
    }
    if (c->journal_next >= c->journal_limit) {
        /* Full: journaling stops for every process, and the rewrite copies under the lock. */
        MDB_val k = {sizeof journal_prefix, (void *)journal_prefix};
        mrc = mdb_del(txn, c->dbi_meta, &k, NULL);
        c->journal_on = 0;
        return mrc == MDB_NOTFOUND ? 0 : mrc;
    }
    uint8_t rk[ROW_KEY_LEN], row[1 + 512];
    if (key->mv_size > sizeof row - 1) return MDB_BAD_VALSIZE;
    memcpy(rk, journal_prefix, sizeof journal_prefix);
    suc_put_be64(rk + 2, c->journal_next++);
    row[0] = (uint8_t)id;
    memcpy(row + 1, key->mv_data, key->mv_size);
    MDB_val k = {sizeof rk, rk}, v = {1 + key->mv_size, row};
    return mdb_put(txn, c->dbi_meta, &k, &v, 0);
}

int suc_txn_put(suc_cache *c, MDB_txn *txn, MDB_dbi dbi, MDB_val *k, MDB_val *v, unsigned flags) {
    int mrc = mdb_put(txn, dbi, k, v, flags);
    return mrc ? mrc : note(c, txn, dbi, k);
}

int suc_txn_del(suc_cache *c, MDB_txn *txn, MDB_dbi dbi, MDB_val *k) {
    int mrc = mdb_del(txn, dbi, k, NULL);
    return mrc ? mrc : note(c, txn, dbi, k);
}

int suc_txn_cursor_del(suc_cache *c, MDB_txn *txn, MDB_dbi dbi, MDB_cursor *cur) {
    MDB_val k, v;
    uint8_t copy[512];
    int mrc = mdb_cursor_get(cur, &k, &v, MDB_GET_CURRENT);
    if (mrc) return mrc;
    if (k.mv_size > sizeof copy) return MDB_BAD_VALSIZE;
    memcpy(copy, k.mv_data, k.mv_size);
    if ((mrc = mdb_cursor_del(cur, 0))) return mrc;
    MDB_val noted = {k.mv_size, copy};
    return note(c, txn, dbi, &noted);
}

/* ---- the rewrite's side ------------------------------------------------------------------ */

typedef struct start_ctx {
    uint64_t rows, token, first;
} start_ctx;

static int start_apply(suc_cache *c, MDB_txn *txn, void *vctx, suc_error *err) {
    start_ctx *s = vctx;
    uint64_t *token = &s->token, *first = &s->first, rows = s->rows;
    uint64_t next;
    int mrc = next_row(c, txn, 1, &next);
    if (mrc) return suc_fail_mdb(err, "mdb_cursor_get(journal)", mrc);
    uint8_t value[SWITCH_LEN];
    if (suc_os_random(token, sizeof *token) < 0) return suc_fail_errno(err, "getrandom(journal)", errno);
    *token |= 1;
    *first = next;
    suc_put_u64(value, *token);
    suc_put_u64(value + 8, next);
    suc_put_u64(value + 16, next + rows);
    MDB_val k = {sizeof journal_prefix, (void *)journal_prefix}, v = {sizeof value, value};
    mrc = mdb_put(txn, c->dbi_meta, &k, &v, 0);
    return mrc ? suc_fail_mdb(err, "mdb_put(journal)", mrc) : SUC_OK;
}

int suc_journal_begin_rewrite(suc_cache *c, uint64_t rows, uint64_t *token, uint64_t *first, suc_error *err) {
    start_ctx s = {rows, 0, 0};
    int rc = suc_write_txn_ex(c, start_apply, NULL, &s, 0, err);
    *token = s.token, *first = s.first;
    return rc;
}

static int stop_apply(suc_cache *c, MDB_txn *txn, void *vctx, suc_error *err) {
    uint64_t token = *(uint64_t *)vctx, now, first, limit;
    if (!read_switch(c, txn, &now, &first, &limit) || now != token) return SUC_ABORT_TXN;
    MDB_val k = {sizeof journal_prefix, (void *)journal_prefix};
    int mrc = mdb_del(txn, c->dbi_meta, &k, NULL);
    return mrc ? suc_fail_mdb(err, "mdb_del(journal)", mrc) : SUC_OK;
}

void suc_journal_end_rewrite(suc_cache *c, uint64_t token) {
    if (token) (void)suc_write_txn_ex(c, stop_apply, NULL, &token, 1, NULL);
}

int suc_journal_walk(suc_cache *c, MDB_txn *txn, uint64_t token, uint64_t from, suc_journal_fn fn, void *ctx,
                     uint64_t *next, uint64_t *rows) {
    uint64_t now, first, limit;
    *rows = 0;
    *next = from;
    if (!read_switch(c, txn, &now, &first, &limit) || now != token) return MDB_NOTFOUND;
    MDB_cursor *cur;
    int mrc = mdb_cursor_open(txn, c->dbi_meta, &cur);
    if (mrc) return mrc;
    uint8_t start[ROW_KEY_LEN];
    memcpy(start, journal_prefix, sizeof journal_prefix);
    suc_put_be64(start + 2, from);
    MDB_val k = {sizeof start, start}, v;
    int rc = 0;
    for (mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); mrc == 0 && !rc; mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != ROW_KEY_LEN || !is_journal_key(&k)) break;
        uint64_t seq = suc_get_be64((const uint8_t *)k.mv_data + 2);
        const uint8_t *row = v.mv_data;
        if (v.mv_size < 1 || row[0] >= SUC_JOURNAL_TABLES) {
            rc = MDB_CORRUPTED; /* a row no writer makes: the copy cannot be trusted */
            break;
        }
        MDB_val key = {v.mv_size - 1, (void *)(row + 1)};
        rc = fn(ctx, row[0], &key);
        *next = seq + 1;
        ++*rows;
    }
    mdb_cursor_close(cur);
    if (rc) return rc;
    return mrc == MDB_NOTFOUND ? 0 : mrc;
}
