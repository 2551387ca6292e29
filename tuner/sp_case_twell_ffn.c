/* GPU harness of twell-ffn, the whole gated FFN layer: Y = (relu(X Wg^T) (.) X Wu^T) Wd.
 * Data: X and Wg from sp_twell_producer_data (the problem's distribution: heavy-tailed neurons,
 * dead ones, dense tokens), Wu and Wd (F x D) uniform in [-1, 1); or, where the bench names a file
 * (sp_bench.data: tune --data), the layer's own X, Wg, Wu and Wd, whose shapes must be the problem's.
 * The problem's `order` says how the
 * application gives the neurons: 0 as drawn, 1 in the order the hot/cold split wants
 * (sptune_twell_hot_order, calibrated on every fourth token of the batch: the most frequent first),
 * for every configuration. The layer's function, and so the reference, is the same. Workspace: the template's
 * typical sizes, or those the bench asks for (sp_bench.twell_pool, twell_dense: tests of exhausted
 * workspaces); the output is checked whatever the sizes. Reference: the gate X Wg^T and up X Wu^T by
 * cuBLAS in fp32 (both spot-checked in fp64), the gate rounded to bf16 after relu as the
 * producer stores it, H = gate (.) up on the host, Y = H Wd by cuBLAS fp32 SGEMM. Baseline: the
 * dense gated FFN in cuBLAS bf16: the gate and up GEMMs, relu(gate) (.) up, the down GEMM. */
#include "sp_case.h"
#include "sp_cublas.h"
#include "sp_dense_ffn.h"
#include "sp_cuda.h"
#include "sp_status.h"
#include "sp_twell_layer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ffn_state {
    sp_bench *b;
    sp_cublas *blas;
    sp_kernel mul;
    int M, D, F, nnz, order;
    sp_twell_out o;                  /* the producer's output, the consumer's input */
    CUdeviceptr row_info, dense_h, dense_acc; /* the dense path's workspace, for dense_rows rows */
    int dense_cap, dense_rows;
    CUdeviceptr hot_h;               /* the hot slice's activations (M x hot_cols), then Ylo where it has one */
    long long hot_cols, hot_alloc, hot_used;   /* the slice's columns; elements allocated; the configuration's */
    sp_problem prob;
    CUdeviceptr X, Wg, Wu, Wd, Y, Gb, Ub, Ybase, R32, Wd32, Yref;
    CUdeviceptr Wp[3];               /* Wg, Wu, Wd in calibrated order (order = 1): those bound then */
    unsigned short *hX, *hWg, *hWu, *hWd, *hY, *hG, *hGp;   /* hGp: the gate in calibrated order */
    float *hR, *hRef, *hWd32, *hAllow;
} ffn_state;

static void ffn_destroy(void *p)
{
    ffn_state *g = p;
    if (!g) return;
    CUdeviceptr *d[] = {&g->X, &g->Wg, &g->Wp[0], &g->Wp[1], &g->Wp[2], &g->Wu, &g->Wd, &g->Y, &g->Gb, &g->Ub, &g->Ybase, &g->R32, &g->Wd32, &g->Yref,
                        &g->row_info, &g->dense_h, &g->dense_acc, &g->hot_h};
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) sp_bench_free(*d[i]);
    sp_twell_out_free(&g->o);
    void *h[] = {g->hX, g->hWg, g->hWu, g->hWd, g->hY, g->hG, g->hGp, g->hR, g->hRef, g->hWd32, g->hAllow};
    for (size_t i = 0; i < sizeof h / sizeof h[0]; i++) free(h[i]);
    if (g->mul.module) sp_kernel_unload(&g->mul);
    sp_cublas_destroy(g->blas);
    free(g);
}

/* The neurons ordered as an application calibrates them for the hot/cold split: firing counts over
 * every fourth token, the most frequent first; the rows of Wg, Wu and Wd (Wp) and the gate's columns
 * (hGp) in that order: the same layer. */
