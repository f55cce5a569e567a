/*
 * refresh.c — a new head for a stored body: what a 304 revalidation stores.
 *
 * A 304 changes an entry's head (its Date, Cache-Control, ETag…), never its body. Storing the
 * response again would rewrite the body (48 MiB for a 48 MiB response, at every revalidation);
 * a refresh writes one index record instead. The new record names the same body file, or
 * carries the same inline body, and says how long the record copy ending that file is
 * (body_record_len, record format 0.3), since the copy is the record that wrote the file. The
 * body file is never written again: it goes when the last record naming it goes, as any body
 * does (a replacement by a new body, a removal, an eviction), and a rebuild of a lost index
 * restores it with the head it was written with, which is older and so revalidates again.
 *
 * The refresh applies only to the version that was validated: an entry replaced or removed
 * since then refuses it, and the caller stores the whole response instead.
 */
#include "operations.h"
#include "os.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int refuse(suc_op *op, const char *why) {
    op->op_rc = suc_fail(&op->err, SUC_ENOTFOUND, "suc_refresh", 0, 0, "not refreshed: %s", why);
    return SUC_OK;
}

int suc_refresh_apply(suc_cache *c, MDB_txn *txn, suc_op *op, suc_counters *d, uint64_t *seq, suc_error *err) {
    const suc_put_params *p = op->refresh;
    MDB_val v;
    suc_record old;
    int rc = suc_index_record_get(c, txn, op->ikey, &old, &v);
    if (rc == MDB_NOTFOUND) return refuse(op, "the entry is gone");
    if (rc && rc != SUC_ECORRUPT) return suc_fail_mdb(err, "mdb_get(main)", rc);
    if (rc || old.version != op->expect_version || old.key_len != p->key_len ||
        memcmp(old.key, p->key, p->key_len) != 0)
        return refuse(op, "the entry changed since it was read");
    if (old.partition_len != p->partition_len ||
        (p->partition_len && memcmp(old.partition, p->partition, p->partition_len) != 0))
        return refuse(op, "the entry is in another partition");

    /* The stored body's fields from the record there, the rest from the refresh. */
    suc_record n = old;
    n.stored_at_ms = p->stored_at_ms;
    n.last_used_ms = suc_os_now_ms(); /* a revalidation is a use */
    n.app_flags = p->app_flags;
    n.head = p->head; n.head_len = (uint32_t)p->head_len;
    n.user_info = p->user_info; n.user_info_len = (uint32_t)p->user_info_len;
    n.tags = p->tags; n.tags_len = (uint32_t)p->tags_len;
    n.invalidated_at_s = 0; /* revalidated: no longer soft-purged */
    n.body_record_len = (old.flags & SUC_REC_INLINE) ? 0 : (uint32_t)suc_record_copy_len(&old, v.mv_size);
    /* Encoded before the put writes anything: `old`'s fields point into the map. A retried
     * transaction builds it again. */
    size_t len = suc_record_size(&n);
    uint8_t *buf = suc_os_malloc(len);
    if (!buf) return suc_fail(err, SUC_ENOMEM, "malloc(record)", ENOMEM, 0, "out of memory");
    suc_record_encode(&n, buf);
    free(op->refreshed);
    op->refreshed = buf;
    op->refreshed_len = len;
    op->record = buf;
    op->record_len = len;
    return suc_index_put(c, txn, op, d, seq, err);
}

int suc_refresh(suc_cache *c, const suc_put_params *params, uint64_t expect_version, uint64_t *out_version,
                suc_error *err) {
    int rc = suc_cache_check_fork(c, err);
    if (rc) return rc;
    if ((rc = suc_put_params_check(c, params, err))) return rc;
    if (params->flags)
        return suc_fail(err, SUC_EINVAL, "suc_refresh", 0, 0, "a refresh keeps the entry's variants: no SUC_PUT_* flags");
    suc_op op = {0};
    op.kind = SUC_OP_REFRESH;
    suc_ikey_make(params->key, params->key_len, params->variant, params->variant_len, op.ikey);
    op.key = params->key;
    op.key_len = params->key_len;
    op.refresh = params;
    op.expect_version = expect_version;
    rc = suc_index_submit(c, &op, err);
    if (rc == SUC_OK && out_version) *out_version = op.version;
    suc_op_release(&op);
    return rc;
}
