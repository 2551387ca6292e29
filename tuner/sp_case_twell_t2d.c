/* GPU harness of twell-t2d, the TwELL consumer: Y = H * Wd with H given TwELL-packed.
 * Data: H (M x F) from sp_twell_gate_data (a mean of nnz nonzeros per row, heavy-tailed neurons,
 * dense and denser rows, overflowing tiles), packed by the CPU reference packer with the
 * problem's T and S. Wd (F x D) uniform in [-1, 1). Reference: cuBLAS
 * fp32 of the dense H (spot-checked in fp64). Baseline: the dense cuBLAS bf16 H * Wd. */
#include "sp_case.h"
#include "sp_cublas.h"
#include "sp_cuda.h"
#include "sp_status.h"
#include "sp_twell.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct t2d_state {
    sp_cublas *blas;
    int M, F, D, T, S, nnz;
    CUdeviceptr packed, pool, Wd, Y, H, Ybase, Yref;
    unsigned short *hH, *hW, *hY;
    float *hRef;
} t2d_state;

static void t2d_destroy(void *p)
{
    t2d_state *g = p;
    if (!g) return;
    sp_bench_free(g->packed); sp_bench_free(g->pool); sp_bench_free(g->Wd); sp_bench_free(g->Y);
    sp_bench_free(g->H); sp_bench_free(g->Ybase); sp_bench_free(g->Yref);
    free(g->hH); free(g->hW); free(g->hY); free(g->hRef);
    sp_cublas_destroy(g->blas);
    free(g);
}

static sptune_status t2d_create(sp_bench *b, const sp_problem *p, void **out)
{
    const sp_cuda_api *cu;
    sptune_status st = sp_cuda_load(&cu);
    if (st != SPTUNE_OK) return st;
    t2d_state *g = calloc(1, sizeof *g);
    if (!g) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    if (!sp_problem_int(p, "M", &g->M) || !sp_problem_int(p, "F", &g->F) || !sp_problem_int(p, "D", &g->D) ||
        !sp_problem_int(p, "T", &g->T) || !sp_problem_int(p, "S", &g->S) || !sp_problem_int(p, "nnz", &g->nnz) ||
        g->nnz > g->F) {
        free(g);
        return sp_fail(SPTUNE_ERR_INVALID, "twell-t2d needs positive integers M, F, D, T, S and nnz <= F");
    }
    sp_twell_shape sh = {g->M, g->F, g->T, g->S};
    if ((st = sp_twell_check_shape(&sh)) != SPTUNE_OK) { free(g); return st; }
    size_t h = (size_t)g->M * g->F, w = (size_t)g->F * g->D, y = (size_t)g->M * g->D;
    g->hH = malloc(h * 2); g->hW = malloc(w * 2); g->hY = malloc(y * 2); g->hRef = malloc(y * 4);
    if (!g->hH || !g->hW || !g->hY || !g->hRef) {
        st = sp_fail(SPTUNE_ERR_NOMEM, "out of host memory for twell-t2d");
        goto fail;
    }
    uint64_t s = b->rng ^ 0x7d2ull;
    sp_twell_dist dist;
    if ((st = sp_twell_dist_get(p, g->F, &dist)) || (st = sp_twell_gate_data(&s, g->M, g->F, &dist, g->hH))) goto fail;
    if ((st = sp_twell_upload_packed(b, &sh, g->hH, &g->packed, &g->pool)) || (st = sp_bench_alloc(b, w * 2, &g->Wd)) || (st = sp_bench_alloc(b, y * 2, &g->Y)) ||
        (st = sp_bench_alloc(b, h * 2, &g->H)) || (st = sp_bench_alloc(b, y * 2, &g->Ybase)) ||
        (st = sp_bench_alloc(b, y * 4, &g->Yref)))
        goto fail;
    if ((st = sp_bench_upload(g->H, g->hH, h * 2)) || (st = sp_bench_random_bf16(b, g->Wd, g->hW, w, 1.0f)))
        goto fail;
    if ((st = sp_cublas_create(&g->blas)) || (st = sp_cublas_set_stream(g->blas, b->stream)) ||
        (st = sp_cublas_gemm_nn(g->blas, g->M, g->D, g->F, g->H, g->Wd, g->Yref, 1)) ||
        (st = sp_fetch_f32(b->stream, g->Yref, g->hRef, y)))
        goto fail;
    if ((st = sp_check_reference(g->hRef, (size_t)g->M, (size_t)g->D, (size_t)g->F, g->hH, g->hW, 0, 64)))
        goto fail;
    *out = g;
    return SPTUNE_OK;
fail:
    t2d_destroy(g);
    return st;
}

static void *t2d_arg(void *p, const char *name)
{
    t2d_state *g = p;
    const sp_case_named v[] = {{"packed", &g->packed}, {"pool", &g->pool}, {"Wd", &g->Wd}, {"Y", &g->Y},
                               {"M", &g->M}, {"F", &g->F}, {"D", &g->D}, {"T", &g->T}, {"S", &g->S}};
    return sp_case_arg_find(name, v, sizeof v / sizeof v[0]);
}

static sptune_status t2d_poison(void *p, CUstream s)
{
    t2d_state *g = p;
    return sp_poison_bf16(g->Y, (size_t)g->M * g->D, s);
}

static sptune_status t2d_verify(void *p, double *rel_err, char *detail, size_t len)
{
    t2d_state *g = p;
    return sp_verify_bf16(g->Y, g->hY, g->hRef, (size_t)g->M, (size_t)g->D, rel_err, detail, len);
}

static sptune_status t2d_baseline(void *p, CUstream s)
{
    t2d_state *g = p;
    (void)s;
    return sp_cublas_gemm_nn(g->blas, g->M, g->D, g->F, g->H, g->Wd, g->Ybase, 0);
}

/* Dense-equivalent, so that TFLOP/s reads against the baseline's. */
static double t2d_flops(const sp_problem *p) { return sp_problem_flops(p, 2.0, "M", "F", "D"); }

const sp_case_ops sp_case_twell_t2d = {
    .op = "twell-t2d",
    .baseline_name = "cuBLAS bf16 dense H x W_down",
    .create = t2d_create,
    .arg = t2d_arg,
    .poison = t2d_poison,
    .verify = t2d_verify,
    .baseline = t2d_baseline,
    .flops = t2d_flops,
    .destroy = t2d_destroy,
    .tolerance = 1e-2,
};