static sptune_status calibrate(ffn_state *g)
{
    size_t F = (size_t)g->F, D = (size_t)g->D;
    unsigned long long *counts = calloc(F, sizeof *counts);
    int *perm = malloc(F * sizeof *perm);
    unsigned short *tmp = malloc(F * D * 2);
    g->hGp = malloc((size_t)g->M * F * 2);
    sptune_status st = SPTUNE_OK;
    if (!counts || !perm || !tmp || !g->hGp) st = sp_fail(SPTUNE_ERR_NOMEM, "out of host memory calibrating twell-ffn");
    for (int r = 1; st == SPTUNE_OK && r < g->M; r += 4) st = sptune_twell_count_active(g->hG + (size_t)r * F, 1, g->F, counts);
    if (st == SPTUNE_OK) st = sptune_twell_hot_order(counts, g->F, perm);
    if (st == SPTUNE_OK) {
        for (int r = 0; r < g->M; r++) {
            const unsigned short *row = g->hG + (size_t)r * F;
            unsigned short *to = g->hGp + (size_t)r * F;
            for (size_t i = 0; i < F; i++) to[i] = row[perm[i]];
        }
        const unsigned short *w[3] = {g->hWg, g->hWu, g->hWd};
        for (int k = 0; k < 3 && st == SPTUNE_OK; k++) {
            for (size_t i = 0; i < F; i++) memcpy(tmp + i * D, w[k] + (size_t)perm[i] * D, D * 2);
            if ((st = sp_bench_alloc(g->b, F * D * 2, &g->Wp[k])) == SPTUNE_OK) st = sp_bench_upload(g->Wp[k], tmp, F * D * 2);
        }
    }
    free(counts);
    free(perm);
    free(tmp);
    return st;
}

