/*
 * writer.c — storing an entry: stream the body (deflating as it arrives, or as it is when its first
 * 64 KiB do not compress) to a random-named temp file, publish it, then commit the index record.
 *
 * Publish order (docs/Design.md invariant 1, docs/Reliability.md §3.4): temp file complete → fsync (durable
 * mode) → rename into bodies/xx/ → fsync of that directory (durable mode) → index commit. A
 * crash at any point leaves at worst an unreferenced file that compaction removes; a reader can
 * never find an index record whose body is not complete.
 */
#include "operations.h"
#include "os.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

/* Compressed bytes are held in memory up to this much before they go to the temp file. */
#define SPILL_BYTES (256u * 1024u)
/* suc_put compresses bodies up to this size in one call into a buffer of their size; larger ones
 * stream through zlib in SPILL_BYTES pieces, so a put never holds more than this on top of the
 * caller's body. */
#define WHOLE_BODY_MAX (16u << 20)
#define DEFLATE_CHUNK 16384u
/* A streamed body's first bytes, kept as they are until the writer knows whether the body
 * compresses (probe_compressible's sample). */
#define PROBE_BYTES 65536u

struct suc_writer {
    suc_cache *c;
    int raw;
    z_stream *zs;
    /* buf holds SUC_BODY_HEADER_LEN reserved bytes, then stored bytes not yet written */
    uint8_t *buf;
    size_t len, cap;
    int fd;
    char tmp_name[2 + 2 * SUC_BODY_ID_LEN + 1];
    uint64_t file_off;   /* next payload offset in the temp file */
    uint64_t body_size;  /* logical bytes appended */
    uint64_t stored_size;
    uint32_t crc;
    uint8_t id[SUC_BODY_ID_LEN];
    int failed;          /* a SUC_E* code once something went wrong */
    int finished;        /* the zlib stream has been finished */
    int deciding;        /* buf holds the first appended bytes as they are, raw or deflate to be decided */
};

static int probe_compressible(suc_cache *c, const uint8_t *body);

static int buf_reserve(suc_writer *w, size_t extra, suc_error *err) {
    if (w->cap - w->len >= extra) return SUC_OK;
    size_t cap = w->cap ? w->cap : 4096;
    while (cap - w->len < extra) cap *= 2;
    uint8_t *p = suc_os_realloc(w->buf, cap);
    if (!p) return suc_fail(err, SUC_ENOMEM, "realloc(writer)", ENOMEM, 0, "out of memory");
    w->buf = p;
    w->cap = cap;
    return SUC_OK;
}

static int writer_failed(suc_writer *w, int rc) {
    w->failed = rc;
    return rc;
}

int suc_writer_begin(suc_cache *c, uint32_t flags, suc_writer **out, suc_error *err) {
    *out = NULL;
    int rc = suc_cache_check_fork(c, err);
    if (rc) return rc;
    suc_writer *w = calloc(1, sizeof *w);
    if (!w) return suc_fail(err, SUC_ENOMEM, "calloc(writer)", ENOMEM, 0, "out of memory");
    w->c = c;
    w->fd = -1;
    w->raw = (flags & SUC_PUT_RAW) != 0;
    w->crc = 0; /* the CRC-32 of nothing */
    rc = buf_reserve(w, SUC_BODY_HEADER_LEN + 1024, err);
    if (rc) goto fail;
    w->len = SUC_BODY_HEADER_LEN;
    if (suc_os_random(w->id, sizeof w->id) < 0) {
        rc = suc_fail_errno(err, "getrandom", errno);
        goto fail;
    }
    if (!w->raw) {
        w->deciding = 1;
        w->zs = suc_zpool_take_deflate(c);
        if (!w->zs) {
            rc = suc_fail(err, SUC_ENOMEM, "deflateInit", 0, Z_MEM_ERROR, "deflateInit failed");
            goto fail;
        }
    }
    *out = w;
    return SUC_OK;
fail:
    free(w->buf);
    free(w);
    return rc;
}

/* Creates the temp file: tmp/t<hex id>, O_EXCL|O_NOFOLLOW, then fchmod so the umask cannot
 * take the group's access away (docs/Reliability.md §3.4). */
