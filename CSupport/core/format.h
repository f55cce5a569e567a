/*
 * format.h — the bytes on disk the core reads and writes: index keys, index records, the body
 * file header, little-endian fields. Pure functions of their inputs; no handle, no I/O.
 * Not installed, not seen by Swift; a file includes its own layer's header (scripts/core-layers.py).
 */
#ifndef SUC_FORMAT_H
#define SUC_FORMAT_H

#include "os.h"

#include <stddef.h>
#include <stdint.h>

/* ---- index keys ----------------------------------------------------------------------- */

/* Index key of an entry: SHA-256(key) ‖ SHA-256(variant)[0..16]. All variants of one key share
 * the 32-byte prefix, so they sit next to each other and one cursor range lists them. */
#define SUC_KEY_HASH_LEN 32
#define SUC_VARIANT_HASH_LEN 16
#define SUC_IKEY_LEN (SUC_KEY_HASH_LEN + SUC_VARIANT_HASH_LEN)
/* Secondary index keys: big-endian time (8 bytes, sign-flipped so order holds) ‖ ikey. */
#define SUC_TKEY_LEN (8 + SUC_IKEY_LEN)

void suc_sha256(const void *data, size_t len, uint8_t out[32]);
void suc_ikey_make(const void *key, size_t key_len, const void *variant, size_t variant_len,
                   uint8_t out[SUC_IKEY_LEN]);
void suc_tkey_make(int64_t t, const uint8_t ikey[SUC_IKEY_LEN], uint8_t out[SUC_TKEY_LEN]);
int64_t suc_tkey_time(const uint8_t tkey[SUC_TKEY_LEN]);

/* ---- index record (record.c) ------------------------------------------------------------ */

#define SUC_BODY_ID_LEN 16
#define SUC_RECORD_FIXED_LEN 96
/* The largest body size a record may claim (1 TiB): far above any configured limit, far below
 * INT64_MAX, so a damaged size is refused at decode instead of overflowing a caller. */
#define SUC_RECORD_MAX_BODY_SIZE (UINT64_C(1) << 40)
#define SUC_RECORD_FORMAT ((SUC_RECORD_FORMAT_MAJOR << 8) | SUC_RECORD_FORMAT_MINOR)
/* The longest record copy a body file may end with (a record's head, userInfo and tags are far
 * shorter): a damaged length is refused at decode. The compactor's walk uses the same bound. */
#define SUC_RECORD_MAX_COPY_LEN (64u << 20)

#define SUC_REC_INLINE 0x1u
#define SUC_REC_RAW 0x2u

/* A decoded record; the byte fields point into the buffer that was decoded. */
typedef struct suc_record {
    uint16_t flags;
    uint64_t version;
    int64_t stored_at_ms;
    int64_t last_used_ms;
    uint64_t body_size;
    uint64_t stored_size;
    uint32_t body_crc;
    uint32_t app_flags;
    uint8_t body_id[SUC_BODY_ID_LEN];
    const uint8_t *key; uint32_t key_len;
    const uint8_t *variant; uint32_t variant_len;
    const uint8_t *partition; uint32_t partition_len;
    const uint8_t *head; uint32_t head_len;
    const uint8_t *user_info; uint32_t user_info_len;
    const uint8_t *inline_body; /* stored bytes, stored_size long, when SUC_REC_INLINE */
    const uint8_t *tags; uint32_t tags_len; /* each tag ended by '\n'; format 0.2 */
    uint32_t invalidated_at_s;  /* soft purge time, seconds since 1970; 0 = none; format 0.2 */
    uint32_t body_record_len;   /* length of the record copy ending the body file when it is not
                                   this record's own (a head refreshed by a 304); 0 = its own;
                                   format 0.3 */
} suc_record;

/* The length of the record copy that ends `r`'s body file: the record that wrote the file, which
 * a refreshed record (suc_refresh) is not. `rec_len` is the length of `r`'s own encoding. */
