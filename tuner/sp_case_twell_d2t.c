/* GPU harness of twell-d2t, the TwELL producer: H = relu(X Wg^T) packed to TwELL.
 * Data: sp_twell_producer_data (30 % of the neurons never fire, the rest share the problem's
 * mean nonzeros per row, nnz). Reference: cuBLAS fp32 X Wg^T (spot-checked in fp64),
 * relu on the host. The kernel's TwELL output is decoded by the CPU reference unpacker, which
 * also validates its structure, then compared element by element. Baseline: the plain cuBLAS
 * bf16 GEMM of the same shape. */
#include "sp_case.h"
#include "sp_cublas.h"
#include "sp_cuda.h"
#include "sp_status.h"
#include "sp_twell.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct d2t_state {
    sp_bench *b;
    sp_cublas *blas;
    int M, D, F, nnz;
    sp_twell_out o;                  /* the kernel's output */
    CUdeviceptr X, W, Cbase, Href;
    unsigned short *hX, *hW, *hOut;
    float *hRef;
    uint32_t *hPacked, *hPool;
} d2t_state;

static void d2t_destroy(void *p)
{
    d2t_state *g = p;
    if (!g) return;
    sp_bench_free(g->X); sp_bench_free(g->W); sp_bench_free(g->Cbase); sp_bench_free(g->Href);
    sp_twell_out_free(&g->o);
    free(g->hX); free(g->hW); free(g->hOut); free(g->hRef); free(g->hPacked); free(g->hPool);
    sp_cublas_destroy(g->blas);
    free(g);
}

static sptune_status d2t_create(sp_bench *b, const sp_problem *p, void **out)
{
    const sp_cuda_api *cu;
    sptune_status st = sp_cuda_load(&cu);
    if (st != SPTUNE_OK) return st;
    d2t_state *g = calloc(1, sizeof *g);
    if (!g) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    g->b = b;
    if (!sp_problem_int(p, "M", &g->M) || !sp_problem_int(p, "D", &g->D) || !sp_problem_int(p, "F", &g->F) ||
        !sp_problem_int(p, "nnz", &g->nnz) || g->nnz > g->F) {
        free(g);
        return sp_fail(SPTUNE_ERR_INVALID, "twell-d2t needs positive integers M, D, F and nnz <= F");
    }
    size_t x = (size_t)g->M * g->D, w = (size_t)g->F * g->D, h = (size_t)g->M * g->F;
    if ((st = sp_twell_out_alloc(b, g->M, g->F, -1, &g->o)) != SPTUNE_OK) goto fail;
    g->hX = malloc(x * 2); g->hW = malloc(w * 2); g->hOut = malloc(h * 2);
    g->hRef = malloc(h * 4); g->hPacked = malloc(g->o.packed_cap * 4); g->hPool = malloc(g->o.capacity * 4);
    if (!g->hX || !g->hW || !g->hOut || !g->hRef || !g->hPacked || !g->hPool) {
        st = sp_fail(SPTUNE_ERR_NOMEM, "out of host memory for twell-d2t %dx%dx%d", g->M, g->D, g->F);
        goto fail;
    }
    if ((st = sp_bench_alloc(b, x * 2, &g->X)) || (st = sp_bench_alloc(b, w * 2, &g->W)) ||
        (st = sp_bench_alloc(b, h * 2, &g->Cbase)) || (st = sp_bench_alloc(b, h * 4, &g->Href)))
        goto fail;
    uint64_t s = b->rng ^ 0x5eedull;
    sp_twell_dist dist;
    if ((st = sp_twell_dist_get(p, g->F, &dist)) ||
        (st = sp_twell_producer_data(&s, g->M, g->D, g->F, &dist, g->hX, g->hW)))
        goto fail;
    if ((st = sp_bench_upload(g->X, g->hX, x * 2)) || (st = sp_bench_upload(g->W, g->hW, w * 2)))
        goto fail;
    if ((st = sp_cublas_create(&g->blas)) || (st = sp_cublas_set_stream(g->blas, b->stream)) ||
        (st = sp_cublas_gemm_nt(g->blas, g->M, g->F, g->D, g->X, g->W, g->Href, 1)) ||
        (st = sp_fetch_f32(b->stream, g->Href, g->hRef, h)))
        goto fail;
    if ((st = sp_check_reference(g->hRef, (size_t)g->M, (size_t)g->F, (size_t)g->D, g->hX, g->hW, 1, 64)))
        goto fail;
    *out = g;
    return SPTUNE_OK;
fail:
    d2t_destroy(g);
    return st;
}

