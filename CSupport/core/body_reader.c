/*
 * body_reader.c — streaming a body out of the cache with bounded memory.
 *
 * suc_body_read (body.c) reads, checks and inflates a whole body into one buffer; that is the
 * fast path for small bodies and what suc_get uses. A 50 MiB body would then sit in memory
 * twice (stored + logical bytes). The reader makes the same checks in the same places, but
 * holds at most one READ_CHUNK of stored bytes plus an inflate state:
 *
 *   open   the record copy is decoded; the body file is opened relative to its fan-out
 *          directory (O_NOFOLLOW|O_NONBLOCK: no symlink, no FIFO), fstat'd (regular file of
 *          exactly header + stored + record copy bytes) and its header compared with the
 *          record. A failure here is a miss and a purge, as in suc_get.
 *   read   stored bytes come in by pread (never mmap: a concurrent truncation is a short read,
 *          not SIGBUS, docs/Reliability.md §3.4) and are inflated into the caller's buffer, never past
 *          the recorded length (decompression bombs end there).
 *   end    the read that produces the last byte also proves the body: the zlib stream must
 *          reach Z_STREAM_END (inflate verifies the Adler-32 trailer there) with no input left,
 *          a raw body's CRC-32 must match, and the file must still have its recorded size. If
 *          not, that read fails with SUC_ECORRUPT instead of ending the body, and the entry is
 *          purged if it is still the version that was read.
 *
 * Encoded mode (suc_body_reader_open_encoded) hands out the stored zlib stream itself, for an
 * HTTP response with Content-Encoding deflate or gzip (docs/Proxy.md, "Compressed passthrough"):
 * the same open checks and the same end check of the file's size, but no inflate, so the
 * stream's own checksum is verified by the client's decoder, not here.
 *
 * A file unlinked by another process while we read stays readable through our descriptor
 * (unlink removes the name, not the open file), so a concurrent remove or replace never tears
 * a body that is being streamed: the reader finishes the version it opened.
 */
#include "operations.h"
#include "os.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Stored bytes read per pread for compressed file bodies (raw bodies go straight into the
 * caller's buffer). */
#define READ_CHUNK (64u * 1024u)

enum { READING = 0, ENDED = 1 };

struct suc_body_reader {
    suc_cache *c;
    uint8_t *record; /* own copy of the index record; rec's byte fields point into it */
    size_t record_len;
    suc_record rec;
    uint8_t ikey[SUC_IKEY_LEN];
    int fd;                  /* -1 for an inline body */
    uint64_t file_size;      /* the size fstat must still report at the end */
    uint64_t in_off;         /* stored bytes taken from the file or record so far */
    uint64_t out_done;       /* logical bytes handed out so far */
    z_stream *zs;            /* compressed bodies */
    int stream_end;
    uint8_t *chunk;          /* READ_CHUNK bytes, compressed file bodies */
    uint32_t crc;            /* raw bodies */
    int skipped_raw;         /* raw bytes were skipped, so crc is not the body's */
    int state;               /* READING, ENDED, or the SUC_E* code of the failure */
    int encoded;             /* hands out the stored bytes (suc_body_reader_open_encoded) */
    suc_error failure;       /* detail of that failure, repeated on every later call */
};

uint64_t suc_body_reader_size(const suc_body_reader *r) {
    if (!r) return 0;
    return r->encoded ? r->rec.stored_size : r->rec.body_size;
}

uint64_t suc_body_reader_logical_size(const suc_body_reader *r) { return r ? r->rec.body_size : 0; }

uint32_t suc_body_reader_crc32(const suc_body_reader *r) { return r ? r->rec.body_crc : 0; }

void suc_body_reader_close(suc_body_reader *r) {
    if (!r) return;
    suc_os_close(r->fd);
    suc_zpool_give_inflate(r->c, r->zs);
    free(r->chunk);
    free(r->record);
    free(r);
}

/* Records a failure for good; bad stored data (SUC_ECORRUPT) also purges the entry, if it is
 * still the version we read (a remove or replace since then has already dealt with it). */
static int reader_fail(suc_body_reader *r, int rc, suc_error *err) {
    if (err) r->failure = *err;
    else r->failure = (suc_error){.code = rc, .op = "body reader"};
    r->state = rc;
    if (rc == SUC_ECORRUPT) suc_index_purge_if(r->c, r->ikey, r->rec.version);
    return rc;
}

/* Copies `len` stored bytes at the current input offset into `dst`. */
static int fetch(suc_body_reader *r, uint8_t *dst, size_t len, suc_error *err) {
    if (r->fd < 0) {
        memcpy(dst, r->rec.inline_body + r->in_off, len);
        return SUC_OK;
    }
    ssize_t got = suc_os_pread_full(r->fd, dst, len, (off_t)(SUC_BODY_HEADER_LEN + r->in_off));
    if (got < 0) return suc_fail_errno(err, "pread(body)", errno);
    if ((size_t)got != len)
        return suc_fail(err, SUC_ECORRUPT, "pread(body)", 0, 0, "body file is shorter than its record says");
    return SUC_OK;
}