static inline size_t suc_record_copy_len(const suc_record *r, size_t rec_len) {
    return r->body_record_len ? r->body_record_len : rec_len;
}

/* Size of the encoding of `r` (fixed part + variable fields + inline body if flagged). */
size_t suc_record_size(const suc_record *r);
/* Encodes `r` into `out` (suc_record_size(r) bytes). */
void suc_record_encode(const suc_record *r, uint8_t *out);
/* Decodes and bounds-checks; SUC_ECORRUPT on anything unexpected, never reads out of bounds. */
int suc_record_decode(const uint8_t *buf, size_t len, suc_record *out);
/* Bytes the entry's body takes on disk, as the stored_bytes counter counts them: the stored body
 * when inline, else the whole body file (header + stored body + the record copy of `rec_len`). */
uint64_t suc_record_stored_bytes(const suc_record *r, size_t rec_len);
/* Patches the version / last-use fields of an encoded record in place. */
void suc_record_patch_version(uint8_t *buf, uint64_t version);
/* Bytes the entry's body file takes on disk as `du` counts it: its length rounded up to whole
 * SUC_DISK_BLOCK blocks (0 for an inline body). A constant, not the file system's block size,
 * so every process adds and subtracts the same figure (docs/Capacity.md). */
#define SUC_DISK_BLOCK 4096u
uint64_t suc_record_file_bytes(const suc_record *r, size_t rec_len);
void suc_record_patch_last_used(uint8_t *buf, int64_t last_used_ms);
/* Marks a record soft-purged at `invalidated_at_s` (format 0.2; same length). */
void suc_record_patch_invalidated(uint8_t *buf, uint32_t invalidated_at_s);

/* ---- body files' format --------------------------------------------------------------- */

#define SUC_BODY_HEADER_LEN 48
#define SUC_BODY_FORMAT ((SUC_BODY_FORMAT_MAJOR << 8) | SUC_BODY_FORMAT_MINOR)
/* A body file's format field is readable by this build: same major (docs/Formats.md). */
static inline int suc_body_format_readable(uint16_t format) { return (format >> 8) == SUC_BODY_FORMAT_MAJOR; }

/* ---- the body file's header (body_header.c) ---- */

typedef struct suc_body_header {
    int raw;
    uint64_t body_size, stored_size;
    uint32_t body_crc, record_len;
} suc_body_header;
/* The header of the file that holds `rec`'s body, followed by a record copy of `record_len`. */
void suc_body_header_encode(const suc_record *rec, uint32_t record_len, uint8_t out[SUC_BODY_HEADER_LEN]);
/* Decodes `len` bytes read from the start of the file named `id`. SUC_ECORRUPT: short, not a
 * body header, or another file's; SUC_EVERSION: a body format this build does not read. */
int suc_body_header_decode(const uint8_t *h, size_t len, const uint8_t id[SUC_BODY_ID_LEN], suc_body_header *out);
/* What every reader checks before it trusts a body file: the header decodes and says what the
 * record says. SUC_OK, SUC_ECORRUPT or SUC_EVERSION (with `err` filled). */
int suc_body_header_check(const uint8_t *h, size_t len, const suc_record *rec, uint32_t record_len, suc_error *err);

/* ---- byte order: little endian in values, big endian in keys ------------------------ */

static inline void suc_put_u16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void suc_put_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline void suc_put_u64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint16_t suc_get_u16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t suc_get_u32(const uint8_t *p) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}
static inline uint64_t suc_get_u64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

/* Big endian, for numbers in keys: key order is then number order. */
static inline void suc_put_be64(uint8_t *p, uint64_t v) {
    for (int i = 7; i >= 0; i--, v >>= 8) p[i] = (uint8_t)v;
}
static inline uint64_t suc_get_be64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = (v << 8) | p[i];
    return v;
}

#endif