static sptune_status ffn_create(sp_bench *b, const sp_problem *p, void **out)
{
    const sp_cuda_api *cu;
    sptune_status st = sp_cuda_load(&cu);
    if (st != SPTUNE_OK) return st;
    ffn_state *g = calloc(1, sizeof *g);
    if (!g) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    g->b = b;
    g->prob = *p;
    if (!sp_problem_int(p, "M", &g->M) || !sp_problem_int(p, "D", &g->D) || !sp_problem_int(p, "F", &g->F) ||
        !sp_problem_int(p, "nnz", &g->nnz) || g->nnz > g->F) {
        free(g);
        return sp_fail(SPTUNE_ERR_INVALID, "twell-ffn needs positive integers M, D, F and nnz <= F");
    }
    double order = 0;   /* absent: as drawn */
    sp_problem_get(p, "order", &order);
    if (order != 0 && order != 1) {
        free(g);
        return sp_fail(SPTUNE_ERR_INVALID, "twell-ffn: order=%g (0: the neurons as they come, 1: most frequent first)",
                       order);
    }
    g->order = (int)order;
    size_t md = (size_t)g->M * g->D, fd = (size_t)g->F * g->D, mf = (size_t)g->M * g->F;
    g->hX = malloc(md * 2); g->hWg = malloc(fd * 2); g->hWu = malloc(fd * 2); g->hWd = malloc(fd * 2);
    g->hY = malloc(md * 2); g->hG = malloc(mf * 2); g->hR = malloc(mf * 4); g->hRef = malloc(md * 4);
    g->hAllow = malloc(md * 4);
    g->hWd32 = malloc(fd * 4);
    if (!g->hX || !g->hWg || !g->hWu || !g->hWd || !g->hY || !g->hG || !g->hR || !g->hRef || !g->hWd32 || !g->hAllow) {
        st = sp_fail(SPTUNE_ERR_NOMEM, "out of host memory for twell-ffn M=%d D=%d F=%d", g->M, g->D, g->F);
        goto fail;
    }
    if ((st = sp_bench_alloc(b, md * 2, &g->X)) || (st = sp_bench_alloc(b, fd * 2, &g->Wg)) ||
        (st = sp_bench_alloc(b, fd * 2, &g->Wu)) || (st = sp_bench_alloc(b, fd * 2, &g->Wd)) ||
        (st = sp_bench_alloc(b, md * 2, &g->Y)) || (st = sp_twell_out_alloc(b, g->M, g->F, b->twell_pool, &g->o)) ||
        (st = sp_bench_alloc(b, mf * 2, &g->Gb)) || (st = sp_bench_alloc(b, mf * 2, &g->Ub)) ||
        (st = sp_bench_alloc(b, md * 2, &g->Ybase)) || (st = sp_bench_alloc(b, mf * 4, &g->R32)) ||
        (st = sp_bench_alloc(b, fd * 4, &g->Wd32)) || (st = sp_bench_alloc(b, md * 4, &g->Yref)))
        goto fail;
    if (b->data) {
        sp_twell_layer l;
        if ((st = sp_twell_layer_read(b->data, b->data_names, 0, &l)) != SPTUNE_OK) goto fail;
        if (l.M != g->M || l.D != g->D || l.F != g->F) {
            st = sp_fail(SPTUNE_ERR_INVALID, "twell-ffn: %s holds a layer of M=%lld, D=%d, F=%d, the problem is M=%d, "
                         "D=%d, F=%d", b->data, l.M, l.D, l.F, g->M, g->D, g->F);
            sp_twell_layer_free(&l);
            goto fail;
        }
        memcpy(g->hX, l.x, md * 2);
        memcpy(g->hWg, l.gate, fd * 2);
        memcpy(g->hWu, l.up, fd * 2);
        memcpy(g->hWd, l.down, fd * 2);
        sp_twell_layer_free(&l);
        if ((st = sp_bench_upload(g->Wu, g->hWu, fd * 2)) || (st = sp_bench_upload(g->Wd, g->hWd, fd * 2))) goto fail;
    } else {
        uint64_t s = b->rng ^ 0xff7ull;
        sp_twell_dist dist;
        if ((st = sp_twell_dist_get(p, g->F, &dist)) ||
            (st = sp_twell_producer_data(&s, g->M, g->D, g->F, &dist, g->hX, g->hWg)) ||
            (st = sp_bench_random_bf16(b, g->Wu, g->hWu, fd, 1.0f)) ||
            (st = sp_bench_random_bf16(b, g->Wd, g->hWd, fd, 1.0f)))
            goto fail;
    }
    if ((st = sp_bench_upload(g->X, g->hX, md * 2)) || (st = sp_bench_upload(g->Wg, g->hWg, fd * 2))) goto fail;
    if ((st = sp_cublas_create(&g->blas)) || (st = sp_cublas_set_stream(g->blas, b->stream))) goto fail;
    /* gate: relu, then bf16 as the producer stores it */
    if ((st = sp_cublas_gemm_nt(g->blas, g->M, g->F, g->D, g->X, g->Wg, g->R32, 1)) ||
        (st = sp_fetch_f32(b->stream, g->R32, g->hR, mf)))
        goto fail;
    if ((st = sp_check_reference(g->hR, (size_t)g->M, (size_t)g->F, (size_t)g->D, g->hX, g->hWg, 1, 32))) goto fail;
    for (size_t i = 0; i < mf; i++) g->hG[i] = g->hR[i] > 0 ? sp_float_to_bf16(g->hR[i]) : 0;
    if (g->order && (st = calibrate(g)) != SPTUNE_OK) goto fail;
    /* up, then H = gate (.) up, then the down projection in fp32 */
    if ((st = sp_cublas_gemm_nt(g->blas, g->M, g->F, g->D, g->X, g->Wu, g->R32, 1)) ||
        (st = sp_fetch_f32(b->stream, g->R32, g->hR, mf)))
        goto fail;
    if ((st = sp_check_reference(g->hR, (size_t)g->M, (size_t)g->F, (size_t)g->D, g->hX, g->hWu, 1, 32))) goto fail;
    for (size_t i = 0; i < mf; i++) g->hR[i] *= sp_bf16_to_float(g->hG[i]);
    for (size_t i = 0; i < fd; i++) g->hWd32[i] = sp_bf16_to_float(g->hWd[i]);
    if ((st = sp_bench_upload(g->R32, g->hR, mf * 4)) || (st = sp_bench_upload(g->Wd32, g->hWd32, fd * 4)) ||
        (st = sp_cublas_sgemm_nn(g->blas, g->M, g->D, g->F, g->R32, g->Wd32, g->Yref)) ||
        (st = sp_fetch_f32(b->stream, g->Yref, g->hRef, md)))
        goto fail;
    /* the fp32 down GEMM at a few entries, in fp64 */
    uint64_t q = 0xd0e5ull;
    for (int i = 0; i < 16; i++) {
        int r = (int)(sp_rng_next(&q) % (uint64_t)g->M), c = (int)(sp_rng_next(&q) % (uint64_t)g->D);
        double want = 0, mag = 0;
        for (int j = 0; j < g->F; j++) {
            double t = (double)g->hR[(size_t)r * g->F + j] * g->hWd32[(size_t)j * g->D + c];
            want += t;
            mag += fabs(t);
        }
        if (fabs(g->hRef[(size_t)r * g->D + c] - want) > 1e-5 * mag + 1e-30) {
            st = sp_fail(SPTUNE_ERR_WRONG_RESULT, "twell-ffn: the cuBLAS down reference disagrees with fp64 at (%d, %d)",
                         r, c);
            goto fail;
        }
    }
    /* Allowed per element beyond the plain bound: what rounding h's factors to bf16 can cost. The gate is
     * stored as bf16 in every configuration, rounded from fp32 sums whose order differs from the
     * reference's (and again in the consumer, which recomputes the gates of tiles the pool could not
     * hold, and the dense path, which recomputes a lost tile's): a neuron's gate may land one bf16 ulp (at
     * most 2^-7 relative) away. The hot slice (hot > 0) also rounds h itself to bf16, twice, as the dense
     * bf16 layer does, and the dense path once (each within 2^-8 relative, on every term). On terms t_j = h_j Wd_jd that is at most 2^-7 |t_j| for one landed-away gate, and a
     * standard deviation near 0.6 * 2^-8 sqrt(sum_j t_j^2) for the hot slice, so 2^-6 sqrt(sum_j t_j^2)
     * covers both with room. A dropped or wrong term of average size (sqrt(sum_j t_j^2 / n) for n active
     * neurons) still exceeds it while a token has fewer than 4096 active neurons. */
    for (size_t i = 0; i < mf; i++) g->hR[i] *= g->hR[i];
    for (size_t i = 0; i < fd; i++) g->hWd32[i] *= g->hWd32[i];
    if ((st = sp_bench_upload(g->R32, g->hR, mf * 4)) || (st = sp_bench_upload(g->Wd32, g->hWd32, fd * 4)) ||
        (st = sp_cublas_sgemm_nn(g->blas, g->M, g->D, g->F, g->R32, g->Wd32, g->Yref)) ||
        (st = sp_fetch_f32(b->stream, g->Yref, g->hAllow, md)))
        goto fail;
    for (size_t i = 0; i < md; i++) g->hAllow[i] = 0x1p-6f * sqrtf(fmaxf(g->hAllow[i], 0.0f));
    if ((st = sp_helper_mul_load(b->gpu.info.arch, b->gpu.info.sm_count, &g->mul)) != SPTUNE_OK) goto fail;
    *out = g;
    return SPTUNE_OK;
fail:
    ffn_destroy(g);
    return st;
}

