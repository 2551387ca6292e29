/* What an encoded W looks like, read from the encoding alone: the nonzeros per row and whether it is 2:4. The
 * problem of slotfill-spmm describes W by its sparsity and by dist, the kind of pruning the benchmarks draw
 * (tuner/sp_case_slotfill.c); an engine holding an encoded matrix gets both measured from it instead of guessing
 * (sptune_slotfill_problem), so the results looked up are those measured on weights like its own. */
#include "sp_slotfill_internal.h"
#include "sp_status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct walk {
    long long *rows;          /* nonzeros per row */
    long long bi, bc;         /* the block being counted (tile, chunk), -1 before the first */
    long long blocks;         /* blocks holding a value */
    unsigned char groups[16][32]; /* the block's nonzeros per (row, aligned group of 4 columns) */
    int two_four;
    const sp_slotfill *m;
} walk;

/* Every full group of 4 of the block that was counted holds exactly 2. */
static void close_block(walk *x)
{
    if (x->bi < 0) return;
    for (int r = 0; r < 16 && 16 * x->bi + r < x->m->M; r++)
        for (int g = 0; g < 32 && 128 * x->bc + 4 * g + 4 <= x->m->K; g++)
            if (x->groups[r][g] != 2) x->two_four = 0;
    memset(x->groups, 0, sizeof x->groups);
}

static void count(void *ud, long long row, long long col, uint16_t v)
{
    (void)v;
    walk *x = ud;
    x->rows[row]++;
    if (row / 16 != x->bi || col / 128 != x->bc) {
        close_block(x);
        x->bi = row / 16;
        x->bc = col / 128;
        x->blocks++;
    }
    x->groups[row % 16][col % 128 / 4]++;
}

sptune_status sp_sf_profile_get(const sp_slotfill *m, sp_sf_profile *out)
{
    memset(out, 0, sizeof *out);
    if (!m || !m->image || m->M < 1 || m->K < 1) return sp_fail(SPTUNE_ERR_INVALID, "sp_sf_profile_get: no matrix");
    long long *rows = calloc((size_t)m->M, sizeof *rows);
    if (!rows) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory profiling a %lld-row matrix", m->M);
    sptune_status st;
    int two_four = m->K % 4 == 0;
    if (m->params.layout == SP_SF_BITMAP) {
        walk x = {.rows = rows, .bi = -1, .bc = -1, .two_four = 1, .m = m};
        st = sp_sf_walk_bitmap(m, count, &x);
        close_block(&x);
        /* a block without values has groups without two */
        two_four = two_four && x.two_four && x.blocks == m->tiles * m->chunks;
    } else {
        /* the first design's layouts (no longer the default): decoded whole */
        uint16_t *w = malloc((size_t)(m->M * m->K) * sizeof *w);
        if (!w) { free(rows); return sp_fail(SPTUNE_ERR_NOMEM, "out of memory decoding a %lld x %lld matrix", m->M, m->K); }
        st = sp_sf_decode(m, w, m->K);
        for (long long r = 0; st == SPTUNE_OK && r < m->M; r++)
            for (long long q = 0; q < m->K; q += 4) {
                int n = 0;
                for (long long e = q; e < q + 4 && e < m->K; e++) n += sp_sf_kept(w[r * m->K + e]);
                rows[r] += n;
                if (n != 2) two_four = 0;
            }
        free(w);
    }
    if (st == SPTUNE_OK) {
        double sq = 0;
        out->row_min = rows[0];
        for (long long r = 0; r < m->M; r++) {
            out->nonzeros += rows[r];
            sq += (double)rows[r] * (double)rows[r];
            if (rows[r] < out->row_min) out->row_min = rows[r];
            if (rows[r] > out->row_max) out->row_max = rows[r];
        }
        out->row_mean = (double)out->nonzeros / (double)m->M;
        out->row_var = fmax(0.0, sq / (double)m->M - out->row_mean * out->row_mean);
        out->two_four = two_four;
    }
    free(rows);
    return st;
}

int sp_sf_profile_dist(const sp_sf_profile *p, long long K)
{
    if (p->two_four) return 3;
    const double keep = p->row_mean / (double)K;
    /* every row its share (per-row pruning keeps the same count everywhere: a spread of a few elements) */
    if (p->row_max - p->row_min <= 2 + K / 256) return 2;
    /* rows far from the rest: (nearly) empty ones among rows that keep a fifth or more, or nearly dense ones
     * among rows that keep under 60 % (a magnitude threshold over row scales drawn as real layers' leaves its
     * extreme rows at about a fifth and four fifths) */
    if (((double)p->row_min <= fmax(2.0, (double)K / 100) && keep > 0.2) || ((double)p->row_max >= 0.88 * (double)K && keep < 0.6))
        return 4;
    /* uneven rows: a variance well above independent draws' (binomial) is a magnitude threshold over rows of
     * different scales; near it, elements pruned independently */
    const double binomial = (double)K * keep * (1.0 - keep);
    return p->row_var > 2.0 * binomial + 1.0 ? 1 : 0;
}