static int writer_open_file(suc_writer *w, suc_error *err) {
    static const char HEX[] = "0123456789abcdef";
    w->tmp_name[0] = 't';
    for (int i = 0; i < SUC_BODY_ID_LEN; i++) {
        w->tmp_name[1 + 2 * i] = HEX[w->id[i] >> 4];
        w->tmp_name[2 + 2 * i] = HEX[w->id[i] & 15];
    }
    w->tmp_name[1 + 2 * SUC_BODY_ID_LEN] = '\0';
    w->fd = suc_os_openat(w->c->tmpfd, w->tmp_name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0660);
    if (w->fd < 0) return suc_fail_errno(err, "openat(temp)", errno);
    if (suc_os_fchmod(w->fd, 0660) < 0) return suc_fail_errno(err, "fchmod(temp)", errno);
    w->file_off = SUC_BODY_HEADER_LEN;
    return SUC_OK;
}

/* Writes the pending stored bytes (after the reserved header) to the temp file. */
static int writer_spill(suc_writer *w, suc_error *err) {
    int rc;
    if (w->fd < 0 && (rc = writer_open_file(w, err))) return rc;
    size_t n = w->len - SUC_BODY_HEADER_LEN;
    if (n && suc_pwrite_relieving(w->c, w->fd, w->buf + SUC_BODY_HEADER_LEN, n, (off_t)w->file_off) < 0)
        return suc_fail_errno(err, "pwrite(temp)", errno);
    w->file_off += n;
    w->len = SUC_BODY_HEADER_LEN;
    return SUC_OK;
}

static int writer_deflate(suc_writer *w, const uint8_t *bytes, size_t len, int flush, suc_error *err) {
    z_stream *zs = w->zs;
    zs->next_in = (Bytef *)bytes;
    zs->avail_in = (uInt)len;
    for (;;) {
        int rc = buf_reserve(w, DEFLATE_CHUNK, err);
        if (rc) return rc;
        zs->next_out = w->buf + w->len;
        zs->avail_out = (uInt)(w->cap - w->len);
        uInt before = zs->avail_out;
        int zrc = deflate(zs, flush);
        size_t produced = before - zs->avail_out;
        w->len += produced;
        w->stored_size += produced;
        if (zrc == Z_STREAM_END) return SUC_OK;
        if (zrc != Z_OK && zrc != Z_BUF_ERROR)
            return suc_fail(err, SUC_EIO, "deflate", 0, zrc, "deflate failed (zlib rc %d)", zrc);
        if (flush == Z_NO_FLUSH && zs->avail_in == 0 && zs->avail_out != 0) return SUC_OK;
    }
}

/* Settles how a streamed body is stored, from its first PROBE_BYTES kept in buf: as it is when
 * they do not compress (media, archives arriving from an origin), so the file is no larger than
 * the body and reads neither inflate it nor read it to reach a range; else they are deflated and
 * the rest follows through zlib. A body that ends shorter than the sample is never streamed
 * through zlib: writer_finish compresses it whole (writer_compress_held). */
static int writer_decide(suc_writer *w, suc_error *err) {
    w->deciding = 0;
    size_t n = w->len - SUC_BODY_HEADER_LEN;
    if (n >= PROBE_BYTES && !probe_compressible(w->c, w->buf + SUC_BODY_HEADER_LEN)) {
        w->raw = 1;
        w->stored_size = n;
        suc_zpool_give_deflate(w->c, w->zs);
        w->zs = NULL;
        return SUC_OK;
    }
    if (n == 0) return SUC_OK;
    uint8_t *pending = suc_os_malloc(n);
    if (!pending) return suc_fail(err, SUC_ENOMEM, "malloc(writer)", ENOMEM, 0, "out of memory");
    memcpy(pending, w->buf + SUC_BODY_HEADER_LEN, n);
    w->len = SUC_BODY_HEADER_LEN;
    int rc = writer_deflate(w, pending, n, Z_NO_FLUSH, err);
    free(pending);
    return rc;
}

static int writer_put_whole(suc_writer *w, const uint8_t *body, size_t len, int compress, suc_error *err);

/* A streamed body that ended within the sample is all in buf: it is stored as a body handed over
 * whole would be (suc_body_compress: fixed codes for a small one, then raw when that is no
 * smaller), so an API response arriving from an origin reads back as cheaply as one put whole. */