/* Makes the next stored bytes available to inflate: the record copy in place for inline bodies,
 * else one READ_CHUNK from the file. SUC_ECORRUPT when the recorded stored bytes are used up. */
static int feed(suc_body_reader *r, suc_error *err) {
    uint64_t left = r->rec.stored_size - r->in_off;
    if (left == 0)
        return suc_fail(err, SUC_ECORRUPT, "inflate", 0, Z_BUF_ERROR, "body stream ends before its recorded length");
    if (r->fd < 0) {
        uInt n = left > (1u << 30) ? (1u << 30) : (uInt)left;
        r->zs->next_in = (Bytef *)(r->rec.inline_body + r->in_off);
        r->zs->avail_in = n;
        r->in_off += n;
        return SUC_OK;
    }
    size_t n = left > READ_CHUNK ? READ_CHUNK : (size_t)left;
    int rc = fetch(r, r->chunk, n, err);
    if (rc) return rc;
    r->zs->next_in = r->chunk;
    r->zs->avail_in = (uInt)n;
    r->in_off += n;
    return SUC_OK;
}

static int inflate_failure(int zrc, suc_error *err) {
    if (zrc == Z_MEM_ERROR) return suc_fail(err, SUC_ENOMEM, "inflate", 0, zrc, "inflate: out of memory");
    return suc_fail(err, SUC_ECORRUPT, "inflate", 0, zrc, "body stream is corrupt (zlib rc %d)", zrc);
}

/* Inflates into zs->next_out until avail_out is used up or the stream ends. */
static int inflate_some(suc_body_reader *r, suc_error *err) {
    z_stream *zs = r->zs;
    while (zs->avail_out > 0 && !r->stream_end) {
        if (zs->avail_in == 0) {
            int rc = feed(r, err);
            if (rc) return rc;
        }
        int zrc = inflate(zs, Z_NO_FLUSH);
        if (zrc == Z_STREAM_END) r->stream_end = 1;
        else if (zrc == Z_BUF_ERROR && zs->avail_in == 0) continue; /* needs more input */
        else if (zrc != Z_OK) return inflate_failure(zrc, err);
    }
    return SUC_OK;
}

/* The body has produced its recorded length: prove it is the body that was stored. */
static int finish(suc_body_reader *r, suc_error *err) {
    if (r->rec.flags & SUC_REC_RAW) {
        if (!r->skipped_raw && r->crc != r->rec.body_crc)
            return suc_fail(err, SUC_ECORRUPT, "crc32", 0, 0, "body checksum mismatch");
    } else {
        /* Past the last logical byte only the stream's end (and its Adler-32) may follow: one
         * byte of room is enough to tell a longer stream from a finished one. */
        uint8_t extra;
        r->zs->next_out = &extra;
        r->zs->avail_out = 1;
        int rc = inflate_some(r, err);
        if (rc) return rc;
        if (r->zs->avail_out == 0)
            return suc_fail(err, SUC_ECORRUPT, "inflate", 0, 0, "body stream is longer than its recorded length");
        if (r->zs->avail_in != 0 || r->in_off != r->rec.stored_size)
            return suc_fail(err, SUC_ECORRUPT, "inflate", 0, 0, "bytes follow the body stream");
    }
    if (r->fd >= 0) {
        struct stat st;
        if (suc_os_fstat(r->fd, &st) < 0) return suc_fail_errno(err, "fstat(body)", errno);
        if ((uint64_t)st.st_size != r->file_size)
            return suc_fail(err, SUC_ECORRUPT, "fstat(body)", 0, 0, "body file changed size while it was read");
    }
    return SUC_OK;
}

/* Encoded mode: the stored bytes as they are; at their end, the file must still have its size. */
static int read_encoded(suc_body_reader *r, void *buf, size_t cap, size_t *out_len, suc_error *err) {
    uint64_t left = r->rec.stored_size - r->in_off;
    size_t want = left < cap ? (size_t)left : cap;
    int rc;
    if (want > 0 && (rc = fetch(r, buf, want, err))) return reader_fail(r, rc, err);
    r->in_off += want;
    if (r->in_off == r->rec.stored_size) {
        struct stat st;
        if (r->fd >= 0 && suc_os_fstat(r->fd, &st) == 0 && (uint64_t)st.st_size != r->file_size)
            return reader_fail(r, suc_fail(err, SUC_ECORRUPT, "fstat(body)", 0, 0, "body file changed size while it was read"), err);
        r->state = ENDED;
    }
    *out_len = want;
    return SUC_OK;
}

