/*
 * maintenance.c — walking, compacting and verifying a live cache directory.
 *
 * Everything here runs while services keep using the directory: reads happen in short read
 * transactions of at most one batch, writes in write transactions of at most one batch, body
 * files are unlinked only after the commit that dropped their record, and a file is treated as
 * an orphan only when no record refers to it AND it is older than a grace period (a store
 * renames its body into place just before its commit).
 */
#include "operations.h"
#include "os.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* A batch of evictions ends after this long, or at its count; its size adapts so that, commit
 * included, it holds the write lock about SUC_PACE_TARGET_MS: the longest a store waits (pace.c). */
#define EVICT_BATCH_MS 4
#define DEFAULT_BATCH 500

/* ---- walking the main table in batches ---------------------------------------------- */

typedef struct raw_item {
    uint8_t ikey[SUC_IKEY_LEN];
    uint8_t *record;
    size_t len;
} raw_item;

/* Copies up to `max` records after `after` (or from the start) out of one read transaction. */
static int read_batch(suc_cache *c, const uint8_t *after, raw_item *items, size_t max, size_t *count,
                      suc_error *err) {
    *count = 0;
    MDB_txn *txn;
    int rc = suc_rtxn_begin(c, &txn, err);
    if (rc) return rc;
    MDB_cursor *cur;
    int mrc = mdb_cursor_open(txn, c->dbi_main, &cur);
    if (mrc) {
        suc_rtxn_end(c, txn);
        return suc_fail_mdb(err, "mdb_cursor_open", mrc);
    }
    MDB_val k = {SUC_IKEY_LEN, (void *)after}, v;
    mrc = after ? mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE) : mdb_cursor_get(cur, &k, &v, MDB_FIRST);
    if (mrc == 0 && after && k.mv_size == SUC_IKEY_LEN && memcmp(k.mv_data, after, SUC_IKEY_LEN) == 0)
        mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    for (; mrc == 0 && *count < max; mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != SUC_IKEY_LEN) continue;
        raw_item *it = &items[*count];
        it->record = malloc(v.mv_size ? v.mv_size : 1);
        if (!it->record) {
            rc = suc_fail(err, SUC_ENOMEM, "malloc(scan)", ENOMEM, 0, "out of memory");
            break;
        }
        memcpy(it->ikey, k.mv_data, SUC_IKEY_LEN);
        memcpy(it->record, v.mv_data, v.mv_size);
        it->len = v.mv_size;
        (*count)++;
    }
    if (!rc && mrc && mrc != MDB_NOTFOUND) rc = suc_fail_mdb(err, "mdb_cursor_get", mrc);
    mdb_cursor_close(cur);
    suc_rtxn_end(c, txn);
    return rc;
}

static void free_batch(raw_item *items, size_t n) {
    for (size_t i = 0; i < n; i++) free(items[i].record);
}

int suc_scan(suc_cache *c, uint32_t batch, suc_scan_fn fn, void *ctx, uint64_t *out_unreadable, suc_error *err) {
    int rc = suc_cache_check_fork(c, err);
    if (rc) return rc;
    if (!fn) return suc_fail(err, SUC_EINVAL, "suc_scan", 0, 0, "fn is required");
    if (!batch) batch = DEFAULT_BATCH;
    raw_item *items = calloc(batch, sizeof *items);
    if (!items) return suc_fail(err, SUC_ENOMEM, "calloc(scan)", ENOMEM, 0, "out of memory");
    uint8_t last[SUC_IKEY_LEN];
    int have_last = 0, stop = 0;
    uint64_t unreadable = 0;
    while (!rc && !stop) {
        size_t n = 0;
        rc = read_batch(c, have_last ? last : NULL, items, batch, &n, err);
        for (size_t i = 0; !rc && !stop && i < n; i++) {
            suc_record r;
            if (suc_record_decode(items[i].record, items[i].len, &r)) {
                unreadable++;
                continue;
            }
            suc_entry_view vw;
            suc_entry_view_fill(&r, items[i].len, &vw);
            stop = fn(ctx, &vw) != 0;
        }
        if (n) {
            memcpy(last, items[n - 1].ikey, SUC_IKEY_LEN);
            have_last = 1;
        }
        free_batch(items, n);
        if (n < batch) break;
    }
    free(items);
    if (out_unreadable) *out_unreadable = unreadable;
    return rc;
}

/* ---- body files: is this one referenced? --------------------------------------------- */

static int hexval(char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    return -1;
}

/* Parses "<32 hex>" into an id; 0 when the name is not one of ours. */
static int parse_id(const char *name, uint8_t id[SUC_BODY_ID_LEN]) {
    if (strlen(name) != 2 * SUC_BODY_ID_LEN) return 0;
    for (int i = 0; i < SUC_BODY_ID_LEN; i++) {
        int hi = hexval(name[2 * i]), lo = hexval(name[2 * i + 1]);
        if (hi < 0 || lo < 0) return 0;
        id[i] = (uint8_t)(hi << 4 | lo);
    }
    return 1;
}

typedef enum file_state { FILE_REFERENCED, FILE_ORPHAN_RESTORABLE, FILE_ORPHAN } file_state;

/* Reads the record copy at the end of a body file and asks the index whether that record still
 * points at this very file. `out_record` (may be NULL) receives the trailer when restorable. */