static int writer_compress_held(suc_writer *w, suc_error *err) {
    w->deciding = 0;
    suc_zpool_give_deflate(w->c, w->zs);
    w->zs = NULL;
    size_t n = w->len - SUC_BODY_HEADER_LEN;
    if (n == 0) { /* nothing to compress: an empty raw body, as suc_put stores one */
        w->raw = 1;
        w->finished = 1;
        return SUC_OK;
    }
    uint8_t *held = suc_os_malloc(n);
    if (!held) return suc_fail(err, SUC_ENOMEM, "malloc(writer)", ENOMEM, 0, "out of memory");
    memcpy(held, w->buf + SUC_BODY_HEADER_LEN, n);
    w->len = SUC_BODY_HEADER_LEN;
    int rc = writer_put_whole(w, held, n, 1, err);
    free(held);
    return rc;
}

/* Ends the zlib stream (once). */
static int writer_finish(suc_writer *w, suc_error *err) {
    int rc;
    if (w->deciding && (rc = writer_compress_held(w, err))) return writer_failed(w, rc);
    if (w->raw || w->finished) return SUC_OK;
    rc = writer_deflate(w, NULL, 0, Z_FINISH, err);
    if (rc) return writer_failed(w, rc);
    w->finished = 1;
    return SUC_OK;
}

int suc_writer_append(suc_writer *w, const void *bytes, size_t len, suc_error *err) {
    if (w->finished) return suc_fail(err, SUC_EINVAL, "suc_writer_append", 0, 0, "writer already finished");
    if (w->failed) return suc_fail(err, w->failed, "suc_writer_append", 0, 0, "writer already failed");
    if (len == 0) return SUC_OK;
    if (w->body_size + len > w->c->opts.max_body_bytes) {
        /* Stop at the limit: drop the temp file now so nothing partial stays on disk. */
        if (w->fd >= 0) {
            suc_os_close(w->fd);
            w->fd = -1;
            (void)suc_os_unlinkat(w->c->tmpfd, w->tmp_name, 0);
        }
        return writer_failed(w, suc_fail(err, SUC_ETOOLARGE, "suc_writer_append", 0, 0,
                                         "body exceeds the limit of %llu bytes",
                                         (unsigned long long)w->c->opts.max_body_bytes));
    }
    const uint8_t *p = bytes;
    size_t left = len;
    while (left > 0) { /* zlib and crc32 take uInt lengths */
        size_t n = left > (1u << 30) ? (1u << 30) : left;
        size_t kept = w->len - SUC_BODY_HEADER_LEN;
        if (w->deciding && n > PROBE_BYTES - kept) n = PROBE_BYTES - kept; /* no more than the sample */
        w->crc = suc_crc32(w->crc, p, n);
        int rc;
        if (w->raw || w->deciding) {
            if ((rc = buf_reserve(w, n, err))) return writer_failed(w, rc);
            memcpy(w->buf + w->len, p, n);
            w->len += n;
            if (w->raw) w->stored_size += n;
        } else if ((rc = writer_deflate(w, p, n, Z_NO_FLUSH, err))) {
            return writer_failed(w, rc);
        }
        w->body_size += n;
        if (w->deciding && w->len - SUC_BODY_HEADER_LEN >= PROBE_BYTES && (rc = writer_decide(w, err)))
            return writer_failed(w, rc);
        if (!w->deciding && w->len - SUC_BODY_HEADER_LEN >= SPILL_BYTES && (rc = writer_spill(w, err)))
            return writer_failed(w, rc);
        p += n;
        left -= n;
    }
    return SUC_OK;
}

void suc_writer_abort(suc_writer *w) {
    if (!w) return;
    if (w->fd >= 0) {
        suc_os_close(w->fd);
        (void)suc_os_unlinkat(w->c->tmpfd, w->tmp_name, 0);
    }
    suc_zpool_give_deflate(w->c, w->zs);
    free(w->buf);
    free(w);
}