int suc_body_reader_read(suc_body_reader *r, void *buf, size_t cap, size_t *out_len, suc_error *err) {
    *out_len = 0;
    if (!r || (!buf && cap)) return suc_fail(err, SUC_EINVAL, "suc_body_reader_read", 0, 0, "invalid argument");
    if (r->state == ENDED) return SUC_OK;
    if (r->state != READING) {
        if (err) *err = r->failure;
        return r->state;
    }
    int rc = suc_cache_check_fork(r->c, err);
    if (rc) return rc;
    if (r->encoded) return read_encoded(r, buf, cap, out_len, err);
    uint64_t left = r->rec.body_size - r->out_done;
    size_t want = left < cap ? (size_t)left : cap;
    if (want > (1u << 30)) want = 1u << 30; /* zlib and crc32 take uInt lengths */
    if (want > 0) {
        if (r->rec.flags & SUC_REC_RAW) {
            if ((rc = fetch(r, buf, want, err))) return reader_fail(r, rc, err);
            r->crc = suc_crc32(r->crc, buf, want);
            r->in_off += want;
        } else {
            if (suc_os_fault(SUC_FAULT_INFLATE))
                return reader_fail(r, suc_fail(err, SUC_ENOMEM, "inflate", 0, Z_MEM_ERROR, "inflate: injected fault"), err);
            r->zs->next_out = buf;
            r->zs->avail_out = (uInt)want;
            if ((rc = inflate_some(r, err))) return reader_fail(r, rc, err);
            want -= r->zs->avail_out;
            if (r->stream_end && r->out_done + want < r->rec.body_size)
                return reader_fail(r, suc_fail(err, SUC_ECORRUPT, "inflate", 0, Z_STREAM_END,
                                               "body stream ends before its recorded length"), err);
        }
    }
    if (r->out_done + want == r->rec.body_size) {
        /* This read produces the last byte (or the body is empty): it ends only if it checks. */
        if ((rc = finish(r, err))) return reader_fail(r, rc, err);
        r->state = ENDED;
    }
    r->out_done += want;
    *out_len = want;
    return SUC_OK;
}

int suc_body_reader_skip(suc_body_reader *r, uint64_t count, suc_error *err) {
    if (!r || r->encoded || count > r->rec.body_size - r->out_done)
        return suc_fail(err, SUC_EINVAL, "suc_body_reader_skip", 0, 0, "invalid argument");
    if (count == 0 || r->state == ENDED) return SUC_OK;
    if (r->state != READING) {
        if (err) *err = r->failure;
        return r->state;
    }
    int rc = suc_cache_check_fork(r->c, err);
    if (rc) return rc;
    if (r->rec.flags & SUC_REC_RAW) {
        r->in_off += count;
        r->out_done += count;
        r->skipped_raw = 1;
        return SUC_OK;
    }
    /* Inflated and dropped, through the read path: its checks, and its end check when the skip
     * reaches the end of the body. */
    uint8_t scratch[16384];
    while (count > 0) {
        size_t got = 0;
        rc = suc_body_reader_read(r, scratch, count < sizeof scratch ? (size_t)count : sizeof scratch, &got, err);
        if (rc) return rc;
        if (got == 0) break; /* cannot happen below the recorded length */
        count -= got;
    }
    return SUC_OK;
}

/* Opens and checks the body file of r->rec; see suc_body_read for the reasons of each check. */
static int open_file(suc_body_reader *r, suc_error *err) {
    suc_cache *c = r->c;
    char path[SUC_BODY_PATH_LEN];
    suc_body_path(r->rec.body_id, path);
    int dirfd = suc_body_open_fanout(c, r->rec.body_id, 0);
    if (dirfd < 0) {
        int e = errno;
        if (e == ENOENT) return suc_fail(err, SUC_ENOTFOUND, "openat(fan-out)", e, 0, "body directory is gone");
        if (e == ELOOP || e == ENOTDIR)
            return suc_fail(err, SUC_ECORRUPT, "openat(fan-out)", e, 0, "body directory is not a real directory");
        return suc_fail_errno(err, "openat(fan-out)", e);
    }
    r->fd = suc_os_openat(dirfd, SUC_BODY_NAME(path), O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
    int e = errno;
    suc_os_close(dirfd);
    if (r->fd < 0) {
        if (e == ENOENT) return suc_fail(err, SUC_ENOTFOUND, "openat(body)", e, 0, "body file is gone");
        if (e == ELOOP || e == ENOTDIR || e == EISDIR || e == ENXIO)
            return suc_fail(err, SUC_ECORRUPT, "openat(body)", e, 0, "body path is not a regular file");
        return suc_fail_errno(err, "openat(body)", e);
    }
    struct stat st;
    if (suc_os_fstat(r->fd, &st) < 0) return suc_fail_errno(err, "fstat(body)", errno);
    size_t copy_len = suc_record_copy_len(&r->rec, r->record_len); /* the body file's own record copy */
    r->file_size = SUC_BODY_HEADER_LEN + r->rec.stored_size + copy_len;
    if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != r->file_size)
        return suc_fail(err, SUC_ECORRUPT, "fstat(body)", 0, 0, "body file has size %lld, expected %llu",
                        (long long)st.st_size, (unsigned long long)r->file_size);
    uint8_t h[SUC_BODY_HEADER_LEN];
    ssize_t got = suc_os_pread_full(r->fd, h, sizeof h, 0);
    if (got < 0) return suc_fail_errno(err, "pread(body header)", errno);
    return suc_body_header_check(h, (size_t)got, &r->rec, (uint32_t)copy_len, err);
}