static file_state classify_body(suc_cache *c, int dirfd, const char *name, const uint8_t id[SUC_BODY_ID_LEN],
                                uint8_t **out_record, size_t *out_len) {
    file_state state = FILE_ORPHAN;
    uint8_t header[SUC_BODY_HEADER_LEN], *meta = NULL, *indexed = NULL;
    int fd = suc_os_openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
    struct stat st;
    if (fd < 0 || suc_os_fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) goto out;
    suc_body_header h;
    ssize_t got = suc_os_pread_full(fd, header, sizeof header, 0);
    if (got < 0 || suc_body_header_decode(header, (size_t)got, id, &h) != SUC_OK) goto out;
    uint64_t stored = h.stored_size;
    uint32_t meta_len = h.record_len;
    if (meta_len > (64u << 20) || (uint64_t)st.st_size != SUC_BODY_HEADER_LEN + stored + meta_len) goto out;
    meta = malloc(meta_len ? meta_len : 1);
    if (!meta || suc_os_pread_full(fd, meta, meta_len, (off_t)(SUC_BODY_HEADER_LEN + stored)) != (ssize_t)meta_len)
        goto out;
    suc_record r;
    if (suc_record_decode(meta, meta_len, &r) || memcmp(r.body_id, id, SUC_BODY_ID_LEN) != 0) goto out;
    uint8_t ikey[SUC_IKEY_LEN];
    suc_ikey_make(r.key, r.key_len, r.variant, r.variant_len, ikey);
    size_t ilen = 0;
    int rc = suc_index_read_record(c, ikey, &indexed, &ilen, NULL, NULL);
    if (rc == SUC_OK) {
        suc_record ir;
        if (suc_record_decode(indexed, ilen, &ir) == SUC_OK && !(ir.flags & SUC_REC_INLINE) &&
            memcmp(ir.body_id, id, SUC_BODY_ID_LEN) == 0)
            state = FILE_REFERENCED;
    }
    /* Not referenced, whether or not its key has a record: a rebuild decides by the record
     * copy's times (restore_apply), so another version of the key found first never wins over
     * a newer one found later. */
    if (state != FILE_REFERENCED && (rc == SUC_OK || rc == SUC_ENOTFOUND)) {
        state = FILE_ORPHAN_RESTORABLE;
        if (out_record) {
            *out_record = meta;
            *out_len = meta_len;
            meta = NULL;
        }
    }
out:
    suc_os_close(fd);
    free(meta);
    free(indexed);
    return state;
}

typedef struct sweep_result {
    uint64_t orphans, orphan_bytes, temps, temp_bytes, restored;
} sweep_result;

typedef struct restore_ctx {
    uint8_t *record;
    size_t len;
} restore_ctx;

static int restore_apply(suc_cache *c, MDB_txn *txn, void *vctx, suc_error *err) {
    restore_ctx *ctx = vctx;
    suc_op op = {0};
    op.kind = SUC_OP_PUT;
    op.record = ctx->record;
    op.record_len = ctx->len;
    suc_record r, found;
    if (suc_record_decode(ctx->record, ctx->len, &r)) return SUC_ECORRUPT;
    /* Only what was written before the index was lost: a body the index never knew, written
     * while it was intact, is dead (its entry replaced or removed, the unlink lost) and must not
     * come back. The record copy's last-use time is its write time. */
    uint64_t lost_at = 0;
    if (suc_meta_get(c, txn, SUC_META_REBUILD_BEFORE, &lost_at) || r.last_used_ms >= (int64_t)lost_at)
        return SUC_ABORT_TXN;
    suc_ikey_make(r.key, r.key_len, r.variant, r.variant_len, op.ikey);
    /* Stored meanwhile, or restored from another body of the same key: the newer response wins
     * (an older version whose unlink was lost must not replace it, whatever the walk's order). */
    int there = suc_index_record_get(c, txn, op.ikey, &found, NULL);
    if (there == SUC_ECORRUPT || (there == 0 && found.stored_at_ms >= r.stored_at_ms)) return SUC_ABORT_TXN;
    suc_record_patch_last_used(ctx->record, suc_os_now_ms());
    suc_counters d = {0};
    uint64_t seq = 0;
    int rc = suc_meta_next_version(c, txn, &seq, err);
    if (rc) return rc;
    seq--;
    rc = suc_index_put(c, txn, &op, &d, &seq, err);
    if (!rc) rc = suc_meta_put(c, txn, "seq", seq) ? SUC_EINDEX : SUC_OK;
    if (!rc) rc = suc_meta_add_counters(c, txn, &d, err);
    suc_op_release(&op);
    return rc;
}

/* Walks bodies/xx/ and tmp/. Orphans older than `grace_ms` are removed when `remove`; with
 * `restore`, an orphan whose record is missing from the index gets it back instead. */
