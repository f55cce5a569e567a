/*
 * body.c — body files: the file format, reading with checks, and the zlib stream pools.
 *
 * The file's layout and its header's codec are in body_header.c.
 *
 * Why pread and not mmap: another process may truncate the file under us; pread then returns
 * a short count, where a mapping would raise SIGBUS (docs/Reliability.md §3.4).
 */
#include "operations.h"
#include "os.h"

#include <errno.h>
#include <fcntl.h>
#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>



/* ---- zlib pools --------------------------------------------------------------------- */

z_stream *suc_zpool_take_deflate(suc_cache *c) {
    z_stream *zs = NULL;
    pthread_mutex_lock(&c->pool_mu);
    if (c->deflater_count > 0) zs = c->deflaters[--c->deflater_count];
    pthread_mutex_unlock(&c->pool_mu);
    if (zs) {
        if (deflateReset(zs) == Z_OK) return zs;
        deflateEnd(zs);
        free(zs);
    }
    zs = calloc(1, sizeof *zs);
    if (!zs) return NULL;
    if (deflateInit(zs, c->opts.compression_level) != Z_OK) {
        free(zs);
        return NULL;
    }
    return zs;
}

void suc_zpool_give_deflate(suc_cache *c, z_stream *zs) {
    if (!zs) return;
    pthread_mutex_lock(&c->pool_mu);
    if (c->deflater_count < SUC_ZPOOL_MAX) {
        c->deflaters[c->deflater_count++] = zs;
        zs = NULL;
    }
    pthread_mutex_unlock(&c->pool_mu);
    if (zs) {
        deflateEnd(zs);
        free(zs);
    }
}

z_stream *suc_zpool_take_inflate(suc_cache *c) {
    z_stream *zs = NULL;
    pthread_mutex_lock(&c->pool_mu);
    if (c->inflater_count > 0) zs = c->inflaters[--c->inflater_count];
    pthread_mutex_unlock(&c->pool_mu);
    if (zs) {
        if (inflateReset(zs) == Z_OK) return zs;
        inflateEnd(zs);
        free(zs);
    }
    zs = calloc(1, sizeof *zs);
    if (!zs) return NULL;
    if (inflateInit(zs) != Z_OK) {
        free(zs);
        return NULL;
    }
    return zs;
}

void suc_zpool_give_inflate(suc_cache *c, z_stream *zs) {
    if (!zs) return;
    pthread_mutex_lock(&c->pool_mu);
    if (c->inflater_count < SUC_ZPOOL_MAX) {
        c->inflaters[c->inflater_count++] = zs;
        zs = NULL;
    }
    pthread_mutex_unlock(&c->pool_mu);
    if (zs) {
        inflateEnd(zs);
        free(zs);
    }
}

/* ---- whole-body decoding state ------------------------------------------------------- */

/*
 * Whole bodies are decoded with libdeflate, which decodes the same zlib stream in one call and
 * builds its Huffman tables faster than zlib's inflate (zlib was about half of a 1 KiB hit's
 * time in the core, Benchmarks/RESULTS.md, "Where the time goes"). A decompressor is not thread-safe and costs
 * an allocation, so each thread keeps one, freed when the thread exits. Streaming reads
 * (body_reader.c) keep zlib's pooled streams.
 */
static pthread_key_t decompressor_key;
static pthread_once_t decompressor_once = PTHREAD_ONCE_INIT;
static int decompressor_key_ok;

static void free_decompressor(void *d) { libdeflate_free_decompressor(d); }

static void make_decompressor_key(void) {
    decompressor_key_ok = pthread_key_create(&decompressor_key, free_decompressor) == 0;
}

static struct libdeflate_decompressor *thread_decompressor(void) {
    pthread_once(&decompressor_once, make_decompressor_key);
    if (!decompressor_key_ok) return NULL;
    struct libdeflate_decompressor *d = pthread_getspecific(decompressor_key);
    if (d) return d;
    d = libdeflate_alloc_decompressor();
    if (d && pthread_setspecific(decompressor_key, d) != 0) {
        libdeflate_free_decompressor(d);
        d = NULL;
    }
    return d;
}

