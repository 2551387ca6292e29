/* The Slot-Filling encoder (runtime/sp_slotfill.h): bit-exact round trips through the CPU decoder
 * for every kind of matrix a pruned model has or a user may pass (random 30-80 % sparsity, skewed
 * rows, dense and empty rows, one dense column, patterns already 2:4, tails in both dimensions,
 * NaN/Inf/-0 values, K = 1, M = 1), every encoding parameter; the layer counts; and damaged,
 * foreign, truncated or hostile images refused with a clear message. */
#include "sp_rng.h"
#include "sp_slotfill.h"
#include "sp_status.h"
#include "sp_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x5107f111ull;


/* A random nonzero 16-bit value (never 0x0000). */
static uint16_t value(void)
{
    uint16_t v;
    do v = (uint16_t)sp_rng_next(&rng); while (v == 0);
    return v;
}

typedef enum { UNIFORM, SKEWED, ONE_COLUMN, TWO_FOUR, SPECIALS, DENSE_EMPTY } kind;

static uint16_t *make(kind k, long long M, long long K, double density)
{
    uint16_t *w = calloc((size_t)(M * K), 2);
    if (!w) return NULL;
    for (long long r = 0; r < M; r++) {
        double d = density;
        if (k == SKEWED) d = (r % 7 == 0) ? 0.9 : (r % 11 == 0) ? 0.0 : density * (0.3 + 1.4 * sp_rng_unit(&rng));
        if (k == DENSE_EMPTY) d = r % 2 ? 1.0 : 0.0;
        for (long long c = 0; c < K; c++) {
            int on;
            if (k == ONE_COLUMN) on = c == K / 2;
            else if (k == TWO_FOUR) on = (c % 4) == (r % 3) || (c % 4) == 3; /* exactly 2 of every 4 */
            else on = sp_rng_unit(&rng) < d;
            if (!on) continue;
            uint16_t v = value();
            if (k == SPECIALS) {
                static const uint16_t sp[] = {0x8000, 0x7f80, 0xff80, 0x7fc1, 0x0001, 0xffff};
                if (sp_rng_below(&rng, 4) == 0) v = sp[sp_rng_below(&rng, 6)];
            }
            w[r * K + c] = v;
        }
    }
    return w;
}

static long long count_nonzero(const uint16_t *w, long long n)
{
    long long c = 0;
    for (long long i = 0; i < n; i++) c += w[i] != 0 && w[i] != 0x8000;   /* -0 is pruned like +0 */
    return c;
}

/* Encode, check the counts, decode bit for bit (a pruned -0 as +0), and go through a file and back. */
static void round_trip(const char *what, const uint16_t *w_in, long long M, long long K, const sp_sf_params *p)
{
    sp_slotfill m;
    CHECK_ST(sp_sf_encode(w_in, M, K, K, SP_SF_BF16, p, &m), SPTUNE_OK);
    uint16_t *w = malloc((size_t)(M * K) * 2 + 2);
    if (!m.image || !w) {
        free(w);
        sp_sf_free(&m);
        return;
    }
    for (long long i = 0; i < M * K; i++) w[i] = w_in[i] == 0x8000 ? 0 : w_in[i];
    long long nz = count_nonzero(w, M * K);
    CHECK_MSG(m.stats.nonzeros == nz && m.stats.tc + m.stats.filled + m.stats.residual == nz,
              "%s: %lld nonzeros, counted %lld = %lld + %lld + %lld", what, nz, m.stats.nonzeros, m.stats.tc,
              m.stats.filled, m.stats.residual);
    if (!p->fill) CHECK_EQ(m.stats.filled, 0);
    uint16_t *back = malloc((size_t)(M * K) * 2 + 2);
    CHECK_ST(sp_sf_decode(&m, back, K), SPTUNE_OK);
    CHECK_MSG(back && memcmp(back, w, (size_t)(M * K) * 2) == 0, "%s (window %d, dbits %d, fill %d): decoded W differs",
              what, p->window, p->dbits, p->fill);
    /* through a file */
    char path[512];
    snprintf(path, sizeof path, "%s/m.sf", sp_test_tmpdir("test_slotfill_format"));
    CHECK_ST(sp_sf_write(&m, path), SPTUNE_OK);
    sp_slotfill r;
    CHECK_ST(sp_sf_read(path, &r), SPTUNE_OK);
    if (r.image) {
        CHECK(r.size == m.size && memcmp(r.image, m.image, m.size) == 0 && r.M == M && r.K == K &&
              r.params.window == p->window && r.stats.filled == m.stats.filled);
        memset(back, 0xff, (size_t)(M * K) * 2);
        CHECK_ST(sp_sf_decode(&r, back, K), SPTUNE_OK);
        CHECK(memcmp(back, w, (size_t)(M * K) * 2) == 0);
    }
    sp_sf_free(&r);
    free(back);
    free(w);
    sp_sf_free(&m);
}

