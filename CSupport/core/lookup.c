/*
 * lookup.c — reading entries: suc_get (record, then body), suc_get_version (the memory tiers'
 * validation read), suc_list_variants, and the one function that turns a record into the view
 * callers see (used by suc_scan too, so every call reports the same sizes).
 */
#include "operations.h"
#include "os.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void suc_entry_view_fill(const suc_record *r, size_t rec_len, suc_entry_view *vw) {
    memset(vw, 0, sizeof *vw);
    vw->key = r->key; vw->key_len = r->key_len;
    vw->variant = r->variant; vw->variant_len = r->variant_len;
    vw->partition = r->partition; vw->partition_len = r->partition_len;
    vw->head = r->head; vw->head_len = r->head_len;
    vw->user_info = r->user_info; vw->user_info_len = r->user_info_len;
    vw->body_size = r->body_size;
    vw->stored_size = r->stored_size;
    vw->footprint_size = suc_record_stored_bytes(r, rec_len);
    vw->version = r->version;
    vw->stored_at_ms = r->stored_at_ms;
    vw->last_used_ms = r->last_used_ms;
    vw->app_flags = r->app_flags;
    vw->flags = ((r->flags & SUC_REC_INLINE) ? SUC_ENTRY_INLINE : 0) | ((r->flags & SUC_REC_RAW) ? SUC_ENTRY_RAW : 0);
    vw->tags = r->tags; vw->tags_len = r->tags_len;
    vw->invalidated_at_ms = (int64_t)r->invalidated_at_s * 1000;
}

const suc_entry_view *suc_entry_get_view(const suc_entry *e) { return e ? &e->view : NULL; }

void suc_entry_free(suc_entry *e) {
    if (!e) return;
    free(e->record);
    free(e->body);
    free(e);
}

int suc_get(suc_cache *c, const void *key, size_t key_len, const void *variant, size_t variant_len,
            uint32_t flags, suc_entry **out, suc_error *err) {
    *out = NULL;
    int rc = suc_cache_check_fork(c, err);
    if (rc) return rc;
    if (!key || !key_len || (variant_len && !variant))
        return suc_fail(err, SUC_EINVAL, "suc_get", 0, 0, "a key is required");
    uint8_t ikey[SUC_IKEY_LEN];
    suc_ikey_make(key, key_len, variant, variant_len, ikey);
    uint8_t *rec_buf = NULL;
    size_t rec_len = 0;
    int counts_every_hit = 0;
    int *counted = flags & SUC_GET_NO_TOUCH ? NULL : &counts_every_hit;
    if ((rc = suc_index_read_record(c, ikey, &rec_buf, &rec_len, counted, err))) return rc;

    suc_entry *e = NULL;
    suc_record r;
    rc = suc_record_decode(rec_buf, rec_len, &r);
    if (rc == SUC_EVERSION) { /* written by a release with another record format: its entry */
        free(rec_buf);
        suc_fail(err, SUC_EVERSION, "record", 0, 0, "index record of another format; left for the release that wrote it");
        return SUC_ENOTFOUND;
    }
    if (rc) {
        suc_index_purge_if(c, ikey, 0);
        free(rec_buf);
        suc_fail(err, SUC_ECORRUPT, "record", 0, 0, "index record is corrupt; entry purged");
        return SUC_ENOTFOUND;
    }
    if (r.key_len != key_len || memcmp(r.key, key, key_len) != 0 || r.variant_len != variant_len ||
        (variant_len && memcmp(r.variant, variant, variant_len) != 0)) {
        free(rec_buf); /* a hash collision: never someone else's entry */
        return suc_fail(err, SUC_ENOTFOUND, "suc_get", 0, 0, "no such entry");
    }
    e = calloc(1, sizeof *e);
    if (!e) {
        free(rec_buf);
        return suc_fail(err, SUC_ENOMEM, "calloc(entry)", ENOMEM, 0, "out of memory");
    }
    e->record = rec_buf;
    e->record_len = rec_len;
    if (!(flags & SUC_GET_NO_BODY)) {
        size_t meta_len = (r.flags & SUC_REC_INLINE) ? 0 : rec_len;
        rc = suc_body_read(c, &r, meta_len, &e->body, err);
        if (rc == SUC_ECORRUPT || rc == SUC_ENOTFOUND) {
            /* A missing file is either a remove that committed after our index read (then the
             * record is gone or replaced and the purge does nothing) or damage: bodies are
             * renamed into place before their record commits and unlinked only after it is
             * removed. Either way a miss; the purge touches only the version we read. */
            suc_index_purge_if(c, ikey, r.version);
            suc_entry_free(e);
            return SUC_ENOTFOUND; /* err keeps the detail */
        }
        if (rc == SUC_EVERSION) { /* a body another release wrote: a miss, left alone */
            suc_entry_free(e);
            return SUC_ENOTFOUND;
        }
        if (rc) {
            suc_entry_free(e);
            return rc;
        }
    }
    suc_entry_view_fill(&r, rec_len, &e->view);
    e->view.body = e->body;
    e->view.body_len = e->body ? (size_t)r.body_size : 0;
    if (!(flags & SUC_GET_NO_TOUCH)) {
        int64_t now = suc_os_now_ms();
        if (counts_every_hit || now - r.last_used_ms >= (int64_t)c->opts.touch_interval_ms)
            suc_touch_queue(c, ikey, now);
    }
    *out = e;
    return SUC_OK;
}

