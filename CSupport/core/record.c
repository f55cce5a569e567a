/*
 * record.c — the index record: versioned, fixed-width little-endian, bounds-checked.
 *
 * Every byte of a record may have been written by another user of the group, so decoding
 * trusts nothing: each length is checked against the buffer before use (docs/Reliability.md §3.4).
 *
 * Layout (format 0.1 and 0.2), offsets in bytes:
 *    0  u32  magic "SUCR"
 *    4  u16  format (1)
 *    6  u16  flags: 0x1 inline body, 0x2 raw (uncompressed) body
 *    8  u64  version (changes whenever the entry is replaced)
 *   16  i64  stored_at_ms
 *   24  i64  last_used_ms
 *   32  u64  body_size   (logical, uncompressed)
 *   40  u64  stored_size (bytes on disk: compressed or raw)
 *   48  u32  body_crc    (CRC-32 of the logical body)
 *   52  u32  app_flags   (opaque to the core)
 *   56  u8[16] body_id   (random; names bodies/xx/<hex>; zero when inline)
 *   72  u32  key_len
 *   76  u32  variant_len
 *   80  u32  partition_len
 *   84  u32  head_len
 *   88  u32  user_info_len
 *   92  u32  0.1: reserved (0). 0.2: invalidated_at, seconds since 1970 (0 = not invalidated)
 *   96  key, variant, partition, head, user_info, then the stored body when inline
 *  0.2 only, when the entry has tags: u32 tags_len, then the tags, each ended by '\n' (a later
 *       minor that adds more after it writes this field always, with 0 for no tags)
 *  0.3: u32 tags_len (always) and the tags, then u32 body_record_len: the length of the record
 *       copy that ends the body file, written when this record is not that copy (its head was
 *       refreshed by a 304 and the body file kept: suc_refresh); 0 in a later minor's record
 *       that is its own copy
 * The same bytes (without an inline body) end every body file, so the index can be rebuilt.
 *
 * Why two minors are written: a record with neither tags nor an invalidation is written as 0.1,
 * byte for byte what the release before wrote. A soft purge patches offsets 4 and 92 in place:
 * the record keeps its length, which must stay equal to the body file's record copy
 * (docs/Formats.md, "Tags and soft purge").
 */
#include "format.h"

#include <string.h>

#define REC_MAGIC 0x52435553u /* "SUCR" little-endian */

enum {
    OFF_MAGIC = 0, OFF_FORMAT = 4, OFF_FLAGS = 6, OFF_VERSION = 8, OFF_STORED_AT = 16,
    OFF_LAST_USED = 24, OFF_BODY_SIZE = 32, OFF_STORED_SIZE = 40, OFF_CRC = 48,
    OFF_APP_FLAGS = 52, OFF_BODY_ID = 56, OFF_KEY_LEN = 72, OFF_VARIANT_LEN = 76,
    OFF_PARTITION_LEN = 80, OFF_HEAD_LEN = 84, OFF_USER_INFO_LEN = 88, OFF_RESERVED = 92,
};
_Static_assert(OFF_BODY_ID + SUC_BODY_ID_LEN == OFF_KEY_LEN, "record layout");
_Static_assert(OFF_RESERVED + 4 == SUC_RECORD_FIXED_LEN, "record fixed length");

size_t suc_record_size(const suc_record *r) {
    size_t n = SUC_RECORD_FIXED_LEN + (size_t)r->key_len + r->variant_len + r->partition_len +
               r->head_len + r->user_info_len;
    if (r->flags & SUC_REC_INLINE) n += (size_t)r->stored_size;
    if (r->body_record_len) n += 4 + (size_t)r->tags_len + 4;
    else if (r->tags_len) n += 4 + (size_t)r->tags_len;
    return n;
}

/* The oldest minor that holds what the record carries: 0.1, 0.2 (tags, a soft purge) or 0.3 (a
 * body file written by another record), so a record an earlier release can read is written as
 * it would write it. */
static uint16_t record_format(const suc_record *r) {
    unsigned minor = r->body_record_len ? 3 : (r->tags_len || r->invalidated_at_s) ? 2 : 1;
    return (uint16_t)((SUC_RECORD_FORMAT_MAJOR << 8) | minor);
}

static uint8_t *put_bytes(uint8_t *p, const uint8_t *src, uint32_t len) {
    if (len) memcpy(p, src, len);
    return p + len;
}