static int sweep_files(suc_cache *c, uint64_t grace_ms, int remove, int restore, sweep_result *res,
                       suc_error *err) {
    int64_t cutoff = suc_os_now_ms() - (int64_t)grace_ms;
    for (int i = 0; i < 257; i++) {
        char sub[4];
        int is_tmp = i == 256;
        if (!is_tmp) snprintf(sub, sizeof sub, "%02x", i);
        /* A fresh descriptor each time: a dup() would share the read position of tmpfd, and a
         * second sweep in this process would then list nothing. */
        int dirfd = is_tmp ? suc_os_openat(c->rootfd, "tmp", O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0)
                           : suc_os_openat(c->bodiesfd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
        if (dirfd < 0) continue;
        int listfd = dup(dirfd);
        DIR *d = listfd >= 0 ? fdopendir(listfd) : NULL;
        if (!d) {
            if (listfd >= 0) close(listfd);
            suc_os_close(dirfd);
            return suc_fail_errno(err, "fdopendir", errno);
        }
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
            struct stat st;
            if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) continue;
            int64_t mtime_ms = (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
            int old = mtime_ms <= cutoff;
            if (is_tmp) {
                res->temps++;
                res->temp_bytes += (uint64_t)st.st_blocks * 512u;
                if (remove && old) (void)suc_os_unlinkat(dirfd, de->d_name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0);
                continue;
            }
            uint8_t id[SUC_BODY_ID_LEN];
            file_state state = FILE_ORPHAN;
            uint8_t *trailer = NULL;
            size_t trailer_len = 0;
            if (parse_id(de->d_name, id) && S_ISREG(st.st_mode))
                state = classify_body(c, dirfd, de->d_name, id, restore ? &trailer : NULL, &trailer_len);
            if (state == FILE_REFERENCED) continue;
            if (restore && trailer) {
                restore_ctx rctx = {trailer, trailer_len};
                int rrc = suc_write_txn(c, restore_apply, NULL, &rctx, NULL);
                free(trailer);
                if (rrc == SUC_OK) {
                    res->restored++;
                    continue;
                }
                /* Not restorable (dead, or an older version): an orphan like any other. */
            } else {
                free(trailer);
            }
            res->orphans++;
            res->orphan_bytes += (uint64_t)st.st_blocks * 512u;
            if (remove && old) (void)suc_os_unlinkat(dirfd, de->d_name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0);
        }
        closedir(d);
        suc_os_close(dirfd);
    }
    return SUC_OK;
}

/* ---- compaction ---------------------------------------------------------------------- */

static int take_lock(suc_cache *c, int wait, int *out_fd, suc_error *err) {
    int fd = suc_os_openat(c->rootfd, SUC_COMPACT_LOCK_FILE, O_RDWR | O_CREAT | O_NOFOLLOW, 0660);
    if (fd < 0) return suc_fail_errno(err, "openat(compact.lock)", errno);
    struct stat st;
    if (fstat(fd, &st) == 0 && st.st_uid == geteuid()) (void)suc_os_fchmod(fd, 0660);
    suc_adopt_owner(c->rootfd, fd);
    int rc;
    do {
        rc = flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB));
    } while (rc < 0 && errno == EINTR);
    if (rc < 0) {
        int e = errno;
        suc_os_close(fd);
        if (e == EWOULDBLOCK)
            return suc_fail(err, SUC_EBUSY, "flock(compact.lock)", e, 0, "another compaction is running");
        return suc_fail_errno(err, "flock(compact.lock)", e);
    }
    *out_fd = fd;
    return SUC_OK;
}

/* UINT64_MAX (or anything past INT64_MAX) means "no size target". */
static int has_target(uint64_t target) { return target <= (uint64_t)INT64_MAX; }

/* The lock file (64 bytes per reader slot) and the index's meta pages. */
#define FIXED_INDEX_BYTES (128 * 1024)

/* Index bytes per entry beyond its record: the main key, two time-index keys, node headers. */
#define ENTRY_INDEX_OVERHEAD 200

/* What the entries will take on disk once the index is rewritten: body files, plus the index
 * the records, keys and page slack make, scaled by what a compact copy of the current index
 * takes per byte of that (model_scale). Eviction works on this figure. */
typedef struct footprint_model {
    double scale;
} footprint_model;

static int64_t footprint(const footprint_model *m, int64_t file_bytes, int64_t record_bytes, int64_t entries) {
    return file_bytes + (int64_t)(m->scale * (double)(record_bytes + ENTRY_INDEX_OVERHEAD * entries));
}

typedef struct evict_ctx {
    const suc_compact_params *p;
    footprint_model model;
    uint64_t target;      /* on the footprint; UINT64_MAX: none */
    uint64_t entry_target; /* on record + body file bytes (suc_compact_params.target_bytes) */
    suc_op op;
    uint64_t evicted, expired, strays, freed;
    int done;
    uint32_t batch; /* entries per transaction; 0: the parameters' */
    int carrying;     /* whether a batch carries other processes' queued stores */
    suc_carry carried; /* the stores this batch carries */
} evict_ctx;

static void evict_reset(void *vctx) {
    evict_ctx *ctx = vctx;
    ctx->op.dead_count = 0;
    ctx->evicted = ctx->expired = ctx->strays = ctx->freed = 0;
    ctx->done = 0;
    suc_carry_reset(&ctx->carried);
}

/* The footprint, and in *entry_bytes the entries' bytes as the capacity, the quotas and
 * suc_cache_disk_usage count them: records and body files (an inline body is in its record). */
static int64_t current_footprint(suc_cache *c, MDB_txn *txn, const footprint_model *m, int64_t *entry_bytes) {
    uint64_t files = 0, records = 0, entries = 0;
    suc_meta_get(c, txn, "file_bytes", &files);
    suc_meta_get(c, txn, "record_bytes", &records);
    suc_meta_get(c, txn, "entries", &entries);
    *entry_bytes = (int64_t)(files + records);
    return footprint(m, (int64_t)files, (int64_t)records, (int64_t)entries);
}

static int over(int64_t value, uint64_t target) { return has_target(target) && value > (int64_t)target; }

/* One batch: while over the target, or while the use order's oldest entry is older than the
 * cutoff. Entries past the cutoff go oldest first; over the target, the directory's policy picks
 * (suc_evict_next: S3-FIFO's queues, or the use order). */