int suc_get_version(suc_cache *c, const void *key, size_t key_len, const void *variant, size_t variant_len,
                    uint64_t *out_version, suc_error *err) {
    int rc = suc_cache_check_fork(c, err);
    if (rc) return rc;
    if (!key || !key_len || (variant_len && !variant))
        return suc_fail(err, SUC_EINVAL, "suc_get_version", 0, 0, "a key is required");
    uint8_t ikey[SUC_IKEY_LEN];
    suc_ikey_make(key, key_len, variant, variant_len, ikey);
    MDB_txn *txn;
    if ((rc = suc_rtxn_begin(c, &txn, err))) return rc;
    suc_record r;
    int mrc = suc_index_record_get(c, txn, ikey, &r, NULL);
    if (mrc == MDB_NOTFOUND) rc = suc_fail(err, SUC_ENOTFOUND, "mdb_get", 0, mrc, "no such entry");
    else if (mrc == SUC_ECORRUPT || (mrc == 0 && (r.key_len != key_len || memcmp(r.key, key, key_len) != 0)))
        rc = suc_fail(err, SUC_ENOTFOUND, "record", 0, 0, "no such entry");
    else if (mrc) rc = suc_fail_mdb(err, "mdb_get(main)", mrc);
    else *out_version = r.version;
    suc_rtxn_end(c, txn);
    return rc;
}

int suc_list_variants(suc_cache *c, const void *key, size_t key_len, suc_variant_fn fn, void *fctx,
                      suc_error *err) {
    int rc = suc_cache_check_fork(c, err);
    if (rc) return rc;
    if (!key || !key_len || !fn) return suc_fail(err, SUC_EINVAL, "suc_list_variants", 0, 0, "key and fn are required");
    uint8_t ikey[SUC_IKEY_LEN];
    suc_ikey_make(key, key_len, NULL, 0, ikey);
    /* Copy out first: the callback runs with no transaction open, so it may call back in. */
    typedef struct { uint8_t *bytes; size_t len; uint64_t version; } item;
    item *items = NULL;
    size_t n = 0, cap = 0;
    MDB_txn *txn;
    if ((rc = suc_rtxn_begin(c, &txn, err))) return rc;
    MDB_cursor *cur = NULL;
    int mrc = mdb_cursor_open(txn, c->dbi_main, &cur);
    if (mrc) cur = NULL;
    if (mrc) rc = suc_fail_mdb(err, "mdb_cursor_open", mrc);
    MDB_val k = {SUC_KEY_HASH_LEN, ikey}, v;
    for (mrc = rc ? MDB_NOTFOUND : mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); mrc == 0;
         mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != SUC_IKEY_LEN || memcmp(k.mv_data, ikey, SUC_KEY_HASH_LEN) != 0) break;
        suc_record r;
        if (suc_record_decode(v.mv_data, v.mv_size, &r) || r.key_len != key_len || memcmp(r.key, key, key_len))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 4;
            item *p = realloc(items, cap * sizeof *items);
            if (!p) {
                rc = suc_fail(err, SUC_ENOMEM, "realloc(variants)", ENOMEM, 0, "out of memory");
                break;
            }
            items = p;
        }
        items[n].bytes = malloc(r.variant_len ? r.variant_len : 1);
        if (!items[n].bytes) {
            rc = suc_fail(err, SUC_ENOMEM, "malloc(variant)", ENOMEM, 0, "out of memory");
            break;
        }
        memcpy(items[n].bytes, r.variant, r.variant_len);
        items[n].len = r.variant_len;
        items[n].version = r.version;
        n++;
    }
    /* A walk that stopped on an error, not at the end of the key's variants, is not a list. */
    if (!rc && mrc != 0 && mrc != MDB_NOTFOUND) rc = suc_fail_mdb(err, "mdb_cursor_get(variants)", mrc);
    if (cur) mdb_cursor_close(cur);
    suc_rtxn_end(c, txn);
    for (size_t i = 0; i < n; i++) {
        if (rc == SUC_OK && fn(fctx, items[i].bytes, items[i].len, items[i].version)) rc = 1;
        free(items[i].bytes);
    }
    free(items);
    return rc == 1 ? SUC_OK : rc;
}

