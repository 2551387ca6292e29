/* GPU harness of the gemm op: C[M,N] = A[M,K] * B[N,K]^T in bf16 with fp32 accumulation.
 * Reference: cuBLAS with an fp32 output, itself spot-checked against fp64 dot products on the
 * host; baseline: cuBLAS with a bf16 output, the same operation the kernels do. */
#include "sp_case.h"
#include "sp_cublas.h"
#include "sp_cuda.h"
#include "sp_status.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

typedef struct gemm_state {
    sp_bench *b;
    sp_cublas *blas;
    int M, N, K;
    CUdeviceptr A, B, C, Cbase, Cref;
    unsigned short *hA, *hB, *hC;
    float *hRef;
} gemm_state;

static void gemm_destroy(void *p)
{
    gemm_state *g = p;
    if (!g) return;
    sp_bench_free(g->A); sp_bench_free(g->B); sp_bench_free(g->C);
    sp_bench_free(g->Cbase); sp_bench_free(g->Cref);
    free(g->hA); free(g->hB); free(g->hC); free(g->hRef);
    sp_cublas_destroy(g->blas);
    free(g);
}

static sptune_status gemm_create(sp_bench *b, const sp_problem *p, void **out)
{
    const sp_cuda_api *cu;
    sptune_status st = sp_cuda_load(&cu);
    if (st != SPTUNE_OK) return st;
    gemm_state *g = calloc(1, sizeof *g);
    if (!g) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    g->b = b;
    if (!sp_problem_int(p, "M", &g->M) || !sp_problem_int(p, "N", &g->N) || !sp_problem_int(p, "K", &g->K)) {
        free(g);
        return sp_fail(SPTUNE_ERR_INVALID, "gemm needs positive integer M, N, K");
    }
    size_t a = (size_t)g->M * g->K, bb = (size_t)g->N * g->K, c = (size_t)g->M * g->N;
    g->hA = malloc(a * 2); g->hB = malloc(bb * 2); g->hC = malloc(c * 2); g->hRef = malloc(c * 4);
    if (!g->hA || !g->hB || !g->hC || !g->hRef) {
        st = sp_fail(SPTUNE_ERR_NOMEM, "out of host memory for a %dx%dx%d gemm", g->M, g->N, g->K);
        goto fail;
    }
    if ((st = sp_bench_alloc(b, a * 2, &g->A)) || (st = sp_bench_alloc(b, bb * 2, &g->B)) ||
        (st = sp_bench_alloc(b, c * 2, &g->C)) || (st = sp_bench_alloc(b, c * 2, &g->Cbase)) ||
        (st = sp_bench_alloc(b, c * 4, &g->Cref)))
        goto fail;
    if ((st = sp_bench_random_bf16(b, g->A, g->hA, a, 1.0f)) || (st = sp_bench_random_bf16(b, g->B, g->hB, bb, 1.0f)))
        goto fail;
    if ((st = sp_cublas_create(&g->blas)) || (st = sp_cublas_set_stream(g->blas, b->stream)))
        goto fail;
    if ((st = sp_cublas_gemm_nt(g->blas, g->M, g->N, g->K, g->A, g->B, g->Cref, 1)))
        goto fail;
    if ((st = sp_fetch_f32(b->stream, g->Cref, g->hRef, c)))
        goto fail;
    /* The reference itself against fp64 on the host, at a few hundred spread-out entries. */
    if ((st = sp_check_reference(g->hRef, (size_t)g->M, (size_t)g->N, (size_t)g->K, g->hA, g->hB, 1, 256)))
        goto fail;
    *out = g;
    return SPTUNE_OK;
fail:
    gemm_destroy(g);
    return st;
}

static void *gemm_arg(void *p, const char *name)
{
    gemm_state *g = p;
    const sp_case_named v[] = {{"A", &g->A}, {"B", &g->B}, {"C", &g->C}, {"M", &g->M}, {"N", &g->N},
                               {"K", &g->K}};
    return sp_case_arg_find(name, v, sizeof v / sizeof v[0]);
}

static sptune_status gemm_poison(void *p, CUstream s)
{
    gemm_state *g = p;
    return sp_poison_bf16(g->C, (size_t)g->M * g->N, s);
}

static sptune_status gemm_verify(void *p, double *rel_err, char *detail, size_t len)
{
    gemm_state *g = p;
    return sp_verify_bf16(g->C, g->hC, g->hRef, (size_t)g->M, (size_t)g->N, rel_err, detail, len);
}

static sptune_status gemm_baseline(void *p, CUstream s)
{
    gemm_state *g = p;
    (void)s; /* the handle is bound to the bench stream */
    return sp_cublas_gemm_nt(g->blas, g->M, g->N, g->K, g->A, g->B, g->Cbase, 0);
}

static double gemm_flops(const sp_problem *p) { return sp_problem_flops(p, 2.0, "M", "N", "K"); }

const sp_case_ops sp_case_gemm = {
    .op = "gemm",
    .baseline_name = "cuBLAS bf16 GEMM",
    .create = gemm_create,
    .arg = gemm_arg,
    .poison = gemm_poison,
    .verify = gemm_verify,
    .baseline = gemm_baseline,
    .flops = gemm_flops,
    .destroy = gemm_destroy,
    .tolerance = 1e-2,
};