/* ---- whole-body encoding -------------------------------------------------------------- */

/*
 * A body handed over whole (suc_put) is compressed in one call: the same zlib stream a zlib
 * deflate writes, so readers and the format do not change. Above FIXED_CODES_MAX_BYTES it is
 * libdeflate's (a fraction of zlib's time, Benchmarks/RESULTS.md, "small bodies deflated with fixed codes"). Up to that size it is
 * zlib's deflate with fixed Huffman codes (Z_FIXED): a stream with codes of its own makes the
 * reader build its decoding tables on every hit, a cost that does not shrink with the body (a
 * 1 KiB JSON body's inflate: 12.2k instructions with its own codes, 6.1k with the fixed ones, whose
 * tables libdeflate builds once per decompressor). The price is a larger stream (1 KiB of JSON:
 * 215 bytes against 169; 2 KiB: +97 bytes; 4 KiB: +216), which grows with the body while the
 * saving does not: hence the limit.
 * Streamed bodies (suc_writer_append) keep zlib's deflate with its own codes, which takes its
 * input piece by piece. Each thread keeps one compressor of each kind for the level it last used;
 * caches opened with another level replace them.
 */
enum { FIXED_CODES_MAX_BYTES = 2048 };

struct thread_compressor {
    struct libdeflate_compressor *compressor; /* NULL until a body above FIXED_CODES_MAX_BYTES */
    int level;
    z_stream fixed;  /* deflate with fixed codes, for bodies up to FIXED_CODES_MAX_BYTES */
    int fixed_level; /* the level `fixed` was made for; -1: not made */
};
static pthread_key_t compressor_key;
static pthread_once_t compressor_once = PTHREAD_ONCE_INIT;
static int compressor_key_ok;

static void free_compressor(void *p) {
    struct thread_compressor *t = p;
    libdeflate_free_compressor(t->compressor);
    if (t->fixed_level >= 0) deflateEnd(&t->fixed);
    free(t);
}

static void make_compressor_key(void) {
    compressor_key_ok = pthread_key_create(&compressor_key, free_compressor) == 0;
}

static struct thread_compressor *thread_compressors(void) {
    pthread_once(&compressor_once, make_compressor_key);
    if (!compressor_key_ok) return NULL;
    struct thread_compressor *t = pthread_getspecific(compressor_key);
    if (t) return t;
    t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->fixed_level = -1;
    if (pthread_setspecific(compressor_key, t) != 0) {
        free(t);
        return NULL;
    }
    return t;
}

static struct libdeflate_compressor *thread_compressor(struct thread_compressor *t, int level) {
    if (t->compressor && t->level == level) return t->compressor;
    struct libdeflate_compressor *made = libdeflate_alloc_compressor(level);
    if (!made) return NULL;
    libdeflate_free_compressor(t->compressor);
    t->compressor = made;
    t->level = level;
    return made;
}

static z_stream *thread_fixed_deflater(struct thread_compressor *t, int level) {
    if (t->fixed_level == level) return deflateReset(&t->fixed) == Z_OK ? &t->fixed : NULL;
    if (t->fixed_level >= 0) deflateEnd(&t->fixed);
    t->fixed_level = -1;
    memset(&t->fixed, 0, sizeof t->fixed);
    if (deflateInit2(&t->fixed, level, Z_DEFLATED, 15, 8, Z_FIXED) != Z_OK) return NULL;
    t->fixed_level = level;
    return &t->fixed;
}

