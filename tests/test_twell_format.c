/* The TwELL reference packer and unpacker: exact round trips at any shape and sparsity, rows
 * that overflow their slots (dense rows, heavy tiles), a pool too small (reported, then retried),
 * and malformed packed data refused without reading out of bounds. */
#include "sp_rng.h"
#include "sp_twell.h"
#include "sp_test.h"

#include <stdlib.h>
#include <string.h>

static uint64_t rng = 88172645463325252ull;
static uint32_t next(void) { return (uint32_t)(sp_rng_next(&rng) >> 32); }

/* density in 1/10000; dense_rows rows fully nonzero; first rows denser (like early tokens). */
static uint16_t *make(int64_t M, int64_t F, int density, int dense_rows)
{
    uint16_t *h = malloc((size_t)(M * F) * sizeof *h);
    for (int64_t r = 0; r < M; r++) {
        int d = r < dense_rows ? 10000 : (r < 4 ? density * 8 : density);
        for (int64_t c = 0; c < F; c++) {
            uint16_t v = 0;
            if ((int)(next() % 10000) < d) v = (uint16_t)(0x3c00 + (next() % 0x0400)); /* positive, nonzero */
            if (v == 0 && next() % 97 == 0) v = 0x8000;                                 /* -0 stays a zero */
            h[r * F + c] = v;
        }
    }
    return h;
}

static int64_t brute_overflow(const uint16_t *h, const sp_twell_shape *s, int64_t *nz)
{
    int64_t over = 0;
    *nz = 0;
    for (int64_t r = 0; r < s->rows; r++)
        for (int64_t c0 = 0; c0 < s->cols; c0 += s->tile) {
            int n = 0;
            for (int64_t c = c0; c < c0 + s->tile && c < s->cols; c++) n += (h[r * s->cols + c] & 0x7fff) != 0;
            *nz += n;
            over += n > s->slots;
        }
    return over;
}

static void round_trip(int64_t M, int64_t F, int T, int S, int density, int dense_rows)
{
    sp_twell_shape s = {M, F, T, S};
    uint16_t *h = make(M, F, density, dense_rows);
    int64_t words = sp_twell_packed_words(&s);
    uint32_t *packed = malloc((size_t)(words ? words : 1) * 4);
    uint16_t *back = malloc((size_t)(M * F > 0 ? M * F : 1) * 2);
    sp_twell_stats st;
    /* First with no pool at all: overflow is reported, never dropped silently. */
    CHECK_ST(sp_twell_pack(&s, h, packed, NULL, 0, &st), SPTUNE_OK);
    int64_t nz = 0, over = brute_overflow(h, &s, &nz);
    CHECK_EQ(st.nonzeros, nz);
    CHECK_EQ(st.overflow_tiles, over);
    CHECK_EQ((over > 0), (st.pool_needed > 0));
    int64_t cap = st.pool_needed;
    uint32_t *pool = malloc((size_t)(cap ? cap : 1) * 4);
    CHECK_ST(sp_twell_pack(&s, h, packed, pool, cap, &st), SPTUNE_OK);
    CHECK_EQ(st.pool_needed, cap);
    CHECK_ST(sp_twell_unpack(&s, packed, pool, cap, back), SPTUNE_OK);
    int64_t diff = 0;
    for (int64_t i = 0; i < M * F; i++) diff += ((h[i] & 0x7fff) ? h[i] : 0) != back[i];
    CHECK_MSG(diff == 0, "%lldx%lld T=%d S=%d: %lld elements differ", (long long)M, (long long)F, T, S, (long long)diff);
    printf("  %6lld x %-6lld T=%-4d S=%-3d nnz %-8lld overflow tiles %-5lld pool %lld words\n", (long long)M,
           (long long)F, T, S, (long long)st.nonzeros, (long long)st.overflow_tiles, (long long)cap);
    free(h); free(packed); free(back); free(pool);
}