static void *ffn_arg(void *p, const char *name)
{
    ffn_state *g = p;
    const sp_case_named v[] = {{"X", &g->X}, {"Wg", g->order ? &g->Wp[0] : &g->Wg},
                               {"Wu", g->order ? &g->Wp[1] : &g->Wu}, {"Wd", g->order ? &g->Wp[2] : &g->Wd},
                               {"Y", &g->Y},
                               {"packed", &g->o.packed}, {"pool", &g->o.pool},
                               {"pool_counter", &g->o.counter}, {"pool_capacity", &g->o.capacity},
                               {"row_info", &g->row_info}, {"dense_h", &g->dense_h}, {"dense_acc", &g->dense_acc},
                               {"dense_capacity", &g->dense_cap}, {"hot_h", &g->hot_h}, {"M", &g->M}, {"F", &g->F},
                               {"D", &g->D}};
    return sp_case_arg_find(name, v, sizeof v / sizeof v[0]);
}

/* The configuration's workspace: the pool capacity and dense_capacity the bench asks for, else the
 * template's typical sizes; dense-path buffers (re)allocated to fit. */
static sptune_status ffn_bind(void *p, const sp_template *t, const sp_config *c)
{
    ffn_state *g = p;
    long long cap, hot = 0;
    sptune_status st = sp_twell_out_bind(&g->o, "twell-ffn", g->M, g->F, t, c);
    if (st != SPTUNE_OK) return st;
    /* the hot slice (its declared shape, M x the hot columns): the packed gate starts after it */
    int ai = sp_template_arg_index(t, "hot_h");
    if (ai >= 0) {
        sp_vars v;
        sp_config_vars(t, c, &g->prob, &v);
        if ((st = sp_arg_elements(sp_template_arg(t, ai), &v, &hot)) != SPTUNE_OK) return st;
    }
    /* its slice's columns (beside a sparse part, 0 < hot < 8, the cold part's rounding remainder, M x D, follows) */
    const long long h = sp_config_int(t, c, "hot");
    g->hot_cols = hot / g->M - (h > 0 && h < 8 ? g->D : 0);
    g->hot_used = hot;
    if (!g->hot_h || hot > g->hot_alloc) {
        sp_bench_free(g->hot_h);
        g->hot_h = 0;
        g->hot_alloc = hot;
        if ((st = sp_bench_alloc(g->b, (size_t)hot * 2 + 16, &g->hot_h))) return st;
    }
    if ((st = sp_twell_out_capacity(&g->o, g->order ? g->hGp : g->hG, g->M, g->F, (int)g->hot_cols,
                                    g->b->twell_pool, t, c, &g->prob)))
        return st;
    if (g->b->twell_dense >= 0) cap = g->b->twell_dense;
    else if ((st = sp_config_scalar_size(t, c, &g->prob, "dense_capacity", 0, &cap)) != SPTUNE_OK) return st;
    if (cap > g->M) cap = g->M;
    g->dense_cap = (int)cap;
    if (!g->row_info || cap > g->dense_rows) {
        sp_bench_free(g->row_info);
        sp_bench_free(g->dense_h);
        sp_bench_free(g->dense_acc);
        g->row_info = g->dense_h = g->dense_acc = 0;
        g->dense_rows = (int)cap;
        if ((st = sp_bench_alloc(g->b, ((size_t)g->M + 1 + (size_t)cap) * 4, &g->row_info)) ||
            (st = sp_bench_alloc(g->b, ((size_t)cap * g->F + 8) * 2, &g->dense_h)) ||
            (st = sp_bench_alloc(g->b, ((size_t)cap * g->D + 1) * 4, &g->dense_acc)))
            return st;
    }
    return SPTUNE_OK;
}