int suc_put_params_check(suc_cache *c, const suc_put_params *p, suc_error *err) {
    if (!p || !p->key || p->key_len == 0)
        return suc_fail(err, SUC_EINVAL, "suc_writer_commit", 0, 0, "a key is required");
    if ((p->variant_len && !p->variant) || (p->partition_len && !p->partition) ||
        (p->head_len && !p->head) || (p->user_info_len && !p->user_info))
        return suc_fail(err, SUC_EINVAL, "suc_writer_commit", 0, 0, "NULL pointer with a length");
    if ((uint64_t)p->key_len + p->variant_len + p->partition_len > c->opts.max_key_bytes)
        return suc_fail(err, SUC_ETOOLARGE, "suc_writer_commit", 0, 0,
                        "key exceeds the limit of %u bytes", c->opts.max_key_bytes);
    if (p->head_len > c->opts.max_head_bytes)
        return suc_fail(err, SUC_ETOOLARGE, "suc_writer_commit", 0, 0,
                        "response head exceeds the limit of %u bytes", c->opts.max_head_bytes);
    if ((p->flags & SUC_PUT_SOLE_VARIANT) && (p->flags & SUC_PUT_SELECTOR))
        return suc_fail(err, SUC_EINVAL, "suc_writer_commit", 0, 0,
                        "SUC_PUT_SOLE_VARIANT and SUC_PUT_SELECTOR exclude each other");
    if ((p->flags & SUC_PUT_SELECTOR) && p->variant_len == 0)
        return suc_fail(err, SUC_EINVAL, "suc_writer_commit", 0, 0,
                        "SUC_PUT_SELECTOR needs a variant: the selector takes the empty one");
    if ((p->flags & SUC_PUT_SELECTOR) && p->selector_head_len && !p->selector_head)
        return suc_fail(err, SUC_EINVAL, "suc_writer_commit", 0, 0, "NULL pointer with a length");
    if ((p->flags & SUC_PUT_SELECTOR) && p->selector_head_len > c->opts.max_head_bytes)
        return suc_fail(err, SUC_ETOOLARGE, "suc_writer_commit", 0, 0,
                        "selector head exceeds the limit of %u bytes", c->opts.max_head_bytes);
    if (p->user_info_len > c->opts.max_user_info_bytes)
        return suc_fail(err, SUC_ETOOLARGE, "suc_writer_commit", 0, 0,
                        "userInfo exceeds the limit of %u bytes", c->opts.max_user_info_bytes);
    return suc_tags_check(p->tags, p->tags_len, err);
}