static void malformed(void)
{
    sp_twell_shape s = {2, 10, 8, 2}; /* 2 tiles per row, the second 2 columns wide */
    uint32_t packed[2 * 2 * 3] = {0};
    uint32_t pool[8] = {0};
    uint16_t h[20];
    CHECK_ST(sp_twell_unpack(&s, packed, NULL, 0, h), SPTUNE_OK); /* all empty */
    packed[0] = 3;                                                 /* 3 > 2 slots */
    CHECK_ST(sp_twell_unpack(&s, packed, NULL, 0, h), SPTUNE_ERR_INVALID);
    packed[0] = 2; packed[1] = 0x3c000005u; packed[2] = 0x3c000001u; /* columns out of order */
    CHECK_ST(sp_twell_unpack(&s, packed, NULL, 0, h), SPTUNE_ERR_INVALID);
    packed[2] = 0x3c000006u;
    CHECK_ST(sp_twell_unpack(&s, packed, NULL, 0, h), SPTUNE_OK);
    CHECK(h[5] == 0x3c00 && h[6] == 0x3c00 && h[0] == 0);
    packed[3] = 1; packed[4] = 0x3c000002u;                         /* column 2 of a 2-wide tile */
    CHECK_ST(sp_twell_unpack(&s, packed, NULL, 0, h), SPTUNE_ERR_INVALID);
    packed[4] = 0x00000001u;                                        /* a zero value entry */
    CHECK_ST(sp_twell_unpack(&s, packed, NULL, 0, h), SPTUNE_ERR_INVALID);
    packed[3] = 0;
    packed[6] = SP_TWELL_OVERFLOW | 100u;                           /* offset outside the pool */
    CHECK_ST(sp_twell_unpack(&s, packed, pool, 8, h), SPTUNE_ERR_INVALID);
    packed[6] = SP_TWELL_OVERFLOW | 2u; pool[2] = 7;                /* runs past the pool */
    CHECK_ST(sp_twell_unpack(&s, packed, pool, 8, h), SPTUNE_ERR_INVALID);
    pool[2] = 3; pool[3] = 0x40000000u; pool[4] = 0x40000003u; pool[5] = 0x40000007u;
    CHECK_ST(sp_twell_unpack(&s, packed, pool, 8, h), SPTUNE_OK);
    CHECK(h[10] == 0x4000 && h[13] == 0x4000 && h[17] == 0x4000);
    pool[2] = 2;                                                    /* overflow entry that would fit in slots */
    CHECK_ST(sp_twell_unpack(&s, packed, pool, 8, h), SPTUNE_ERR_INVALID);
}

static void shapes(void)
{
    sp_twell_shape bad[] = {{4, 0, 8, 2}, {-1, 8, 8, 2}, {4, 8, 1, 1}, {4, 8, 70000, 2}, {4, 8, 8, 0}, {4, 8, 8, 9}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) CHECK_ST(sp_twell_check_shape(&bad[i]), SPTUNE_ERR_INVALID);
    sp_twell_shape ok = {3, 300, 256, 31};
    CHECK_ST(sp_twell_check_shape(&ok), SPTUNE_OK);
    CHECK_EQ(sp_twell_ntiles(&ok), 2);
    CHECK_EQ(sp_twell_packed_words(&ok), 3 * 2 * 32);
}

/* The hot/cold split's calibration (sptune.h): counts of positive gate entries, then the neurons by
 * descending count, ties by index; negative values, zeros (both signs) are not activity. */
static void hot_order(void)
{
    /* 3 tokens x 5 neurons: bf16 1.0 = 0x3f80, -1.0 = 0xbf80, -0.0 = 0x8000 */
    const unsigned short g[15] = {0x3f80, 0, 0x3f80, 0xbf80, 0x8000,
                                  0x3f80, 0x3f80, 0x3f80, 0, 0x0001,
                                  0, 0, 0x3f80, 0xbf80, 0};
    unsigned long long counts[5] = {0};
    int perm[5];
    CHECK_ST(sptune_twell_count_active(g, 3, 5, counts), SPTUNE_OK);
    CHECK(counts[0] == 2 && counts[1] == 1 && counts[2] == 3 && counts[3] == 0 && counts[4] == 1);
    CHECK_ST(sptune_twell_hot_order(counts, 5, perm), SPTUNE_OK);
    CHECK(perm[0] == 2 && perm[1] == 0 && perm[2] == 1 && perm[3] == 4 && perm[4] == 3);
    CHECK_ST(sptune_twell_count_active(NULL, 3, 5, counts), SPTUNE_ERR_INVALID);
    CHECK_ST(sptune_twell_count_active(g, -1, 5, counts), SPTUNE_ERR_INVALID);
    CHECK_ST(sptune_twell_hot_order(counts, 0, perm), SPTUNE_ERR_INVALID);
    CHECK_ST(sptune_twell_hot_order(NULL, 5, perm), SPTUNE_ERR_INVALID);
}

int main(void)
{
    shapes();
    hot_order();
    malformed();
    /* ~99.5 % sparse at d_ff 5632, the paper's layout (T=256, C=8 -> 31 slots), two dense rows. */
    round_trip(64, 5632, 256, 31, 50, 2);
    /* 90 % sparse: many tiles overflow 31 slots. */
    round_trip(33, 5632, 256, 31, 1000, 0);
    /* Shapes off every tile multiple, small tiles, one slot, empty matrix. */
    round_trip(7, 1001, 64, 7, 300, 1);
    round_trip(5, 130, 128, 1, 500, 0);
    round_trip(3, 17, 16, 16, 5000, 1);
    round_trip(0, 256, 256, 31, 100, 0);
    return sp_test_done("test_twell_format");
}