int suc_body_compress(suc_cache *c, const uint8_t *body, size_t len, uint8_t *out, size_t cap,
                      size_t *out_len, suc_error *err) {
    *out_len = 0;
    if (suc_os_fault(SUC_FAULT_MALLOC))
        return suc_fail(err, SUC_ENOMEM, "libdeflate_alloc_compressor", ENOMEM, 0, "injected fault");
    struct thread_compressor *t = thread_compressors();
    if (!t) return suc_fail(err, SUC_ENOMEM, "compressor", ENOMEM, 0, "out of memory");
    if (len <= FIXED_CODES_MAX_BYTES) {
        z_stream *zs = thread_fixed_deflater(t, c->opts.compression_level);
        if (!zs) return suc_fail(err, SUC_ENOMEM, "deflateInit2", ENOMEM, 0, "out of memory");
        zs->next_in = (Bytef *)body;
        zs->avail_in = (uInt)len;
        zs->next_out = out;
        zs->avail_out = (uInt)cap;
        if (deflate(zs, Z_FINISH) == Z_STREAM_END) *out_len = zs->total_out; /* else: not in cap */
        return SUC_OK;
    }
    struct libdeflate_compressor *compressor = thread_compressor(t, c->opts.compression_level);
    if (!compressor) return suc_fail(err, SUC_ENOMEM, "libdeflate_alloc_compressor", ENOMEM, 0, "out of memory");
    *out_len = libdeflate_zlib_compress(compressor, body, len, out, cap); /* 0: does not fit in cap */
    return SUC_OK;
}

/* ---- decoding ------------------------------------------------------------------------ */

/* libdeflate's CRC-32 is the same function as zlib's crc32() (gzip's polynomial), computed with
 * carry-less multiplication where the CPU has it: several times faster on large bodies. */
uint32_t suc_crc32(uint32_t crc, const void *bytes, size_t len) { return libdeflate_crc32(crc, bytes, len); }

uint32_t suc_checksum_crc32(uint32_t crc, const void *bytes, size_t len) { return len ? suc_crc32(crc, bytes, len) : crc; }

/*
 * Turns the stored bytes into the logical body. Inflation stops at the recorded length: a
 * stream that would produce more, or less, is corrupt (decompression bombs end here). For
 * zlib streams the Adler-32 in the stream trailer, which the decoder verifies, is the checksum;
 * raw bodies are checked against the recorded CRC-32.
 */
int suc_body_decode(suc_cache *c, const suc_record *rec, const uint8_t *stored, uint8_t *out,
                    suc_error *err) {
    if (rec->flags & SUC_REC_RAW) {
        if (rec->body_size) memcpy(out, stored, (size_t)rec->body_size);
        if (suc_crc32(0, out, (size_t)rec->body_size) != rec->body_crc)
            return suc_fail(err, SUC_ECORRUPT, "crc32", 0, 0, "body checksum mismatch");
        return SUC_OK;
    }
    (void)c;
    if (suc_os_fault(SUC_FAULT_INFLATE))
        return suc_fail(err, SUC_ENOMEM, "inflate", 0, Z_MEM_ERROR, "inflate: injected fault");
    struct libdeflate_decompressor *d = thread_decompressor();
    if (!d) return suc_fail(err, SUC_ENOMEM, "libdeflate_alloc_decompressor", ENOMEM, 0, "out of memory");
    /* The record knows the exact length, so the whole stream is decoded in one call: the output
     * buffer is exactly body_size, a longer stream fails (INSUFFICIENT_SPACE), a shorter one
     * fails (SHORT_OUTPUT), the Adler-32 trailer is verified (BAD_DATA) and bytes after the
     * stream's end are refused below. Same stream as zlib writes: no format change
     * (docs/Formats.md). */
    uint8_t dummy;
    size_t in_used = 0;
    enum libdeflate_result lr = libdeflate_zlib_decompress_ex(
        d, stored, (size_t)rec->stored_size, rec->body_size ? out : &dummy, (size_t)rec->body_size, &in_used, NULL);
    if (lr != LIBDEFLATE_SUCCESS || in_used != rec->stored_size)
        return suc_fail(err, SUC_ECORRUPT, "inflate", 0, (int)lr,
                        "body stream does not inflate to its recorded length (libdeflate rc %d)", (int)lr);
    return SUC_OK;
}

/* ---- reading ------------------------------------------------------------------------- */