static int evict_apply(suc_cache *c, MDB_txn *txn, void *vctx, suc_error *err) {
    evict_ctx *ctx = vctx;
    const suc_compact_params *p = ctx->p;
    uint32_t batch = ctx->batch ? ctx->batch : p->batch ? p->batch : DEFAULT_BATCH;
    int64_t entry_bytes = 0;
    int64_t total = current_footprint(c, txn, &ctx->model, &entry_bytes);
    int s3fifo = suc_s3fifo_chosen(c, txn);
    uint64_t capacity = has_target(ctx->entry_target) ? ctx->entry_target : ctx->target;
    suc_counters d = {0};
    ctx->done = 1;
    int64_t began = suc_os_monotonic_ms();
    for (uint32_t n = 0; n < batch;) {
        /* Every store of every process waits while this transaction holds the write lock. */
        if ((n > 0 || ctx->strays > 0) && suc_os_monotonic_ms() - began >= EVICT_BATCH_MS) {
            ctx->done = 0;
            break;
        }
        uint8_t t[SUC_TKEY_LEN];
        int mrc = suc_use_order_oldest(c, txn, t);
        if (mrc == MDB_NOTFOUND) break;
        if (mrc) return suc_fail_mdb(err, "mdb_cursor_get(by_use)", mrc);
        if (!suc_use_order_key_live(c, txn, t)) { /* left behind by a move, or its record is gone */
            int drc = suc_time_order_drop_stray(c, txn, SUC_ORDER_USE, t, err);
            if (drc) return drc;
            ctx->strays++;
            continue;
        }
        int expired = p->unused_before_ms && suc_tkey_time(t) < p->unused_before_ms;
        if (!expired && !over(total, ctx->target) && !over(entry_bytes, ctx->entry_target)) break;
        if (!expired && s3fifo) {
            int rc = suc_evict_next(c, txn, 1, capacity, t + 8, err);
            if (rc == SUC_ENOTFOUND) break;
            if (rc) return rc;
        }
        int64_t before = footprint(&ctx->model, d.file_bytes, d.record_bytes, d.entries);
        int64_t before_bytes = d.file_bytes + d.record_bytes;
        int rc = suc_index_delete(c, txn, t + 8, &ctx->op, &d, err);
        if (rc == MDB_NOTFOUND) {
            if ((rc = suc_time_order_drop_stray(c, txn, SUC_ORDER_USE, t, err))) return rc;
            ctx->strays++;
            continue;
        }
        if (rc) return rc;
        total -= before - footprint(&ctx->model, d.file_bytes, d.record_bytes, d.entries);
        entry_bytes -= before_bytes - (d.file_bytes + d.record_bytes);
        ctx->freed += (uint64_t)(before_bytes - (d.file_bytes + d.record_bytes));
        ctx->evicted++;
        ctx->expired += expired;
        n++;
        if (n == batch) ctx->done = 0;
    }
    d.evictions = (int64_t)ctx->evicted;
    return suc_meta_add_counters(c, txn, &d, err);
}

/* A batch, and the stores other processes queued while it ran: they waited for the write lock
 * behind it, and its commit (and fdatasync) serves them, so they do not wait for a second. */
static int evict_and_carry_apply(suc_cache *c, MDB_txn *txn, void *vctx, suc_error *err) {
    evict_ctx *ctx = vctx;
    if (ctx->carrying) suc_handoff_commit_begins(c, txn);
    int rc = evict_apply(c, txn, ctx, err);
    return rc || !ctx->carrying ? rc : suc_carry_queued_stores(c, txn, &ctx->carried, err);
}

/* Walks the use order oldest first in `txn`, handing each entry's time key and record to fn
 * (NULL for a stray: a key whose record is gone or does not decode) until fn returns nonzero. */
typedef int (*use_order_fn)(void *ctx, const uint8_t *tkey, const suc_record *r, size_t record_len);
static void walk_use_order(suc_cache *c, MDB_txn *txn, use_order_fn fn, void *ctx) {
    MDB_cursor *cur;
    if (mdb_cursor_open(txn, c->dbi_by_use, &cur)) return;
    MDB_val k, v;
    for (int mrc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); mrc == 0; mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != SUC_TKEY_LEN) continue;
        MDB_val mv;
        suc_record r;
        int found = suc_use_order_key_live(c, txn, k.mv_data) &&
                    suc_index_record_get(c, txn, (const uint8_t *)k.mv_data + 8, &r, &mv) == 0;
        if (fn(ctx, k.mv_data, found ? &r : NULL, found ? mv.mv_size : 0)) break;
    }
    mdb_cursor_close(cur);
}

typedef struct dry_run_ctx {
    const evict_ctx *e;
    suc_compact_report *out;
    int64_t total, entry_bytes;
} dry_run_ctx;

static int dry_run_count(void *vctx, const uint8_t *tkey, const suc_record *r, size_t len) {
    dry_run_ctx *d = vctx;
    const suc_compact_params *p = d->e->p;
    int expired = p->unused_before_ms && suc_tkey_time(tkey) < p->unused_before_ms;
    if (!expired && !over(d->total, d->e->target) && !over(d->entry_bytes, d->e->entry_target)) return 1;
    if (!r) {
        d->out->stray_index_keys++;
        return 0;
    }
    d->total -= footprint(&d->e->model, (int64_t)suc_record_file_bytes(r, len), (int64_t)len, 1);
    d->entry_bytes -= (int64_t)(len + suc_record_file_bytes(r, len));
    d->out->evicted_entries++;
    d->out->evicted_bytes += (uint64_t)(len + suc_record_file_bytes(r, len));
    d->out->expired_entries += expired;
    return 0;
}

/* Dry run: the same walk over a read transaction, counting only. */
static int evict_dry_run(suc_cache *c, const evict_ctx *e, suc_compact_report *out, suc_error *err) {
    MDB_txn *txn;
    int rc = suc_rtxn_begin(c, &txn, err);
    if (rc) return rc;
    dry_run_ctx d = {e, out, 0, 0};
    d.total = current_footprint(c, txn, &e->model, &d.entry_bytes);
    walk_use_order(c, txn, dry_run_count, &d);
    suc_rtxn_end(c, txn);
    return SUC_OK;
}

