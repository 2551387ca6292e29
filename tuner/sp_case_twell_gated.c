/* GPU harness of twell-gated, the gated FFN's consumer: Y = (G (.) X Wu^T) Wd with G packed.
 * Data: G (M x F) from sp_twell_gate_data, packed by the CPU reference packer with the problem's
 * T and S; X, Wu (F x D), Wd (F x D) uniform in [-1, 1). Reference: U = X Wu^T by cuBLAS in
 * fp32, H = G (.) U on the host, Y = H Wd by cuBLAS fp32 SGEMM, spot-checked against fp64 sums.
 * Baseline: the dense gated consumer in cuBLAS bf16, X Wu^T, the element-wise product with the
 * dense gate, and the down GEMM, timed together. */
#include "sp_case.h"
#include "sp_cublas.h"
#include "sp_dense_ffn.h"
#include "sp_cuda.h"
#include "sp_status.h"
#include "sp_twell.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gated_state {
    sp_bench *b;
    sp_cublas *blas;
    sp_kernel mul;
    int M, F, D, T, S, nnz;
    CUdeviceptr packed, pool, X, Wu, Wd, Y, G, U, Ybase, U32, Wd32, Yref;
    unsigned short *hG, *hX, *hWu, *hWd, *hY;
    float *hU, *hRef, *hWd32;
} gated_state;

static void gated_destroy(void *p)
{
    gated_state *g = p;
    if (!g) return;
    CUdeviceptr *d[] = {&g->packed, &g->pool, &g->X, &g->Wu, &g->Wd, &g->Y, &g->G, &g->U, &g->Ybase, &g->U32,
                        &g->Wd32, &g->Yref};
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) sp_bench_free(*d[i]);
    void *h[] = {g->hG, g->hX, g->hWu, g->hWd, g->hY, g->hU, g->hRef, g->hWd32};
    for (size_t i = 0; i < sizeof h / sizeof h[0]; i++) free(h[i]);
    if (g->mul.module) sp_kernel_unload(&g->mul);
    sp_cublas_destroy(g->blas);
    free(g);
}

/* fp64 value of output (r, c) from the inputs, for the reference's spot check. */
static double exact(const gated_state *g, int r, int c)
{
    double y = 0;
    const unsigned short *x = g->hX + (size_t)r * g->D;
    for (int j = 0; j < g->F; j++) {
        unsigned short gv = g->hG[(size_t)r * g->F + j];
        if (!gv) continue;
        const unsigned short *w = g->hWu + (size_t)j * g->D;
        double u = 0;
        for (int k = 0; k < g->D; k++) u += (double)sp_bf16_to_float(x[k]) * sp_bf16_to_float(w[k]);
        y += sp_bf16_to_float(gv) * u * sp_bf16_to_float(g->hWd[(size_t)j * g->D + c]);
    }
    return y;
}