int suc_writer_commit(suc_writer *w, const suc_put_params *p, uint64_t *out_version, suc_error *err) {
    suc_cache *c = w->c;
    int rc = SUC_OK, published = 0, final_dirfd = -1;
    char final_path[SUC_BODY_PATH_LEN];
    uint8_t *meta = NULL;
    suc_op op = {0};

    if (w->failed) {
        rc = suc_fail(err, w->failed, "suc_writer_commit", 0, 0, "writer already failed");
        goto out;
    }
    if ((rc = suc_put_params_check(c, p, err))) goto out;
    if ((rc = suc_cache_check_fork(c, err))) goto out;
    if ((rc = writer_finish(w, err))) goto out;
    suc_hold_free_floor(c, w->stored_size + SUC_BODY_HEADER_LEN);

    suc_record rec = {0};
    rec.flags = w->raw ? SUC_REC_RAW : 0;
    rec.stored_at_ms = p->stored_at_ms;
    rec.last_used_ms = suc_os_now_ms();
    rec.body_size = w->body_size;
    rec.stored_size = w->stored_size;
    rec.body_crc = w->crc;
    rec.app_flags = p->app_flags;
    rec.key = p->key; rec.key_len = (uint32_t)p->key_len;
    rec.variant = p->variant; rec.variant_len = (uint32_t)p->variant_len;
    rec.partition = p->partition; rec.partition_len = (uint32_t)p->partition_len;
    rec.head = p->head; rec.head_len = (uint32_t)p->head_len;
    rec.user_info = p->user_info; rec.user_info_len = (uint32_t)p->user_info_len;
    rec.tags = p->tags; rec.tags_len = (uint32_t)p->tags_len;

    int inline_body = w->fd < 0 && c->opts.inline_max_bytes != SUC_INLINE_NEVER &&
                      w->stored_size <= c->opts.inline_max_bytes;
    if (inline_body) {
        rec.flags |= SUC_REC_INLINE;
        rec.inline_body = w->buf + SUC_BODY_HEADER_LEN;
    } else {
        memcpy(rec.body_id, w->id, SUC_BODY_ID_LEN);
        /* The file: header, payload, then a copy of the record for rebuilds. When the body
         * never spilled, all three go out in one pwrite. */
        size_t meta_len = suc_record_size(&rec);
        if ((rc = buf_reserve(w, meta_len, err))) goto out;
        suc_record_encode(&rec, w->buf + w->len);
        size_t tail = w->len + meta_len;
        suc_body_header_encode(&rec, (uint32_t)meta_len, w->buf);
        if (w->fd < 0) {
            if ((rc = writer_open_file(w, err))) goto out;
            if (suc_pwrite_relieving(c, w->fd, w->buf, tail, 0) < 0) {
                rc = suc_fail_errno(err, "pwrite(temp)", errno);
                goto out;
            }
        } else {
            size_t n = tail - SUC_BODY_HEADER_LEN;
            if (suc_pwrite_relieving(w->c, w->fd, w->buf + SUC_BODY_HEADER_LEN, n, (off_t)w->file_off) < 0 ||
                suc_pwrite_relieving(w->c, w->fd, w->buf, SUC_BODY_HEADER_LEN, 0) < 0) {
                rc = suc_fail_errno(err, "pwrite(temp)", errno);
                goto out;
            }
        }
        if (c->opts.durability == SUC_DURABILITY_DURABLE && suc_os_fdatasync(w->fd) < 0) {
            rc = suc_fail_errno(err, "fdatasync(temp)", errno);
            goto out;
        }
        suc_os_close(w->fd);
        w->fd = -1;
        suc_body_path(w->id, final_path);
        /* Into bodies/xx through a descriptor opened with O_NOFOLLOW: a symlink planted at xx
         * must never carry the body outside the root (docs/Reliability.md §3.4). */
        final_dirfd = suc_body_open_fanout(c, w->id, 1);
        if (final_dirfd < 0) {
            int e = errno;
            rc = (e == ELOOP || e == ENOTDIR)
                     ? suc_fail(err, SUC_EUNSAFE, "openat(fan-out)", e, 0, "body directory %.2s is not a real directory", final_path)
                     : suc_fail_errno(err, "openat(fan-out)", e);
            (void)suc_os_unlinkat(c->tmpfd, w->tmp_name, 0);
            goto out;
        }
        if (suc_os_renameat(c->tmpfd, w->tmp_name, final_dirfd, SUC_BODY_NAME(final_path)) < 0) {
            rc = suc_fail_errno(err, "renameat(body)", errno);
            (void)suc_os_unlinkat(c->tmpfd, w->tmp_name, 0);
            goto out;
        }
        published = 1;
        if (c->opts.durability == SUC_DURABILITY_DURABLE && suc_os_fsync(final_dirfd) < 0) {
            rc = suc_fail_errno(err, "fsync(bodies dir)", errno);
            goto out;
        }
    }

    /* The index record, committed by the group-commit leader (possibly another thread). */
    size_t rec_len = suc_record_size(&rec);
    meta = suc_os_malloc(rec_len);
    if (!meta) {
        rc = suc_fail(err, SUC_ENOMEM, "malloc(record)", ENOMEM, 0, "out of memory");
        goto out;
    }
    suc_record_encode(&rec, meta);
    op.kind = SUC_OP_PUT;
    suc_ikey_make(p->key, p->key_len, p->variant, p->variant_len, op.ikey);
    op.record = meta;
    op.record_len = rec_len;
    op.capacity_bytes = p->capacity_bytes;
    op.put_flags = p->flags & (SUC_PUT_SOLE_VARIANT | SUC_PUT_SELECTOR);
    op.key = p->key;
    op.key_len = p->key_len;
    if (p->flags & SUC_PUT_SELECTOR) {
        /* The selector: a body-less inline record at the empty variant. */
        suc_record sel = {0};
        sel.flags = SUC_REC_INLINE | SUC_REC_RAW;
        sel.stored_at_ms = p->stored_at_ms;
        sel.last_used_ms = rec.last_used_ms;
        sel.body_crc = 0; /* no body: the CRC-32 of nothing */
        sel.app_flags = p->selector_app_flags;
        sel.key = p->key; sel.key_len = (uint32_t)p->key_len;
        sel.partition = p->partition; sel.partition_len = (uint32_t)p->partition_len;
        sel.head = p->selector_head; sel.head_len = (uint32_t)p->selector_head_len;
        sel.inline_body = (const uint8_t *)"";
        op.selector_len = suc_record_size(&sel);
        if (!(op.selector = suc_os_malloc(op.selector_len))) {
            rc = suc_fail(err, SUC_ENOMEM, "malloc(selector)", ENOMEM, 0, "out of memory");
            goto out;
        }
        suc_record_encode(&sel, op.selector);
    }
    rc = suc_index_submit(c, &op, err);
    if (rc == SUC_OK) {
        published = 0; /* the index owns the file now */
        if (out_version) *out_version = op.version;
    }
    /* The replaced and evicted bodies, after the commit that dropped them (a store refused for
     * its size still committed the removal of the entry it would have replaced). */
    if (rc == SUC_OK || rc == SUC_ECAPACITY) suc_body_unlink_ids(c, op.dead_ids, op.dead_count);

out:
    /* (Unless a commit of another process may still carry the record that names it.) */
    if (published && !op.handoff_uncertain) (void)suc_os_unlinkat(final_dirfd, SUC_BODY_NAME(final_path), 0);
    suc_os_close(final_dirfd);
    suc_op_release(&op);
    free(op.selector);
    free(meta);
    suc_writer_abort(w);
    return rc;
}

