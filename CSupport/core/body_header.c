/*
 * body_header.c — the 48-byte header of a body file: the one codec the writer, both readers
 * (whole body and streaming) and verify use, so each checks what the others check.
 *
 * Layout of bodies/xx/<32 hex> (format 1), offsets in bytes, little-endian:
 *    0  u32  magic "SUCB"
 *    4  u16  format (major << 8 | minor)
 *    6  u16  flags: 0x2 raw (uncompressed)
 *    8  u64  body_size   (logical)
 *   16  u64  stored_size (payload bytes that follow the header)
 *   24  u32  body_crc    (CRC-32 of the logical body)
 *   28  u32  record_len  (length of the trailing record copy)
 *   32  u8[16] body_id   (equals the file name; catches swapped files)
 *   48  payload: a zlib stream, or the raw body
 *   48+stored_size  the index record (format of record.c, without an inline body), for rebuilds
 *
 * Every byte may have been written by another member of the group: decoding trusts nothing.
 */
#include "format.h"

#include <string.h>

#define BODY_MAGIC 0x42435553u /* "SUCB" little-endian */

enum {
    OFF_MAGIC = 0, OFF_FORMAT = 4, OFF_FLAGS = 6, OFF_BODY_SIZE = 8, OFF_STORED_SIZE = 16,
    OFF_CRC = 24, OFF_RECORD_LEN = 28, OFF_BODY_ID = 32,
};
_Static_assert(OFF_BODY_ID + SUC_BODY_ID_LEN == SUC_BODY_HEADER_LEN, "body header layout");

void suc_body_header_encode(const suc_record *rec, uint32_t record_len, uint8_t out[SUC_BODY_HEADER_LEN]) {
    suc_put_u32(out + OFF_MAGIC, BODY_MAGIC);
    suc_put_u16(out + OFF_FORMAT, SUC_BODY_FORMAT);
    suc_put_u16(out + OFF_FLAGS, (uint16_t)(rec->flags & SUC_REC_RAW));
    suc_put_u64(out + OFF_BODY_SIZE, rec->body_size);
    suc_put_u64(out + OFF_STORED_SIZE, rec->stored_size);
    suc_put_u32(out + OFF_CRC, rec->body_crc);
    suc_put_u32(out + OFF_RECORD_LEN, record_len);
    memcpy(out + OFF_BODY_ID, rec->body_id, SUC_BODY_ID_LEN);
}

int suc_body_header_decode(const uint8_t *h, size_t len, const uint8_t id[SUC_BODY_ID_LEN], suc_body_header *out) {
    if (len < SUC_BODY_HEADER_LEN || suc_get_u32(h + OFF_MAGIC) != BODY_MAGIC) return SUC_ECORRUPT;
    if (!suc_body_format_readable(suc_get_u16(h + OFF_FORMAT))) return SUC_EVERSION;
    if (memcmp(h + OFF_BODY_ID, id, SUC_BODY_ID_LEN) != 0) return SUC_ECORRUPT;
    out->raw = (suc_get_u16(h + OFF_FLAGS) & SUC_REC_RAW) != 0;
    out->body_size = suc_get_u64(h + OFF_BODY_SIZE);
    out->stored_size = suc_get_u64(h + OFF_STORED_SIZE);
    out->body_crc = suc_get_u32(h + OFF_CRC);
    out->record_len = suc_get_u32(h + OFF_RECORD_LEN);
    return SUC_OK;
}

int suc_body_header_check(const uint8_t *h, size_t len, const suc_record *rec, uint32_t record_len, suc_error *err) {
    suc_body_header got;
    int rc = suc_body_header_decode(h, len, rec->body_id, &got);
    if (rc == SUC_EVERSION)
        return suc_fail(err, SUC_EVERSION, "body header", 0, 0,
                        "body file of another format; left for the release that wrote it");
    if (rc || got.raw != ((rec->flags & SUC_REC_RAW) != 0) || got.body_size != rec->body_size ||
        got.stored_size != rec->stored_size || got.body_crc != rec->body_crc || got.record_len != record_len)
        return suc_fail(err, SUC_ECORRUPT, "body header", 0, 0, "body file header does not match its record");
    return SUC_OK;
}