int suc_body_read(suc_cache *c, const suc_record *rec, size_t record_len, uint8_t **out,
                  suc_error *err) {
    int rc = SUC_OK;
    int fd = -1;
    uint8_t *file = NULL, *body = NULL;
    char path[SUC_BODY_PATH_LEN];
    *out = NULL;

    if (rec->body_size > c->opts.max_body_bytes || rec->stored_size > c->opts.max_body_bytes + 65536) {
        rc = suc_fail(err, SUC_ECORRUPT, "record", 0, 0, "recorded body size exceeds the limit");
        goto out;
    }
    body = suc_os_malloc((size_t)rec->body_size);
    if (!body) {
        rc = suc_fail(err, SUC_ENOMEM, "malloc(body)", ENOMEM, 0, "out of memory");
        goto out;
    }
    if (rec->flags & SUC_REC_INLINE) {
        rc = suc_body_decode(c, rec, rec->inline_body, body, err);
        goto out;
    }

    suc_body_path(rec->body_id, path);
    int dirfd = suc_body_open_fanout(c, rec->body_id, 0);
    if (dirfd < 0) {
        int e = errno;
        rc = e == ENOENT ? suc_fail(err, SUC_ENOTFOUND, "openat(fan-out)", e, 0, "body directory is gone")
           : (e == ELOOP || e == ENOTDIR) ? suc_fail(err, SUC_ECORRUPT, "openat(fan-out)", e, 0, "body directory is not a real directory")
           : suc_fail_errno(err, "openat(fan-out)", e);
        goto out;
    }
    /* O_NONBLOCK: a FIFO planted at the path must not block us; O_NOFOLLOW: nor a symlink. */
    fd = suc_os_openat(dirfd, SUC_BODY_NAME(path), O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
    suc_os_close(dirfd);
    if (fd < 0) {
        int e = errno;
        if (e == ENOENT) /* removed by another process after our index read: a plain miss */
            rc = suc_fail(err, SUC_ENOTFOUND, "openat(body)", e, 0, "body file is gone");
        else if (e == ELOOP || e == ENOTDIR || e == EISDIR || e == ENXIO)
            rc = suc_fail(err, SUC_ECORRUPT, "openat(body)", e, 0, "body path is not a regular file");
        else
            rc = suc_fail_errno(err, "openat(body)", e);
        goto out;
    }
    struct stat st;
    if (suc_os_fstat(fd, &st) < 0) {
        rc = suc_fail_errno(err, "fstat(body)", errno);
        goto out;
    }
    record_len = suc_record_copy_len(rec, record_len); /* the body file's own record copy */
    uint64_t expect = SUC_BODY_HEADER_LEN + rec->stored_size + record_len;
    if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != expect) {
        rc = suc_fail(err, SUC_ECORRUPT, "fstat(body)", 0, 0,
                      "body file has size %lld, expected %llu", (long long)st.st_size,
                      (unsigned long long)expect);
        goto out;
    }
    size_t want = SUC_BODY_HEADER_LEN + (size_t)rec->stored_size;
    file = suc_os_malloc(want);
    if (!file) {
        rc = suc_fail(err, SUC_ENOMEM, "malloc(file)", ENOMEM, 0, "out of memory");
        goto out;
    }
    ssize_t got = suc_os_pread_full(fd, file, want, 0);
    if (got < 0) {
        rc = suc_fail_errno(err, "pread(body)", errno);
        goto out;
    }
    if ((size_t)got != want) {
        rc = suc_fail(err, SUC_ECORRUPT, "pread(body)", 0, 0, "body file is shorter than its record says");
        goto out;
    }
    if ((rc = suc_body_header_check(file, (size_t)got, rec, record_len, err))) goto out;
    rc = suc_body_decode(c, rec, file + SUC_BODY_HEADER_LEN, body, err);

out:
    suc_os_close(fd);
    free(file);
    if (rc == SUC_OK) {
        *out = body;
    } else {
        free(body);
    }
    return rc;
}