/* Pages in use by the tables (what a compact copy holds) and the counters the model needs. */
typedef struct index_shape {
    uint64_t used_bytes;   /* pages of the index's tables + the two meta pages */
    uint64_t record_bytes, entries;
} index_shape;

static int read_shape(suc_cache *c, index_shape *out, suc_error *err) {
    MDB_txn *txn;
    int rc = suc_rtxn_begin(c, &txn, err);
    if (rc) return rc;
    memset(out, 0, sizeof *out);
    MDB_dbi dbis[SUC_INDEX_TABLES_MAX];
    const char *names[SUC_INDEX_TABLES_MAX];
    size_t count = suc_index_tables(c, names, dbis);
    MDB_stat st = {0};
    for (size_t i = 0; i < count; i++) {
        if (mdb_stat(txn, dbis[i], &st)) continue;
        out->used_bytes += (st.ms_branch_pages + st.ms_leaf_pages + st.ms_overflow_pages) * (uint64_t)st.ms_psize;
    }
    out->used_bytes += 4u * st.ms_psize; /* meta pages, the free list's root */
    suc_meta_get(c, txn, "record_bytes", &out->record_bytes);
    suc_meta_get(c, txn, "entries", &out->entries);
    suc_rtxn_end(c, txn);
    return SUC_OK;
}

typedef struct prefetch_ctx {
    suc_cache *c;
    MDB_txn *txn;
    uint32_t left;
} prefetch_ctx;

/* The record was read by the walk; its stored-time key (format 1) is read here. */
static int prefetch_one(void *vctx, const uint8_t *tkey, const suc_record *r, size_t len) {
    prefetch_ctx *p = vctx;
    (void)len;
    if (r && suc_time_order_kept(p->c, SUC_ORDER_STORED)) {
        uint8_t key[SUC_TKEY_LEN];
        suc_tkey_make(r->stored_at_ms, tkey + 8, key);
        MDB_val k = {SUC_TKEY_LEN, key}, v;
        (void)mdb_get(p->txn, suc_time_order_dbi(p->c, SUC_ORDER_STORED), &k, &v);
    }
    return --p->left == 0;
}

/* Reads the pages the next batch will change, in a read snapshot, before the batch takes the
 * write lock. The entries eviction takes are the least recently used (or, under S3-FIFO, the
 * oldest of its queues), whose pages are the likeliest to have left the page cache: read under
 * the lock, every store of every process would wait for the disk's reads as well as for the
 * batch's commit. The use order's oldest `count` entries, their records and stored-time keys;
 * under S3-FIFO the queues' oldest `count` each (suc_s3fifo_prefetch). */
static void prefetch_victims(suc_cache *c, uint32_t count) {
    MDB_txn *txn;
    if (!count || suc_rtxn_begin(c, &txn, NULL)) return;
    prefetch_ctx p = {c, txn, count};
    if (suc_s3fifo_chosen(c, txn)) suc_s3fifo_prefetch(c, txn, count);
    else walk_use_order(c, txn, prefetch_one, &p);
    suc_rtxn_end(c, txn);
}

/* Evicts in batches until the footprint is under ctx->target (or only expired entries). */
static int evict_batches(suc_cache *c, evict_ctx *proto, suc_compact_report *out, suc_error *err) {
    /* The first batch small: its pages are not yet in memory, and nothing is known yet of how
     * long a commit takes here. It grows while batches stay well under the target. */
    uint32_t most = proto->p->batch ? proto->p->batch : DEFAULT_BATCH;
    if (!proto->batch) proto->batch = suc_pace_first(most);
    proto->carrying = suc_handoff_open(c);
    for (;;) {
        evict_ctx ctx = *proto;
        memset(&ctx.op, 0, sizeof ctx.op);
        memset(&ctx.carried, 0, sizeof ctx.carried);
        prefetch_victims(c, ctx.batch ? ctx.batch : most);
        int rc = suc_write_txn_ex(c, evict_and_carry_apply, evict_reset, &ctx, 1, err);
        if (ctx.carrying) suc_handoff_commit_ends(c);
        if (suc_last_write_lock_ms() > out->longest_lock_ms) out->longest_lock_ms = suc_last_write_lock_ms();
        size_t carried = ctx.carried.count; /* claimed, committed or not */
        out->carried_stores += rc == SUC_OK ? carried : 0;
        suc_carry_finish(c, &ctx.carried, rc == SUC_OK);
        if (rc == SUC_OK) {
            suc_body_unlink_ids(c, ctx.op.dead_ids, ctx.op.dead_count); /* after the commit */
            out->evicted_entries += ctx.evicted;
            out->evicted_bytes += ctx.freed;
            out->expired_entries += ctx.expired;
            out->stray_index_keys += ctx.strays;
            out->transactions++;
            if (ctx.p->progress) ctx.p->progress(ctx.p->progress_ctx, out->evicted_entries, out->evicted_bytes);
        }
        suc_op_release(&ctx.op);
        /* A store waiting for the write lock takes it now. */
        if (rc == SUC_OK && !ctx.done) suc_pace_yield();
        /* On a full file system even a removal needs room: LMDB writes a copy of every page it
         * changes before the old ones are free. The store path's relief (space.c) unlinks
         * bodies first; when the batch still does not fit, smaller batches change fewer pages. */
        uint32_t batch = ctx.batch ? ctx.batch : ctx.p->batch ? ctx.p->batch : DEFAULT_BATCH;
        if (rc == SUC_EDISKFULL && batch > 8) {
            proto->batch = batch / 8;
            proto->carrying = 0; /* removals alone: a carried store would need room too */
            continue;
        }
        /* Evictions never fail for another process's store: a batch that failed while carrying
         * is tried again without (the stores' owners commit them themselves). */
        if (rc && proto->carrying && carried) {
            proto->carrying = 0;
            continue;
        }
        /* Fewer entries when the batch held the lock past the target, more again (up to the
         * configured batch) when well under it. */
        if (rc == SUC_OK) proto->batch = suc_pace_resize(batch, most);
        if (rc || ctx.done) return rc;
    }
}