/* Everything the pipeline reads before writing poisoned: the packed gate, the pool, the per-token
 * counts, the dense rows and the hot slice (its zero step must clear what needs clearing), and Y. */
static sptune_status ffn_poison(void *p, CUstream s)
{
    ffn_state *g = p;
    const sp_cuda_api *cu;
    sptune_status st = sp_cuda_load(&cu);
    if (st == SPTUNE_OK) st = sp_twell_out_poison(&g->o, s);
    if (st == SPTUNE_OK) st = SP_CU(cu->MemsetD32Async(g->o.counter, 0xdeadbeefu, 2, s));
    if (st == SPTUNE_OK) st = SP_CU(cu->MemsetD32Async(g->row_info, 0x7fffffffu, (size_t)g->M + 1 + g->dense_rows, s));
    /* dense_h: a positive NaN, not the 0xffff the dense path writes over a lost tile (which would make a
     * gate the path failed to write look lost, recomputed and right) */
    if (st == SPTUNE_OK) st = SP_CU(cu->MemsetD16Async(g->dense_h, 0x7fc1u, (size_t)g->dense_rows * g->F + 8, s));
    if (st == SPTUNE_OK) st = SP_CU(cu->MemsetD32Async(g->dense_acc, 0x7fc00000u, (size_t)g->dense_rows * g->D + 1, s));
    if (st == SPTUNE_OK && g->hot_used > 0) st = sp_poison_bf16(g->hot_h, (size_t)g->hot_used, s);
    return st != SPTUNE_OK ? st : sp_poison_bf16(g->Y, (size_t)g->M * g->D, s);
}

/* Exact whatever the workspace: the output alone decides (within bf16 rounding of h's factors). */
static sptune_status ffn_verify(void *p, double *rel_err, char *detail, size_t len)
{
    ffn_state *g = p;
    return sp_verify_bf16_allow(g->Y, g->hY, g->hRef, g->hAllow, (size_t)g->M, (size_t)g->D,
                                rel_err, detail, len);
}

static sptune_status ffn_baseline(void *p, CUstream s)
{
    ffn_state *g = p;
    return sp_dense_ffn_chunk(g->blas, &g->mul, s, g->M, g->D, g->F, g->X, g->Wg, g->Wu, g->Wd, g->Ybase, g->Gb, g->Ub);
}

/* Dense-equivalent (the baseline's three GEMMs), so that TFLOP/s reads against the baseline's. */
static double ffn_flops(const sp_problem *p) { return sp_problem_flops(p, 6.0, "M", "D", "F"); }

const sp_case_ops sp_case_twell_ffn = {
    .op = "twell-ffn",
    .baseline_name = "cuBLAS bf16 dense gated FFN (gate, up, relu-product, down)",
    .create = ffn_create,
    .arg = ffn_arg,
    .poison = ffn_poison,
    .verify = ffn_verify,
    .bind = ffn_bind,
    .baseline = ffn_baseline,
    .flops = ffn_flops,
    .destroy = ffn_destroy,
    .tolerance = 1e-2,
};
