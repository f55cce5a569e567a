/*
 * index_key.c — the index's keys: an entry's ikey (SHA-256 of its key ‖ of its variant) and the
 * time-order keys (time ‖ ikey). Part of the index file's format: these bytes never change.
 *
 */
/*
 * SHA-256 on the lookup path, through OpenSSL's low-level SHA256_Init/Update/Final: they call
 * the block function (SHA-NI where the CPU has it) on a context on the stack. The one-shot
 * SHA256() of OpenSSL 3 looks the algorithm up by name on every call, and EVP_Digest with the
 * algorithm fetched once still allocates and frees a context per call: measured on a 72-byte
 * key (natively, 5 M calls), EVP_Digest ~208 ns, SHA256_* ~114 ns; through SharedCache the change
 * made a miss of a new URL ~15% faster (Benchmarks/RESULTS.md, "a miss of a new URL"). The functions are deprecated in OpenSSL 3 in favour
 * of EVP, not removed; OPENSSL_API_COMPAT (set before the includes) keeps them without
 * warnings. The digests are the same bytes: index keys do not change.
 */
#define OPENSSL_API_COMPAT 0x10100000L
#include "format.h"

#include <openssl/sha.h>
#include <string.h>

/* The digest of the empty variant (every entry stored without Vary): SHA-256(""), truncated. */
static const uint8_t sha256_empty[SUC_VARIANT_HASH_LEN] = {0xe3, 0xb0, 0xc4, 0x42, 0x98, 0xfc, 0x1c, 0x14,
                                                           0x9a, 0xfb, 0xf4, 0xc8, 0x99, 0x6f, 0xb9, 0x24};

void suc_sha256(const void *data, size_t len, uint8_t out[32]) {
    SHA256_CTX ctx;
    SHA256_Init(&ctx);
    SHA256_Update(&ctx, data, len);
    SHA256_Final(out, &ctx);
}

void suc_ikey_make(const void *key, size_t key_len, const void *variant, size_t variant_len,
                   uint8_t out[SUC_IKEY_LEN]) {
    suc_sha256(key, key_len, out);
    if (variant_len) {
        uint8_t vh[SHA256_DIGEST_LENGTH];
        suc_sha256(variant, variant_len, vh);
        memcpy(out + SUC_KEY_HASH_LEN, vh, SUC_VARIANT_HASH_LEN);
    } else {
        memcpy(out + SUC_KEY_HASH_LEN, sha256_empty, SUC_VARIANT_HASH_LEN);
    }
}

/* Big-endian with the sign bit flipped, so byte order is numeric order for negative times too. */
void suc_tkey_make(int64_t t, const uint8_t ikey[SUC_IKEY_LEN], uint8_t out[SUC_TKEY_LEN]) {
    uint64_t u = (uint64_t)t ^ (1ull << 63);
    for (int i = 0; i < 8; i++) out[i] = (uint8_t)(u >> (56 - 8 * i));
    memcpy(out + 8, ikey, SUC_IKEY_LEN);
}

int64_t suc_tkey_time(const uint8_t tkey[SUC_TKEY_LEN]) {
    uint64_t u = 0;
    for (int i = 0; i < 8; i++) u = (u << 8) | tkey[i];
    return (int64_t)(u ^ (1ull << 63));
}