/* Measured (every file stat'ed) when there is a disk target to hold; otherwise the cheap
 * figure, which has what the rewrite decision needs (the index file's size). */
static int usage(suc_cache *c, int measured, suc_disk_usage *u, suc_error *err) {
    return suc_cache_disk_usage(c, measured ? SUC_USAGE_MEASURE : 0, u, err);
}

static int rewrite(suc_cache *c, suc_compact_report *out, suc_error *err) {
    int64_t t0 = suc_os_monotonic_ms();
    uint64_t locked = 0;
    int deferral = 0, pid = 0, rc;
    /* A generation published during the copy (a recovery's, say) is gone by the next try. */
    for (int attempt = 0; attempt < 2; attempt++) {
        rc = suc_index_rewrite(c, NULL, &locked, &deferral, &pid, err);
        if (locked > out->longest_lock_ms) out->longest_lock_ms = locked;
        if (rc != SUC_EBUSY || deferral != SUC_REWRITE_DEFERRED_GENERATION_CHANGED) break;
    }
    if (rc == SUC_EBUSY) { /* not rewritten now: evict only, and say why */
        out->index_rewrite_deferred = 1;
        out->index_rewrite_deferred_reason = deferral;
        out->index_rewrite_deferred_pid = pid;
        snprintf(out->index_rewrite_deferred_message, sizeof out->index_rewrite_deferred_message, "%s",
                 err ? err->message : "");
    }
    int64_t ms = suc_os_monotonic_ms() - t0;
    if (rc == SUC_OK) {
        out->index_rewrites++;
        if ((uint64_t)ms > out->longest_rewrite_ms) out->longest_rewrite_ms = (uint64_t)ms;
    }
    return rc;
}

/* The rounds: plan from the model, evict, remove leftovers, rewrite, measure; again while the
 * measurement is over the target (the model is an estimate; the measurement is `du`). */
static int compact_rounds(suc_cache *c, const suc_compact_params *p, suc_compact_report *out, suc_error *err) {
    uint64_t disk_target = p->disk_target_bytes ? p->disk_target_bytes : UINT64_MAX;
    suc_disk_usage u;
    int rc = usage(c, has_target(disk_target), &u, err);
    if (rc) return rc;
    out->disk_bytes_before = u.total_bytes;
    out->index_bytes_before = u.index_bytes;
    /* Each partition to its quota first: what it evicts is not taken from the others. */
    if ((rc = suc_partitions_enforce_quotas(c, p->batch ? p->batch : DEFAULT_BATCH, &out->quota_evicted_entries,
                                            &out->transactions, err)))
        return rc;
    out->evicted_entries += out->quota_evicted_entries;
    int64_t correction = 0;
    for (int round = 0; round < 4; round++) {
        index_shape shape;
        if ((rc = read_shape(c, &shape, err))) return rc;
        evict_ctx e = {0};
        e.p = p;
        e.entry_target = round == 0 ? p->target_bytes : UINT64_MAX;
        uint64_t model_base = shape.record_bytes + ENTRY_INDEX_OVERHEAD * shape.entries;
        e.model.scale = model_base ? (double)shape.used_bytes / (double)model_base : 1.0;
        e.target = UINT64_MAX;
        if (has_target(disk_target) && u.total_bytes > disk_target) {
            /* What stays whatever we evict: directories, control files, the lock file and meta
             * pages; leftovers too young to remove show up in the next round's correction. */
            int64_t fixed = (int64_t)u.overhead_bytes + FIXED_INDEX_BYTES + correction;
            int64_t t = (int64_t)disk_target - fixed;
            e.target = t > 0 ? (uint64_t)t : 0;
        }
        if (round == 0 || has_target(disk_target)) {
            if ((rc = evict_batches(c, &e, out, err))) return rc;
        }
        sweep_result s = {0};
        if ((rc = sweep_files(c, p->grace_ms, 1, 0, &s, err))) return rc;
        if (round == 0) {
            out->orphan_files = s.orphans;
            out->orphan_bytes = s.orphan_bytes;
            out->temp_files = s.temps;
        }
        suc_remove_stale_generations(c);
        if ((rc = usage(c, has_target(disk_target), &u, err))) return rc;
        if ((rc = read_shape(c, &shape, err))) return rc;
        /* Rewrite when the index stands between us and the target, or a quarter of it is free. */
        uint64_t reclaimable = u.index_bytes > shape.used_bytes ? u.index_bytes - shape.used_bytes : 0;
        int over_disk = has_target(disk_target) && u.total_bytes > disk_target;
        if ((over_disk && reclaimable > FIXED_INDEX_BYTES) || reclaimable > u.index_bytes / 4 + (1u << 20)) {
            suc_error rerr = {0};
            rc = rewrite(c, out, &rerr);
            if (rc == SUC_EBUSY) rc = SUC_OK; /* deferred: the report says why */
            /* A full file system has no room for the copy: what eviction and the unlinks freed
             * stands, and a later run rewrites (a full disk is a capacity event). */
            int64_t room = suc_fs_free_bytes(c);
            if (rc == SUC_EDISKFULL || (rc == SUC_EIO && room >= 0 && (uint64_t)room < shape.used_bytes)) {
                out->index_rewrite_skipped_for_space = 1;
                rc = SUC_OK;
                break;
            }
            if (rc) {
                if (err) *err = rerr;
                return rc;
            }
            if ((rc = usage(c, has_target(disk_target), &u, err))) return rc;
            if (out->index_rewrite_deferred) break;
        }
        if (!has_target(disk_target) || u.total_bytes <= disk_target) break;
        correction += (int64_t)(u.total_bytes - disk_target);
    }
    out->disk_bytes_after = u.total_bytes;
    out->index_bytes_after = u.index_bytes;
    return SUC_OK;
}