void suc_record_encode(const suc_record *r, uint8_t *out) {
    suc_put_u32(out + OFF_MAGIC, REC_MAGIC);
    suc_put_u16(out + OFF_FORMAT, record_format(r));
    suc_put_u16(out + OFF_FLAGS, r->flags);
    suc_put_u64(out + OFF_VERSION, r->version);
    suc_put_u64(out + OFF_STORED_AT, (uint64_t)r->stored_at_ms);
    suc_put_u64(out + OFF_LAST_USED, (uint64_t)r->last_used_ms);
    suc_put_u64(out + OFF_BODY_SIZE, r->body_size);
    suc_put_u64(out + OFF_STORED_SIZE, r->stored_size);
    suc_put_u32(out + OFF_CRC, r->body_crc);
    suc_put_u32(out + OFF_APP_FLAGS, r->app_flags);
    memcpy(out + OFF_BODY_ID, r->body_id, SUC_BODY_ID_LEN);
    suc_put_u32(out + OFF_KEY_LEN, r->key_len);
    suc_put_u32(out + OFF_VARIANT_LEN, r->variant_len);
    suc_put_u32(out + OFF_PARTITION_LEN, r->partition_len);
    suc_put_u32(out + OFF_HEAD_LEN, r->head_len);
    suc_put_u32(out + OFF_USER_INFO_LEN, r->user_info_len);
    suc_put_u32(out + OFF_RESERVED, r->invalidated_at_s);
    uint8_t *p = out + SUC_RECORD_FIXED_LEN;
    p = put_bytes(p, r->key, r->key_len);
    p = put_bytes(p, r->variant, r->variant_len);
    p = put_bytes(p, r->partition, r->partition_len);
    p = put_bytes(p, r->head, r->head_len);
    p = put_bytes(p, r->user_info, r->user_info_len);
    if (r->flags & SUC_REC_INLINE) p = put_bytes(p, r->inline_body, (uint32_t)r->stored_size);
    if (r->tags_len || r->body_record_len) {
        suc_put_u32(p, r->tags_len);
        p = put_bytes(p + 4, r->tags, r->tags_len);
    }
    if (r->body_record_len) suc_put_u32(p, r->body_record_len);
}

