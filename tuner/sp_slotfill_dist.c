/* Weights shaped like pruned LLM weights (sp_slotfill_dist.h). */
#include "sp_slotfill_dist.h"
#include "sp_bench.h"
#include "sp_rng.h"
#include "sp_status.h"

#include <math.h>
#include <stdlib.h>

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* The k-th smallest of n floats (quickselect; v is reordered). */
static float select_kth(float *v, long long n, long long k)
{
    long long lo = 0, hi = n - 1;
    while (lo < hi) {
        float pivot = v[lo + (hi - lo) / 2];
        long long i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot) i++;
            while (v[j] > pivot) j--;
            if (i <= j) { float t = v[i]; v[i] = v[j]; v[j] = t; i++; j--; }
        }
        if (k <= j) hi = j;
        else if (k >= i) lo = i;
        else return v[k];
    }
    return v[k];
}

sptune_status sp_slotfill_draw(uint64_t *rng, int M, int K, double sparsity, int dist, int f16, unsigned short *W)
{
    sp_normals nrm = {rng, 0, 0};
    float *cs = malloc((size_t)K * sizeof *cs), *row = malloc((size_t)K * sizeof *row),
          *score = malloc((size_t)K * sizeof *score);
    if (!cs || !row || !score) {
        free(cs); free(row); free(score);
        return sp_fail(SPTUNE_ERR_NOMEM, "out of memory drawing W");
    }
    for (int c = 0; c < K; c++) cs[c] = (float)exp(0.6 * sp_normal(&nrm));
    float thresh = 0;
    if (dist == 1) {
        /* the global magnitude threshold, from a sample of the same distribution */
        enum { S = 1 << 18 };
        float *smp = malloc(S * sizeof *smp);
        if (!smp) { free(cs); free(row); free(score); return sp_fail(SPTUNE_ERR_NOMEM, "out of memory drawing W"); }
        for (int i = 0; i < S; i++)
            smp[i] = (float)fabs(sp_normal(&nrm) * exp(0.3 * sp_normal(&nrm)) * cs[sp_rng_below(rng, (uint64_t)K)]);
        qsort(smp, S, sizeof *smp, cmp_float);
        thresh = smp[(long long)(sparsity * (S - 1))];
        free(smp);
    }
    for (int r = 0; r < M; r++) {
        unsigned short *w = W + (size_t)r * K;
        const double rs = exp(0.3 * sp_normal(&nrm));
        if (dist == 3) {
            for (int q = 0; q < K; q += 4) {
                int a = (int)sp_rng_below(rng, 4), b2 = (a + 1 + (int)sp_rng_below(rng, 3)) % 4;
                for (int e = 0; e < 4 && q + e < K; e++)
                    w[q + e] = (e == a || e == b2) ? sp_float_to_half((float)(sp_normal(&nrm) * rs), f16) : 0;
            }
            continue;
        }
        for (int c = 0; c < K; c++) {
            double v = sp_normal(&nrm) * (dist == 0 ? 1.0 : rs * cs[c]);
            row[c] = (float)v;
        }
        float cut = thresh;
        if (dist == 2) {
            /* this row's share by |w| * column scale */
            for (int c = 0; c < K; c++) score[c] = fabsf(row[c]) * cs[c];
            long long k = (long long)(sparsity * K);
            cut = k > 0 ? select_kth(score, K, k - 1) : -1.0f;
            for (int c = 0; c < K; c++) row[c] = fabsf(row[c]) * cs[c] > cut ? row[c] : 0.0f;
        }
        const double keep_p = dist == 4 ? (r % 7 == 0 ? 0.9 : r % 11 == 0 ? 0.0 : 1.0 - sparsity) : 1.0 - sparsity;
        for (int c = 0; c < K; c++) {
            int keep = dist == 0 || dist == 4 ? sp_rng_unit(rng) < keep_p || (dist == 4 && c == K / 3)
                       : dist == 1 ? fabsf(row[c]) > cut : row[c] != 0.0f;
            w[c] = keep ? sp_float_to_half(row[c], f16) : 0;
        }
    }
    free(cs);
    free(row);
    free(score);
    return SPTUNE_OK;
}

sptune_status sp_slotfill_read_weights(const char *path, const char *names, long long rows, long long cols,
                                       sp_tensor_format format, sp_tensor *out)
{
    char name[256];
    sp_tensor_role_name(names, "w", "weight", name, sizeof name);
    sp_tensor_request rq = {name, rows, cols, format};
    return sp_tensor_read(path, &rq, out);
}