int suc_compact(suc_cache *c, const suc_compact_params *p, suc_compact_report *out, suc_error *err) {
    int rc = suc_cache_check_fork(c, err);
    if (rc) return rc;
    if (!p || !out) return suc_fail(err, SUC_EINVAL, "suc_compact", 0, 0, "params and report are required");
    memset(out, 0, sizeof *out);
    int lockfd = -1;
    if ((rc = take_lock(c, p->wait_for_lock, &lockfd, err))) return rc;
    if (p->dry_run) {
        uint64_t disk_target = p->disk_target_bytes ? p->disk_target_bytes : UINT64_MAX;
        index_shape shape;
        suc_disk_usage u;
        if (!(rc = read_shape(c, &shape, err)) && !(rc = usage(c, has_target(disk_target), &u, err))) {
            evict_ctx e = {0};
            e.p = p;
            e.entry_target = p->target_bytes;
            uint64_t model_base = shape.record_bytes + ENTRY_INDEX_OVERHEAD * shape.entries;
            e.model.scale = model_base ? (double)shape.used_bytes / (double)model_base : 1.0;
            int64_t t = (int64_t)disk_target - (int64_t)u.overhead_bytes - FIXED_INDEX_BYTES;
            e.target = has_target(disk_target) ? (t > 0 ? (uint64_t)t : 0) : UINT64_MAX;
            out->disk_bytes_before = out->disk_bytes_after = u.total_bytes;
            out->index_bytes_before = out->index_bytes_after = u.index_bytes;
            rc = evict_dry_run(c, &e, out, err);
        }
        if (!rc) {
            sweep_result s = {0};
            rc = sweep_files(c, p->grace_ms, 0, 0, &s, err);
            out->orphan_files = s.orphans;
            out->orphan_bytes = s.orphan_bytes;
            out->temp_files = s.temps;
        }
    } else {
        rc = compact_rounds(c, p, out, err);
    }
    flock(lockfd, LOCK_UN);
    suc_os_close(lockfd);
    return rc;
}

int suc_rewrite_index(suc_cache *c, int wait_for_lock, uint64_t *out_entries, suc_error *err) {
    int rc = suc_cache_check_fork(c, err);
    if (rc) return rc;
    int lockfd = -1;
    if ((rc = take_lock(c, wait_for_lock, &lockfd, err))) return rc;
    rc = suc_index_rewrite(c, out_entries, NULL, NULL, NULL, err);
    if (!rc) suc_remove_stale_generations(c);
    flock(lockfd, LOCK_UN);
    suc_os_close(lockfd);
    return rc;
}

/* ---- verification -------------------------------------------------------------------- */

/* Checks one file-backed body: size and header always, the whole stream with `full`. */
static int check_body(suc_cache *c, const suc_record *r, size_t rec_len, int full) {
    if (full) {
        uint8_t *body = NULL;
        int rc = suc_body_read(c, r, rec_len, &body, NULL);
        free(body);
        return rc;
    }
    char path[SUC_BODY_PATH_LEN];
    suc_body_path(r->body_id, path);
    int dirfd = suc_body_open_fanout(c, r->body_id, 0);
    if (dirfd < 0) return errno == ENOENT ? SUC_ENOTFOUND : SUC_ECORRUPT;
    int fd = suc_os_openat(dirfd, SUC_BODY_NAME(path), O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
    int open_errno = errno;
    suc_os_close(dirfd);
    if (fd < 0) return open_errno == ENOENT ? SUC_ENOTFOUND : SUC_ECORRUPT;
    struct stat st;
    uint8_t h[SUC_BODY_HEADER_LEN];
    rec_len = suc_record_copy_len(r, rec_len); /* the body file's own record copy */
    /* The header as a lookup checks it (suc_body_header_check), the payload only with `full`. */
    int rc = suc_os_fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
                     (uint64_t)st.st_size == SUC_BODY_HEADER_LEN + r->stored_size + rec_len &&
                     suc_os_pread_full(fd, h, sizeof h, 0) == (ssize_t)sizeof h
                 ? suc_body_header_check(h, sizeof h, r, (uint32_t)rec_len, NULL)
                 : SUC_ECORRUPT;
    suc_os_close(fd);
    return rc;
}

typedef struct recount_ctx {
    suc_counters sums;
} recount_ctx;

static int recount_apply(suc_cache *c, MDB_txn *txn, void *vctx, suc_error *err) {
    recount_ctx *ctx = vctx;
    /* Recompute from the records inside this transaction, so the result is exact at commit. */
    suc_counters s = {0};
    MDB_cursor *cur;
    int mrc = mdb_cursor_open(txn, c->dbi_main, &cur);
    if (mrc) return suc_fail_mdb(err, "mdb_cursor_open", mrc);
    MDB_val k, v;
    for (mrc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); mrc == 0; mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        suc_record r;
        s.entries++;
        s.record_bytes += (int64_t)v.mv_size;
        if (suc_record_decode(v.mv_data, v.mv_size, &r)) continue;
        s.body_bytes += (int64_t)r.body_size;
        s.stored_bytes += (int64_t)suc_record_stored_bytes(&r, v.mv_size);
        s.file_bytes += (int64_t)suc_record_file_bytes(&r, v.mv_size);
    }
    mdb_cursor_close(cur);
    ctx->sums = s;
    if (suc_meta_put(c, txn, "entries", (uint64_t)s.entries) || suc_meta_put(c, txn, "body_bytes", (uint64_t)s.body_bytes) ||
        suc_meta_put(c, txn, "stored_bytes", (uint64_t)s.stored_bytes) ||
        suc_meta_put(c, txn, "record_bytes", (uint64_t)s.record_bytes) ||
        suc_meta_put(c, txn, "file_bytes", (uint64_t)s.file_bytes))
        return suc_fail(err, SUC_EINDEX, "mdb_put(meta)", 0, 0, "could not write counters");
    return suc_secondaries_rebuild(c, txn, err);
}