static const sp_sf_params params[] = {
    {64, 7, 1, SP_SF_MASK}, {128, 8, 1, SP_SF_MASK}, {256, 9, 1, SP_SF_MASK}, {128, 5, 1, SP_SF_MASK},
    {256, 6, 1, SP_SF_MASK}, {64, 3, 1, SP_SF_MASK}, {128, 8, 0, SP_SF_MASK},
    {64, 7, 1, SP_SF_LIST}, {128, 6, 1, SP_SF_LIST}, {256, 5, 1, SP_SF_LIST}, {128, 6, 0, SP_SF_LIST},
    {128, 5, 0, SP_SF_BITMAP}};
#define NPARAMS (int)(sizeof params / sizeof params[0])

static void test_round_trips(void)
{
    static const struct { kind k; long long M, K; double d; const char *what; } cases[] = {
        {UNIFORM, 64, 512, 0.5, "50 % uniform"},   {UNIFORM, 37, 1001, 0.3, "70 % sparse, tails"},
        {UNIFORM, 33, 515, 0.7, "30 % sparse"},    {UNIFORM, 16, 256, 0.2, "80 % sparse"},
        {SKEWED, 70, 700, 0.5, "skewed rows (90 % dense and empty)"},
        {ONE_COLUMN, 40, 300, 0, "all nonzeros in one column"}, {TWO_FOUR, 48, 256, 0, "already 2:4"},
        {SPECIALS, 20, 130, 0.5, "NaN, Inf, -0, subnormals"},   {DENSE_EMPTY, 32, 200, 0, "dense and empty rows"},
        {UNIFORM, 50, 1, 0.5, "K = 1"},            {UNIFORM, 1, 333, 0.5, "M = 1"},
        {UNIFORM, 16, 64, 0.0, "all zeros"},        {UNIFORM, 17, 65, 1.0, "dense"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint16_t *w = make(cases[i].k, cases[i].M, cases[i].K, cases[i].d);
        if (!w) { CHECK(0); continue; }
        for (int p = 0; p < NPARAMS; p++) round_trip(cases[i].what, w, cases[i].M, cases[i].K, &params[p]);
        free(w);
    }
}

/* What the layers hold at 50 % uniform sparsity: a greedy 2:4 split keeps ~81 % of the nonzeros;
 * filling within a 128-wide window (full reach) leaves ~20 % of the overflow to the residual; no
 * filling leaves all of it; bytes of the three layers about 0.6-0.7 of dense. */
static void test_layers(void)
{
    const long long M = 256, K = 4096;
    uint16_t *w = make(UNIFORM, M, K, 0.5);
    if (!w) { CHECK(0); return; }
    sp_slotfill m;
    sp_sf_params p = {128, 8, 1, SP_SF_MASK}, none = {128, 8, 0, SP_SF_MASK}, near = {128, 4, 1, SP_SF_MASK};
    CHECK_ST(sp_sf_encode(w, M, K, K, SP_SF_BF16, &p, &m), SPTUNE_OK);
    double nz = (double)m.stats.nonzeros, ovf = nz - (double)m.stats.tc;
    CHECK_MSG(m.stats.tc / nz > 0.79 && m.stats.tc / nz < 0.835, "2:4 keeps %.3f", m.stats.tc / nz);
    CHECK_MSG(m.stats.residual / ovf > 0.05 && m.stats.residual / ovf < 0.30, "residual %.3f of the overflow",
              m.stats.residual / ovf);
    double total = (double)(m.stats.bytes_tc + m.stats.bytes_fill + m.stats.bytes_residual + m.stats.bytes_index);
    CHECK_MSG(total / m.stats.bytes_dense > 0.60 && total / m.stats.bytes_dense < 0.72, "bytes %.3f of dense",
              total / m.stats.bytes_dense);
    printf("50%% uniform, window 128: 2:4 %.1f%%, filled %.1f%%, residual %.1f%% of nonzeros; %.3f of dense bytes "
           "(tc %.3f, fill %.3f, residual %.3f, index %.3f)\n", 100 * m.stats.tc / nz, 100 * m.stats.filled / nz,
           100 * m.stats.residual / nz, total / m.stats.bytes_dense, m.stats.bytes_tc / (double)m.stats.bytes_dense,
           m.stats.bytes_fill / (double)m.stats.bytes_dense, m.stats.bytes_residual / (double)m.stats.bytes_dense,
           m.stats.bytes_index / (double)m.stats.bytes_dense);
    sp_slotfill a, b;
    CHECK_ST(sp_sf_encode(w, M, K, K, SP_SF_BF16, &none, &a), SPTUNE_OK);
    CHECK_ST(sp_sf_encode(w, M, K, K, SP_SF_BF16, &near, &b), SPTUNE_OK);
    CHECK(a.stats.filled == 0 && a.stats.residual == (long long)ovf);
    CHECK_MSG(b.stats.filled < m.stats.filled && b.stats.filled > 0, "reach 8 fills %lld, full reach %lld", b.stats.filled,
              m.stats.filled);
    sp_sf_free(&a);
    sp_sf_free(&b);
    sp_sf_free(&m);
    free(w);
}

static void test_bad_params(void)
{
    uint16_t w[64] = {1};
    sp_slotfill m;
    static const sp_sf_params bad[] = {{32, 6, 1, 0}, {100, 7, 1, 0}, {128, 9, 1, 0}, {128, 2, 1, 0}, {64, 8, 1, 0},
                                       {128, 8, 2, 0}, {128, 8, 1, 1}, {128, 6, 1, 3}, {64, 5, 0, 2},
                                       {128, 6, 0, 2}, {128, 5, 1, 2}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_ST(sp_sf_encode(w, 4, 16, 16, SP_SF_BF16, &bad[i], &m), SPTUNE_ERR_INVALID);
        CHECK(m.image == NULL);
    }
    sp_sf_params p = {64, 7, 1, SP_SF_MASK};
    CHECK_ST(sp_sf_encode(w, 0, 16, 16, SP_SF_BF16, &p, &m), SPTUNE_ERR_INVALID);
    CHECK_ST(sp_sf_encode(w, 4, 16, 8, SP_SF_BF16, &p, &m), SPTUNE_ERR_INVALID);
    CHECK_ST(sp_sf_encode(NULL, 4, 16, 16, SP_SF_BF16, &p, &m), SPTUNE_ERR_INVALID);
}

/* ~97 bytes of m's image from `from` on flipped in turn and the image sealed again: each decoded (into
 * back, M x K) or refused, never read out of bounds (ASan watches). */
static void flip_each(const sp_slotfill *m, size_t from, uint16_t *back)
{
    const size_t n = m->size;
    for (size_t at = from; at < n; at += 1 + (n - from) / 97) {
        unsigned char *img = malloc(n);
        if (!img) continue;
        memcpy(img, m->image, n);
        img[at] ^= 0x5a;
        sp_sf_seal(img, n);
        sp_slotfill r;
        if (sp_sf_adopt(img, n, "z.sf", &r) == SPTUNE_OK) {
            sp_sf_decode(&r, back, m->K);
            sp_sf_free(&r);
        }
    }
}

static void test_hostile(void)
{
    const long long M = 40, K = 300;
    uint16_t *w = make(UNIFORM, M, K, 0.5);
    sp_slotfill m;
    sp_sf_params p = {64, 7, 1, SP_SF_MASK};
    CHECK_ST(sp_sf_encode(w, M, K, K, SP_SF_BF16, &p, &m), SPTUNE_OK);
    if (!m.image) { free(w); return; }
    sp_slotfill r;
    const size_t n = m.size;
    unsigned char *img;
#define TRY(mutate, size, want_st, want_msg) do { \
        img = malloc(n); memcpy(img, m.image, n); mutate; \
        CHECK_ST(sp_sf_adopt(img, size, "x.sf", &r), want_st); \
        CHECK_MSG(sp_test_has(sptune_last_error(), want_msg), "want '%s' in '%s'", want_msg, sptune_last_error()); \
        CHECK(r.image == NULL); } while (0)
    TRY(memcpy(img, "NOTASFMX", 8), n, SPTUNE_ERR_INVALID, "not an sptune Slot-Filling matrix");
    TRY((void)0, 100, SPTUNE_ERR_INVALID, "not an sptune Slot-Filling matrix");
    TRY(img[8] = 3, n, SPTUNE_ERR_UNSUPPORTED, "written by a newer sptune");
    TRY((void)0, n - 256, SPTUNE_ERR_INVALID, "truncated or damaged");
    TRY(img[n - 300] ^= 1, n, SPTUNE_ERR_INVALID, "checksum mismatch");
    TRY(img[m.rec_off + 5] ^= 0x40, n, SPTUNE_ERR_INVALID, "checksum mismatch");
    TRY(img[20] = 100, n, SPTUNE_ERR_INVALID, "damaged header");
    TRY(img[48] ^= 0x10, n, SPTUNE_ERR_INVALID, "damaged header (sections of"); /* the records' size, not the file's */
    TRY((img[32] = 0, img[33] = 0), n, SPTUNE_ERR_INVALID, "damaged header");
    /* structurally wrong but sealed: offsets that decrease, metadata idx0 >= idx1, a residual word
     * outside the tile */
    TRY((((uint32_t *)(img + m.xoff_off))[3] = 0xffffff, sp_sf_seal(img, n)), n, SPTUNE_ERR_INVALID, "chunk offsets");
#undef TRY
    img = malloc(n);
    memcpy(img, m.image, n);
    ((uint32_t *)(img + m.rec_off + 16 * 64))[0] = 0xffffffffu; /* metadata: idx0 == idx1 == 3 */
    sp_sf_seal(img, n);
    CHECK_ST(sp_sf_adopt(img, n, "y.sf", &r), SPTUNE_OK);
    uint16_t *back = malloc((size_t)(M * K) * 2);
    if (r.image) {
        CHECK_ST(sp_sf_decode(&r, back, K), SPTUNE_ERR_INVALID);
        CHECK_MSG(sp_test_has(sptune_last_error(), "bad metadata"), "%s", sptune_last_error());
    }
    sp_sf_free(&r);
    /* every byte of the records and extras flipped in turn: decoded or refused, never read out of
     * bounds (ASan watches) */
    flip_each(&m, m.rec_off, back);
    /* files */
    CHECK_ST(sp_sf_read("/nonexistent/x.sf", &r), SPTUNE_ERR_NOT_FOUND);
    char path[512];
    snprintf(path, sizeof path, "%s/foreign.sf", sp_test_tmpdir("test_slotfill_format"));
    FILE *f = fopen(path, "wb");
    if (f) { fputs("this is not a matrix, but it is long enough to have a header ..........", f); fclose(f); }
    CHECK_ST(sp_sf_read(path, &r), SPTUNE_ERR_INVALID);
    CHECK(sp_test_has(sptune_last_error(), "not an sptune Slot-Filling matrix") && sp_test_has(sptune_last_error(), "foreign.sf"));
    free(back);
    sp_sf_free(&m);
    free(w);
}