/* Whether the first 64 KiB of a large body shrink by at least 3%. A body that will spill to
 * its file before the end cannot be re-stored raw afterwards, so decide up front (suc_put, on
 * a whole body; every streamed body, on its first PROBE_BYTES: writer_decide). */
static int probe_compressible(suc_cache *c, const uint8_t *body) {
    enum { SAMPLE = 65536 };
    z_stream *zs = suc_zpool_take_deflate(c);
    if (!zs) return 1;
    uLong bound = deflateBound(zs, SAMPLE);
    uint8_t *out = malloc(bound);
    int compressible = 1;
    if (out) {
        zs->next_in = (Bytef *)body;
        zs->avail_in = SAMPLE;
        zs->next_out = out;
        zs->avail_out = (uInt)bound;
        if (deflate(zs, Z_FINISH) == Z_STREAM_END) compressible = zs->total_out < SAMPLE - SAMPLE / 32;
        free(out);
    }
    suc_zpool_give_deflate(c, zs);
    return compressible;
}

/* A whole body in memory: one libdeflate call into the writer's buffer (w was begun raw, so it
 * holds no zlib stream), or the raw bytes when the stream would be no smaller than the body:
 * reads then skip inflate, and the file is not larger than the body. */
static int writer_put_whole(suc_writer *w, const uint8_t *body, size_t len, int compress, suc_error *err) {
    int rc = buf_reserve(w, len, err);
    if (rc) return rc;
    size_t stored = 0;
    if (compress && (rc = suc_body_compress(w->c, body, len, w->buf + w->len, len - 1, &stored, err))) return rc;
    w->raw = stored == 0;
    if (w->raw) {
        memcpy(w->buf + w->len, body, len);
        stored = len;
    }
    w->len += stored;
    w->stored_size = stored;
    w->body_size = len;
    w->crc = suc_crc32(0, body, len);
    w->finished = 1;
    return SUC_OK;
}

int suc_put(suc_cache *c, const suc_put_params *p, const void *body, size_t body_len,
            uint64_t *out_version, suc_error *err) {
    if (!c) return suc_fail(err, SUC_EINVAL, "suc_cache", 0, 0, "NULL cache handle");
    if (body_len && !body) return suc_fail(err, SUC_EINVAL, "suc_put", 0, 0, "NULL body with a length");
    /* Before any work: a body over the limit is refused whole, whichever path would store it. */
    if (body_len > c->opts.max_body_bytes)
        return suc_fail(err, SUC_ETOOLARGE, "suc_put", 0, 0, "body exceeds the limit of %llu bytes",
                        (unsigned long long)c->opts.max_body_bytes);
    uint32_t flags = p ? p->flags : 0;
    if (body_len == 0) flags |= SUC_PUT_RAW; /* nothing to compress */
    suc_writer *w;
    int rc;
    if (body_len <= WHOLE_BODY_MAX) {
        /* A large body that does not compress (media, archives) is stored raw without a full pass. */
        if (!(flags & SUC_PUT_RAW) && body_len > SPILL_BYTES && !probe_compressible(c, body))
            flags |= SUC_PUT_RAW;
        if ((rc = suc_writer_begin(c, flags | SUC_PUT_RAW, &w, err))) return rc;
        rc = writer_put_whole(w, body, body_len, !(flags & SUC_PUT_RAW), err);
    } else {
        /* Streamed: the writer probes the first PROBE_BYTES itself (writer_decide). */
        if ((rc = suc_writer_begin(c, flags, &w, err))) return rc;
        rc = suc_writer_append(w, body, body_len, err);
    }
    if (rc) {
        suc_writer_abort(w);
        return rc;
    }
    return suc_writer_commit(w, p, out_version, err);
}