int suc_record_decode(const uint8_t *buf, size_t len, suc_record *out) {
    if (len < SUC_RECORD_FIXED_LEN) return SUC_ECORRUPT;
    if (suc_get_u32(buf + OFF_MAGIC) != REC_MAGIC) return SUC_ECORRUPT;
    /* docs/Formats.md: another major is not ours to read (a miss, never purged); a newer minor
     * only adds after what this layout knows, so it is read and the rest skipped. */
    uint16_t format = suc_get_u16(buf + OFF_FORMAT);
    if ((format >> 8) != SUC_RECORD_FORMAT_MAJOR) return SUC_EVERSION;
    unsigned minor = format & 0xff;
    if (minor == 0) return SUC_ECORRUPT;
    int newer_minor = minor > SUC_RECORD_FORMAT_MINOR;
    memset(out, 0, sizeof *out);
    out->flags = suc_get_u16(buf + OFF_FLAGS);
    if (out->flags & ~(SUC_REC_INLINE | SUC_REC_RAW)) return SUC_ECORRUPT;
    out->version = suc_get_u64(buf + OFF_VERSION);
    out->stored_at_ms = (int64_t)suc_get_u64(buf + OFF_STORED_AT);
    out->last_used_ms = (int64_t)suc_get_u64(buf + OFF_LAST_USED);
    out->body_size = suc_get_u64(buf + OFF_BODY_SIZE);
    out->stored_size = suc_get_u64(buf + OFF_STORED_SIZE);
    out->body_crc = suc_get_u32(buf + OFF_CRC);
    out->app_flags = suc_get_u32(buf + OFF_APP_FLAGS);
    memcpy(out->body_id, buf + OFF_BODY_ID, SUC_BODY_ID_LEN);
    out->key_len = suc_get_u32(buf + OFF_KEY_LEN);
    out->variant_len = suc_get_u32(buf + OFF_VARIANT_LEN);
    out->partition_len = suc_get_u32(buf + OFF_PARTITION_LEN);
    out->head_len = suc_get_u32(buf + OFF_HEAD_LEN);
    out->user_info_len = suc_get_u32(buf + OFF_USER_INFO_LEN);
    if (minor >= 2) out->invalidated_at_s = suc_get_u32(buf + OFF_RESERVED);
    else if (suc_get_u32(buf + OFF_RESERVED) != 0) return SUC_ECORRUPT;

    /* 64-bit sums of 32-bit lengths cannot overflow; compare against what is really there. */
    uint64_t need = (uint64_t)SUC_RECORD_FIXED_LEN + out->key_len + out->variant_len +
                    out->partition_len + out->head_len + out->user_info_len;
    if (out->flags & SUC_REC_INLINE) {
        if (out->stored_size > len) return SUC_ECORRUPT;
        need += out->stored_size;
    }
    if (need > len) return SUC_ECORRUPT;
    uint64_t base = need;
    if (minor >= 2 && len - need >= 4) { /* the optional tag list */
        out->tags_len = suc_get_u32(buf + need);
        need += 4 + (uint64_t)out->tags_len;
        if (need > len || (out->tags_len && buf[need - 1] != '\n')) return SUC_ECORRUPT;
    }
    if (minor >= 3) { /* the length of the body file's record copy */
        if (len - need < 4) return SUC_ECORRUPT;
        out->body_record_len = suc_get_u32(buf + need);
        need += 4;
        /* 0: the body file ends with this record's own copy (what a later minor writes when it
         * has no refreshed head); else a record's length, and never with an inline body. */
        if (out->body_record_len &&
            (out->body_record_len < SUC_RECORD_FIXED_LEN || out->body_record_len > SUC_RECORD_MAX_COPY_LEN ||
             (out->flags & SUC_REC_INLINE)))
            return SUC_ECORRUPT;
    }
    if (!newer_minor && need != len) return SUC_ECORRUPT;
    if (out->key_len == 0) return SUC_ECORRUPT;
    if ((out->flags & SUC_REC_RAW) && out->stored_size != out->body_size) return SUC_ECORRUPT;
    /* No writer produces a body near this size (the per-handle limit is far lower); a record
     * claiming one is damaged, and the sizes must stay representable as a signed length in
     * every binding (Swift's Int) — found by FuzzRecordDecode. */
    if (out->body_size > SUC_RECORD_MAX_BODY_SIZE || out->stored_size > SUC_RECORD_MAX_BODY_SIZE)
        return SUC_ECORRUPT;

    const uint8_t *p = buf + SUC_RECORD_FIXED_LEN;
    out->key = p; p += out->key_len;
    out->variant = p; p += out->variant_len;
    out->partition = p; p += out->partition_len;
    out->head = p; p += out->head_len;
    out->user_info = p; p += out->user_info_len;
    out->inline_body = (out->flags & SUC_REC_INLINE) ? p : NULL;
    out->tags = out->tags_len ? buf + base + 4 : NULL;
    return SUC_OK;
}

uint64_t suc_record_file_bytes(const suc_record *r, size_t rec_len) {
    if (r->flags & SUC_REC_INLINE) return 0;
    uint64_t len = SUC_BODY_HEADER_LEN + r->stored_size + suc_record_copy_len(r, rec_len);
    return (len + SUC_DISK_BLOCK - 1) / SUC_DISK_BLOCK * SUC_DISK_BLOCK;
}

uint64_t suc_record_stored_bytes(const suc_record *r, size_t rec_len) {
    return (r->flags & SUC_REC_INLINE) ? r->stored_size
                                        : SUC_BODY_HEADER_LEN + r->stored_size + suc_record_copy_len(r, rec_len);
}

void suc_record_patch_version(uint8_t *buf, uint64_t version) { suc_put_u64(buf + OFF_VERSION, version); }

void suc_record_patch_invalidated(uint8_t *buf, uint32_t invalidated_at_s) {
    if ((suc_get_u16(buf + OFF_FORMAT) & 0xff) < 2) suc_put_u16(buf + OFF_FORMAT, (SUC_RECORD_FORMAT_MAJOR << 8) | 2);
    suc_put_u32(buf + OFF_RESERVED, invalidated_at_s);
}

void suc_record_patch_last_used(uint8_t *buf, int64_t last_used_ms) {
    suc_put_u64(buf + OFF_LAST_USED, (uint64_t)last_used_ms);
}