/* The bitmap layout: 0.5625 of dense bytes and a bit more (offsets, headers, padding) at 50 %, whatever
 * the pattern; a version-1 image of it refused; damaged blocks refused by the decoder, never read past. */
static void test_bitmap(void)
{
    const long long M = 256, K = 4096;
    uint16_t *w = make(SKEWED, M, K, 0.5);
    if (!w) { CHECK(0); return; }
    sp_slotfill m;
    const sp_sf_params p = {128, 5, 0, SP_SF_BITMAP};
    CHECK_ST(sp_sf_encode(w, M, K, K, SP_SF_BF16, &p, &m), SPTUNE_OK);
    if (!m.image) { free(w); return; }
    const double nz = (double)m.stats.nonzeros, dense = (double)m.stats.bytes_dense;
    const double bytes = (double)(m.stats.bytes_tc + m.stats.bytes_fill + m.stats.bytes_residual + m.stats.bytes_index);
    CHECK(m.stats.tc == m.stats.nonzeros && m.stats.filled == 0 && m.stats.residual == 0);
    CHECK_MSG(bytes / dense < 2 * nz / dense + 0.0625 + 0.01 && bytes <= (double)m.size, "bitmap: %.4f of dense for %.3f "
              "density", bytes / dense, nz / (M * K));
    printf("bitmap, skewed rows at %.1f %% density: %.4f of dense bytes (values %.4f, index %.4f, padding %.4f)\n",
           100 * nz / (M * K), bytes / dense, m.stats.bytes_tc / dense, m.stats.bytes_index / dense,
           m.stats.bytes_residual / dense);
    sp_slotfill r;
    const size_t n = m.size;
    unsigned char *img = malloc(n);
    memcpy(img, m.image, n);
    img[8] = 1; /* a bitmap image claims version 1 */
    CHECK_ST(sp_sf_adopt(img, n, "v1.sf", &r), SPTUNE_ERR_INVALID);
    uint16_t *back = malloc((size_t)(M * K) * 2);
    const uint32_t *xoff = (const uint32_t *)(m.image + m.xoff_off);
    /* sealed but wrong: a step offset, a bit more than the block's values, a block's size */
    const size_t blk = m.extra_off + (size_t)xoff[3] * 16;
    static const struct { size_t at; unsigned char x; const char *says; } bad[] = {
        {2, 0x02, "step 1's values at byte"}, {SP_SF_BM_HEADER + 8 * 5, 0x01, "tile 0 chunk 3: "}};
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
        img = malloc(n);
        memcpy(img, m.image, n);
        img[blk + bad[b].at] ^= bad[b].x;
        sp_sf_seal(img, n);
        CHECK_ST(sp_sf_adopt(img, n, "b.sf", &r), SPTUNE_OK);
        if (r.image) {
            CHECK_ST(sp_sf_decode(&r, back, K), SPTUNE_ERR_INVALID);
            CHECK_MSG(sp_test_has(sptune_last_error(), bad[b].says), "%s", sptune_last_error());
        }
        sp_sf_free(&r);
    }
    flip_each(&m, m.xoff_off, back);
    free(back);
    sp_sf_free(&m);
    free(w);
}