int suc_verify(suc_cache *c, uint32_t flags, suc_verify_report *out, suc_error *err) {
    int rc = suc_cache_check_fork(c, err);
    if (rc) return rc;
    if (!out) return suc_fail(err, SUC_EINVAL, "suc_verify", 0, 0, "report is required");
    memset(out, 0, sizeof *out);
    int fix = (flags & SUC_VERIFY_FIX) != 0;
    raw_item *items = calloc(DEFAULT_BATCH, sizeof *items);
    if (!items) return suc_fail(err, SUC_ENOMEM, "calloc", ENOMEM, 0, "out of memory");
    suc_counters sums = {0};
    uint8_t last[SUC_IKEY_LEN];
    int have_last = 0;
    /* Index → bodies. */
    while (!rc) {
        size_t n = 0;
        rc = read_batch(c, have_last ? last : NULL, items, DEFAULT_BATCH, &n, err);
        for (size_t i = 0; !rc && i < n; i++) {
            suc_record r;
            uint8_t expect[SUC_IKEY_LEN];
            out->entries++;
            sums.entries++;
            sums.record_bytes += (int64_t)items[i].len;
            int drc = suc_record_decode(items[i].record, items[i].len, &r);
            if (drc == SUC_EVERSION) { /* another release's entry: not damage, not ours to purge */
                out->other_format_entries++;
                continue;
            }
            if (drc != SUC_OK ||
                (suc_ikey_make(r.key, r.key_len, r.variant, r.variant_len, expect),
                 memcmp(expect, items[i].ikey, SUC_IKEY_LEN) != 0)) {
                out->unreadable_records++;
                if (fix) {
                    suc_index_purge_if(c, items[i].ikey, 0);
                    out->repaired++;
                }
                continue;
            }
            sums.body_bytes += (int64_t)r.body_size;
            sums.stored_bytes += (int64_t)suc_record_stored_bytes(&r, items[i].len);
            int brc = SUC_OK;
            if (r.flags & SUC_REC_INLINE) out->inline_entries++;
            if (r.flags & SUC_REC_INLINE) {
                if (flags & SUC_VERIFY_BODIES) {
                    uint8_t *body = NULL;
                    brc = suc_body_read(c, &r, 0, &body, NULL);
                    free(body);
                }
            } else {
                brc = check_body(c, &r, items[i].len, (flags & SUC_VERIFY_BODIES) != 0);
            }
            if (brc == SUC_EVERSION) { /* a body file of another release: a miss, never purged */
                out->other_format_entries++;
                continue;
            }
            if (brc == SUC_ENOTFOUND) out->missing_bodies++;
            else if (brc) out->damaged_bodies++;
            if (brc && fix) {
                suc_index_purge_if(c, items[i].ikey, r.version);
                out->repaired++;
            }
        }
        if (n) {
            memcpy(last, items[n - 1].ikey, SUC_IKEY_LEN);
            have_last = 1;
        }
        free_batch(items, n);
        if (n < DEFAULT_BATCH) break;
    }
    free(items);
    /* Bodies → index: orphans (any age counts; fix removes those past a 10-minute grace). */
    if (!rc) {
        sweep_result s = {0};
        rc = sweep_files(c, 10 * 60 * 1000, fix, (flags & SUC_VERIFY_REBUILD) != 0, &s, err);
        out->orphan_files = s.orphans;
        out->temp_files = s.temps;
        out->leftover_bytes = s.orphan_bytes + s.temp_bytes;
        out->rebuilt = (int)s.restored;
    }
    /* The secondary structures (time orders, postings, partition counters) → records. */
    if (!rc) {
        suc_check chk = {fix, out->other_format_entries != 0, out->unreadable_records != 0, out};
        rc = suc_secondaries_check(c, &chk, err);
    }
    /* Counters. */
    if (!rc) {
        suc_stats st;
        rc = suc_cache_stats(c, &st, err);
        /* The body sizes of another release's records cannot be read here: with any of those,
         * only the sums that do not need them are compared (and nothing is recounted). */
        int bodies_known = out->other_format_entries == 0;
        out->counters_match = !rc && st.entries == (uint64_t)sums.entries && st.record_bytes == (uint64_t)sums.record_bytes &&
                              (!bodies_known || (st.body_bytes == (uint64_t)sums.body_bytes &&
                                                 st.stored_bytes == (uint64_t)sums.stored_bytes));
        if (!rc && bodies_known && (fix || out->rebuilt)) {
            recount_ctx rctx = {0};
            rc = suc_write_txn(c, recount_apply, NULL, &rctx, err);
        }
    }
    return rc;
}
