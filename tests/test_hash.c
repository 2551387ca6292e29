/* SHA-256 against the FIPS 180-2 known answers (empty, "abc", the 448-bit message, a million 'a'),
 * fed whole and in every split of awkward sizes (the 55/56/64-byte padding boundaries); the field
 * form is unambiguous; the checksum sees a flipped bit. */
#include "sp_hash.h"
#include "sp_test.h"

#include <stdlib.h>
#include <string.h>

static void digest(const void *data, size_t n, size_t chunk, char hex[65])
{
    sp_sha256 s;
    uint8_t out[32];
    sp_sha256_init(&s);
    for (size_t i = 0; i < n; i += chunk) sp_sha256_update(&s, (const uint8_t *)data + i, n - i < chunk ? n - i : chunk);
    sp_sha256_final(&s, out);
    sp_hex(out, 32, hex);
}

int main(void)
{
    static const struct { const char *msg; const char *hex; } kat[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmn"
         "hijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
    };
    char hex[65];
    for (size_t i = 0; i < sizeof kat / sizeof kat[0]; i++) {
        size_t n = strlen(kat[i].msg);
        for (size_t chunk = 1; chunk <= 65; chunk += (chunk < 8 ? 1 : 7)) {
            digest(kat[i].msg, n, chunk, hex);
            CHECK_MSG(strcmp(hex, kat[i].hex) == 0, "SHA-256 of \"%.20s...\" in chunks of %zu: %s", kat[i].msg, chunk, hex);
        }
    }
    size_t n = 1000000;
    char *a = malloc(n);
    memset(a, 'a', n);
    digest(a, n, n, hex);
    CHECK_MSG(strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0") == 0, "a million 'a': %s", hex);
    digest(a, n, 4097, hex);
    CHECK_MSG(strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0") == 0, "in chunks: %s", hex);
    /* messages around the padding boundaries: byte-wise and whole agree */
    for (size_t len = 50; len <= 130; len++) {
        char whole[65], bytes[65];
        digest(a, len, len ? len : 1, whole);
        digest(a, len, 1, bytes);
        CHECK_MSG(strcmp(whole, bytes) == 0, "length %zu", len);
    }
    /* fields: ("ab", "c") and ("a", "bc") differ */
    sp_sha256 s1, s2;
    uint8_t d1[32], d2[32];
    sp_sha256_init(&s1); sp_sha256_field(&s1, "ab", 2); sp_sha256_field(&s1, "c", 1); sp_sha256_final(&s1, d1);
    sp_sha256_init(&s2); sp_sha256_field(&s2, "a", 1); sp_sha256_field(&s2, "bc", 2); sp_sha256_final(&s2, d2);
    CHECK(memcmp(d1, d2, 32) != 0);
    /* the checksum: stable, and a flipped bit anywhere changes it */
    uint64_t c0 = sp_checksum64(a, n);
    CHECK_EQ(c0, sp_checksum64(a, n));
    for (size_t at = 0; at < n; at += 99991) {
        a[at] ^= 4;
        CHECK_MSG(sp_checksum64(a, n) != c0, "bit flip at %zu unseen", at);
        a[at] ^= 4;
    }
    free(a);
    return sp_test_done("test_hash");
}