static void *d2t_arg(void *p, const char *name)
{
    d2t_state *g = p;
    const sp_case_named v[] = {{"X", &g->X}, {"Wg", &g->W}, {"packed", &g->o.packed}, {"pool", &g->o.pool},
                               {"pool_counter", &g->o.counter}, {"pool_capacity", &g->o.capacity},
                               {"M", &g->M}, {"F", &g->F}, {"D", &g->D}};
    return sp_case_arg_find(name, v, sizeof v / sizeof v[0]);
}

static sptune_status d2t_bind(void *p, const sp_template *t, const sp_config *c)
{
    d2t_state *g = p;
    return sp_twell_out_bind(&g->o, "twell-d2t", g->M, g->F, t, c);
}

static sptune_status d2t_prepare(void *p, CUstream s) { return sp_twell_out_reset(&((d2t_state *)p)->o, s); }

static sptune_status d2t_poison(void *p, CUstream s) { return sp_twell_out_poison(&((d2t_state *)p)->o, s); }

static sptune_status d2t_verify(void *p, double *rel_err, char *detail, size_t len)
{
    const sp_cuda_api *cu;
    d2t_state *g = p;
    sptune_status st = sp_cuda_load(&cu);
    if (st != SPTUNE_OK) return st;
    sp_twell_shape sh = {g->M, g->F, g->o.tile, g->o.slots};
    size_t words = (size_t)sp_twell_packed_words(&sh), h = (size_t)g->M * g->F;
    unsigned long long used;
    int fits;
    if ((st = sp_twell_out_used(&g->o, &used, &fits, detail, len)) != SPTUNE_OK) return st;
    if (!fits) {
        *rel_err = INFINITY;
        return SPTUNE_OK;
    }
    if ((st = SP_CU(cu->MemcpyDtoH(g->hPacked, g->o.packed, words * 4)))) return st;
    if (used && (st = SP_CU(cu->MemcpyDtoH(g->hPool, g->o.pool, used * 4)))) return st;
    if (sp_twell_unpack(&sh, g->hPacked, g->hPool, (int64_t)used, g->hOut) != SPTUNE_OK) {
        *rel_err = INFINITY;
        snprintf(detail, len, "malformed TwELL output: %s", sptune_last_error());
        return SPTUNE_OK;
    }
    sp_compare_bf16(g->hOut, g->hRef, h, (size_t)g->F, 1, rel_err, detail, len);
    return SPTUNE_OK;
}

static sptune_status d2t_baseline(void *p, CUstream s)
{
    d2t_state *g = p;
    (void)s;
    return sp_cublas_gemm_nt(g->blas, g->M, g->F, g->D, g->X, g->W, g->Cbase, 0);
}

static double d2t_flops(const sp_problem *p) { return sp_problem_flops(p, 2.0, "M", "D", "F"); }

const sp_case_ops sp_case_twell_d2t = {
    .op = "twell-d2t",
    .baseline_name = "cuBLAS bf16 GEMM (same shape, dense output)",
    .create = d2t_create,
    .arg = d2t_arg,
    .poison = d2t_poison,
    .verify = d2t_verify,
    .bind = d2t_bind,
    .prepare = d2t_prepare,
    .baseline = d2t_baseline,
    .flops = d2t_flops,
    .destroy = d2t_destroy,
    .tolerance = 1e-2,
};