static sptune_status gated_create(sp_bench *b, const sp_problem *p, void **out)
{
    const sp_cuda_api *cu;
    sptune_status st = sp_cuda_load(&cu);
    if (st != SPTUNE_OK) return st;
    gated_state *g = calloc(1, sizeof *g);
    if (!g) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    g->b = b;
    if (!sp_problem_int(p, "M", &g->M) || !sp_problem_int(p, "F", &g->F) || !sp_problem_int(p, "D", &g->D) ||
        !sp_problem_int(p, "T", &g->T) || !sp_problem_int(p, "S", &g->S) || !sp_problem_int(p, "nnz", &g->nnz) ||
        g->nnz > g->F) {
        free(g);
        return sp_fail(SPTUNE_ERR_INVALID, "twell-gated needs positive integers M, F, D, T, S and nnz <= F");
    }
    sp_twell_shape sh = {g->M, g->F, g->T, g->S};
    if ((st = sp_twell_check_shape(&sh)) != SPTUNE_OK) { free(g); return st; }
    size_t mf = (size_t)g->M * g->F, md = (size_t)g->M * g->D, fd = (size_t)g->F * g->D;
    g->hG = malloc(mf * 2); g->hX = malloc(md * 2); g->hWu = malloc(fd * 2); g->hWd = malloc(fd * 2);
    g->hY = malloc(md * 2); g->hU = malloc(mf * 4); g->hRef = malloc(md * 4); g->hWd32 = malloc(fd * 4);
    if (!g->hG || !g->hX || !g->hWu || !g->hWd || !g->hY || !g->hU || !g->hRef || !g->hWd32) {
        st = sp_fail(SPTUNE_ERR_NOMEM, "out of host memory for twell-gated");
        goto fail;
    }
    uint64_t s = b->rng ^ 0x6a7edull;
    sp_twell_dist dist;
    if ((st = sp_twell_dist_get(p, g->F, &dist)) || (st = sp_twell_gate_data(&s, g->M, g->F, &dist, g->hG))) goto fail;
    if ((st = sp_twell_upload_packed(b, &sh, g->hG, &g->packed, &g->pool)) || (st = sp_bench_alloc(b, md * 2, &g->X)) || (st = sp_bench_alloc(b, fd * 2, &g->Wu)) ||
        (st = sp_bench_alloc(b, fd * 2, &g->Wd)) || (st = sp_bench_alloc(b, md * 2, &g->Y)) ||
        (st = sp_bench_alloc(b, mf * 2, &g->G)) || (st = sp_bench_alloc(b, mf * 2, &g->U)) ||
        (st = sp_bench_alloc(b, md * 2, &g->Ybase)) || (st = sp_bench_alloc(b, mf * 4, &g->U32)) ||
        (st = sp_bench_alloc(b, fd * 4, &g->Wd32)) || (st = sp_bench_alloc(b, md * 4, &g->Yref)))
        goto fail;
    if ((st = sp_bench_upload(g->G, g->hG, mf * 2)) || (st = sp_bench_random_bf16(b, g->X, g->hX, md, 1.0f)) ||
        (st = sp_bench_random_bf16(b, g->Wu, g->hWu, fd, 1.0f)) || (st = sp_bench_random_bf16(b, g->Wd, g->hWd, fd, 1.0f)))
        goto fail;
    /* The reference: U in fp32, H = G (.) U on the host, then an fp32 GEMM with Wd. */
    if ((st = sp_cublas_create(&g->blas)) || (st = sp_cublas_set_stream(g->blas, b->stream)) ||
        (st = sp_cublas_gemm_nt(g->blas, g->M, g->F, g->D, g->X, g->Wu, g->U32, 1)) ||
        (st = sp_fetch_f32(b->stream, g->U32, g->hU, mf)))
        goto fail;
    for (size_t i = 0; i < mf; i++) g->hU[i] *= sp_bf16_to_float(g->hG[i]);
    for (size_t i = 0; i < fd; i++) g->hWd32[i] = sp_bf16_to_float(g->hWd[i]);
    if ((st = sp_bench_upload(g->U32, g->hU, mf * 4)) || (st = sp_bench_upload(g->Wd32, g->hWd32, fd * 4)) ||
        (st = sp_cublas_sgemm_nn(g->blas, g->M, g->D, g->F, g->U32, g->Wd32, g->Yref)) ||
        (st = sp_fetch_f32(b->stream, g->Yref, g->hRef, md)))
        goto fail;
    /* Spot check of the reference in fp64: spread-out entries, the dense row among them. */
    double rms = 0;
    for (size_t i = 0; i < md; i++) rms += (double)g->hRef[i] * g->hRef[i];
    rms = sqrt(rms / (double)md);
    uint64_t q = 0x5107ull;
    for (int i = 0; i < 32; i++) {
        int r = i == 0 ? g->M / 2 : (int)(sp_rng_next(&q) % (uint64_t)g->M), c = (int)(sp_rng_next(&q) % (uint64_t)g->D);
        double want = exact(g, r, c), got = g->hRef[(size_t)r * g->D + c];
        if (fabs(got - want) > 1e-4 * (fabs(want) + rms)) {
            st = sp_fail(SPTUNE_ERR_WRONG_RESULT, "twell-gated: the cuBLAS reference disagrees with fp64 at (%d, %d): "
                         "%.6g against %.6g", r, c, got, want);
            goto fail;
        }
    }
    if ((st = sp_helper_mul_load(b->gpu.info.arch, b->gpu.info.sm_count, &g->mul)) != SPTUNE_OK) goto fail;
    *out = g;
    return SPTUNE_OK;
fail:
    gated_destroy(g);
    return st;
}

static void *gated_arg(void *p, const char *name)
{
    gated_state *g = p;
    const sp_case_named v[] = {{"packed", &g->packed}, {"pool", &g->pool}, {"X", &g->X}, {"Wu", &g->Wu},
                               {"Wd", &g->Wd}, {"Y", &g->Y}, {"M", &g->M}, {"F", &g->F}, {"D", &g->D},
                               {"T", &g->T}, {"S", &g->S}};
    return sp_case_arg_find(name, v, sizeof v / sizeof v[0]);
}

static sptune_status gated_poison(void *p, CUstream s)
{
    gated_state *g = p;
    return sp_poison_bf16(g->Y, (size_t)g->M * g->D, s);
}

static sptune_status gated_verify(void *p, double *rel_err, char *detail, size_t len)
{
    gated_state *g = p;
    return sp_verify_bf16(g->Y, g->hY, g->hRef, (size_t)g->M, (size_t)g->D, rel_err, detail, len);
}

static sptune_status gated_baseline(void *p, CUstream s)
{
    gated_state *g = p;
    sptune_status st;
    size_t mf = (size_t)g->M * g->F;
    if ((st = sp_cublas_gemm_nt(g->blas, g->M, g->F, g->D, g->X, g->Wu, g->U, 0)) != SPTUNE_OK) return st;
    if ((st = sp_helper_mul(&g->mul, s, g->G, g->U, g->U, mf, 0)) != SPTUNE_OK) return st;
    return sp_cublas_gemm_nn(g->blas, g->M, g->D, g->F, g->U, g->Wd, g->Ybase, 0);
}

/* Dense-equivalent (the baseline's two GEMMs), so that TFLOP/s reads against the baseline's. */
static double gated_flops(const sp_problem *p) { return sp_problem_flops(p, 4.0, "M", "F", "D"); }

const sp_case_ops sp_case_twell_gated = {
    .op = "twell-gated",
    .baseline_name = "cuBLAS bf16 dense gated consumer (X Wu^T, gate product, down GEMM)",
    .create = gated_create,
    .arg = gated_arg,
    .poison = gated_poison,
    .verify = gated_verify,
    .baseline = gated_baseline,
    .flops = gated_flops,
    .destroy = gated_destroy,
    .tolerance = 1e-2,
};