/* The sp24 layout: exactly-2:4 weights (two of every four, and at most two with tails in both
 * dimensions) round-trip; anything else is refused naming its first group of more than 2; an image whose
 * extras hold anything is refused; the default encoding picks sp24 for 2:4 weights, bitmap otherwise. */
static void test_sp24(void)
{
    const sp_sf_params p = {64, 7, 0, SP_SF_SP24};
    uint16_t *w = make(TWO_FOUR, 48, 256, 0);
    if (w) round_trip("sp24, exactly 2:4", w, 48, 256, &p);
    free(w);
    const long long M = 37, K = 201; /* at most 2 of every 4, tails in M, K and the last group */
    w = calloc((size_t)(M * K), 2);
    if (!w) { CHECK(0); return; }
    for (long long r = 0; r < M; r++)
        for (long long q = 0; q < K; q += 4) {
            int keep = (int)sp_rng_below(&rng, 3);
            for (int e = 0; e < 4 && q + e < K && keep; e++)
                if (sp_rng_below(&rng, 2) || 4 - e <= keep) { w[r * K + q + e] = value(); keep--; }
        }
    round_trip("sp24, at most 2 of 4 with tails", w, M, K, &p);
    /* pruned the way w * mask prunes (a negative zero where a weight was negative): the same 2:4 matrix, the same
     * image, and the default encoding still picks sp24 */
    uint16_t *neg = malloc((size_t)(M * K) * 2);
    if (neg) {
        for (long long i = 0; i < M * K; i++) neg[i] = w[i] ? w[i] : (uint16_t)(i % 3 ? 0x8000 : 0);
        round_trip("sp24, pruned to -0", neg, M, K, &p);
        sp_slotfill a, b;
        CHECK_ST(sp_sf_encode(w, M, K, K, SP_SF_BF16, &p, &a), SPTUNE_OK);
        CHECK_ST(sp_sf_encode(neg, M, K, K, SP_SF_BF16, &p, &b), SPTUNE_OK);
        CHECK(a.image && b.image && a.size == b.size && memcmp(a.image, b.image, a.size) == 0);
        sp_sf_free(&a);
        sp_sf_free(&b);
        CHECK(sp_sf_two_four(neg, M, K, K, NULL, NULL, NULL));
        sptune_slotfill *d = NULL;
        CHECK_ST(sptune_slotfill_encode(neg, M, K, 0, NULL, &d), SPTUNE_OK);
        if (d) CHECK_MSG(strstr(sptune_slotfill_fixed(d), "decode=sp24"), "%s", sptune_slotfill_fixed(d));
        sptune_slotfill_free(d);
        free(neg);
    }
    sp_slotfill m;
    CHECK_ST(sp_sf_encode(w, M, K, K, SP_SF_BF16, &p, &m), SPTUNE_OK);
    if (m.image) {
        /* chunk 0's extras hold a word: a filled slot or residual the sp24 kernel would drop */
        const uint32_t *xoff = (const uint32_t *)(m.image + m.xoff_off);
        uint32_t *ex = (uint32_t *)(m.image + m.extra_off) + (size_t)xoff[0] * 4;
        ex[0] = 1;
        uint16_t *back = malloc((size_t)(M * K) * 2);
        CHECK_ST(sp_sf_decode(&m, back, K), SPTUNE_ERR_INVALID);
        CHECK_MSG(sp_test_has(sptune_last_error(), "sp24 image with filled slots or residual"), "%s", sptune_last_error());
        free(back);
        sp_sf_free(&m);
    }
    /* a group of three: refused, named */
    w[5 * K + 8] = w[5 * K + 9] = w[5 * K + 10] = 0x3f80;
    CHECK_ST(sp_sf_encode(w, M, K, K, SP_SF_BF16, &p, &m), SPTUNE_ERR_INVALID);
    CHECK_MSG(sp_test_has(sptune_last_error(), "not 2:4 sparse (row 5, columns 8..11 hold 3 nonzeros"), "%s", sptune_last_error());
    CHECK(m.image == NULL);
    /* the default encoding: sp24 for 2:4 weights, the bitmap for others, dist=3 in the problem */
    sptune_slotfill *e = NULL;
    char prob[128];
    CHECK_ST(sptune_slotfill_encode(w, M, K, 0, NULL, &e), SPTUNE_OK);
    CHECK_MSG(e && sp_test_has(sptune_slotfill_fixed(e), "decode=bitmap"), "%s", e ? sptune_slotfill_fixed(e) : "");
    sptune_slotfill_free(e);
    w[5 * K + 10] = 0;
    CHECK_ST(sptune_slotfill_encode(w, M, K, 0, NULL, &e), SPTUNE_OK);
    CHECK_MSG(e && sp_test_has(sptune_slotfill_fixed(e), "window=64,dbits=7,fill=0,decode=sp24"), "%s",
              e ? sptune_slotfill_fixed(e) : "");
    CHECK_ST(sptune_slotfill_problem(e, 8, prob, sizeof prob), SPTUNE_OK);
    CHECK_MSG(sp_test_has(prob, ",dist=3"), "%s", prob);
    sptune_slotfill_free(e);
    /* the layout named alone takes its own window and distance bits (the bitmap's defaults would be refused) */
    e = NULL;
    CHECK_ST(sptune_slotfill_encode(w, M, K, 0, "decode=sp24", &e), SPTUNE_OK);
    CHECK_MSG(e && sp_test_has(sptune_slotfill_fixed(e), "window=64,dbits=7,fill=0,decode=sp24"), "%s",
              e ? sptune_slotfill_fixed(e) : sptune_last_error());
    sptune_slotfill_free(e);
    e = NULL;
    CHECK_ST(sptune_slotfill_encode(w, M, K, 0, "decode=list,window=256", &e), SPTUNE_OK);
    CHECK_MSG(e && sp_test_has(sptune_slotfill_fixed(e), "window=256,dbits=5,fill=0,decode=list"), "%s",
              e ? sptune_slotfill_fixed(e) : sptune_last_error());
    sptune_slotfill_free(e);
    free(w);
}

int main(void)
{
    test_sp24();
    test_bitmap();
    test_round_trips();
    test_layers();
    test_bad_params();
    test_hostile();
    return sp_test_done("test_slotfill_format");
}