static int reader_open(suc_cache *c, const suc_entry *entry, int encoded, suc_body_reader **out, suc_error *err);

int suc_body_reader_open(suc_cache *c, const suc_entry *entry, suc_body_reader **out, suc_error *err) {
    return reader_open(c, entry, 0, out, err);
}

int suc_body_reader_open_encoded(suc_cache *c, const suc_entry *entry, suc_body_reader **out, suc_error *err) {
    *out = NULL;
    const suc_entry_view *v = entry ? suc_entry_get_view(entry) : NULL;
    if (!v || (v->flags & SUC_ENTRY_RAW))
        return suc_fail(err, SUC_EINVAL, "suc_body_reader_open_encoded", 0, 0, "the body is not stored compressed");
    return reader_open(c, entry, 1, out, err);
}

static int reader_open(suc_cache *c, const suc_entry *entry, int encoded, suc_body_reader **out, suc_error *err) {
    *out = NULL;
    int rc = suc_cache_check_fork(c, err);
    if (rc) return rc;
    if (!entry || !entry->record) return suc_fail(err, SUC_EINVAL, "suc_body_reader_open", 0, 0, "an entry is required");
    suc_body_reader *r = calloc(1, sizeof *r);
    if (!r) return suc_fail(err, SUC_ENOMEM, "calloc(reader)", ENOMEM, 0, "out of memory");
    r->c = c;
    r->fd = -1;
    r->encoded = encoded;
    r->crc = 0; /* the CRC-32 of nothing */
    r->record = suc_os_malloc(entry->record_len);
    if (!r->record) {
        rc = suc_fail(err, SUC_ENOMEM, "malloc(record)", ENOMEM, 0, "out of memory");
        goto out;
    }
    memcpy(r->record, entry->record, entry->record_len);
    r->record_len = entry->record_len;
    if (suc_record_decode(r->record, r->record_len, &r->rec) != SUC_OK) {
        /* suc_get decoded this very copy: only a caller's stray write gets here. */
        rc = suc_fail(err, SUC_EINVAL, "record", 0, 0, "the entry's record does not decode");
        goto out;
    }
    suc_ikey_make(r->rec.key, r->rec.key_len, r->rec.variant, r->rec.variant_len, r->ikey);
    const suc_record *rec = &r->rec;
    if (rec->body_size > c->opts.max_body_bytes || rec->stored_size > c->opts.max_body_bytes + 65536 ||
        ((rec->flags & SUC_REC_RAW) && rec->stored_size != rec->body_size)) {
        rc = suc_fail(err, SUC_ECORRUPT, "record", 0, 0, "recorded body sizes are out of bounds");
        goto out;
    }
    if (!(rec->flags & SUC_REC_INLINE) && (rc = open_file(r, err))) goto out;
    if (!(rec->flags & SUC_REC_RAW) && !encoded) {
        if (!(r->zs = suc_zpool_take_inflate(c))) {
            rc = suc_fail(err, SUC_ENOMEM, "inflateInit", 0, Z_MEM_ERROR, "inflateInit failed");
            goto out;
        }
        r->zs->next_in = Z_NULL;
        r->zs->avail_in = 0;
        if (r->fd >= 0 && !(r->chunk = suc_os_malloc(READ_CHUNK))) {
            rc = suc_fail(err, SUC_ENOMEM, "malloc(chunk)", ENOMEM, 0, "out of memory");
            goto out;
        }
    }

out:
    if (rc == SUC_ECORRUPT || rc == SUC_ENOTFOUND) {
        /* Nothing was handed out yet: a miss, and the entry goes if it is still this version
         * (a missing file after a concurrent remove finds the record gone or replaced). */
        suc_index_purge_if(c, r->ikey, r->rec.version);
        rc = SUC_ENOTFOUND; /* err keeps the detail */
    }
    if (rc == SUC_EVERSION) rc = SUC_ENOTFOUND; /* another release's body: a miss, left alone */
    if (rc) {
        suc_body_reader_close(r);
        return rc;
    }
    *out = r;
    return SUC_OK;
}
