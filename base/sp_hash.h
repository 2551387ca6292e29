/* SHA-256, for content hashes (templates, kernel cache keys), and a fast checksum for large images. */
#ifndef SP_HASH_H
#define SP_HASH_H

#include <stddef.h>
#include <stdint.h>

typedef struct sp_sha256 {
    uint32_t h[8];
    uint64_t nbytes;
    uint8_t block[64];
    size_t used;
} sp_sha256;

void sp_sha256_init(sp_sha256 *s);
void sp_sha256_update(sp_sha256 *s, const void *data, size_t n);
/* Adds a length-prefixed field, so that ("ab","c") and ("a","bc") hash differently. */
void sp_sha256_field(sp_sha256 *s, const void *data, size_t n);
void sp_sha256_final(sp_sha256 *s, uint8_t out[32]);
void sp_hex(const uint8_t *bytes, size_t n, char *out); /* out holds 2n+1 */

/* A fast 64-bit checksum (not cryptographic: it detects damage, not tampering), several GB/s on
 * one core: for large binary images such as encoded weight matrices. */
uint64_t sp_checksum64(const void *data, size_t n);

#endif
