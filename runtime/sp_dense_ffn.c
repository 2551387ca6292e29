#include "sp_dense_ffn.h"
#include "sp_cache.h"
#include "sp_status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sp_dense_ffn {
    sp_cublas *blas;
    sp_kernel mul;
};

sptune_status sp_helper_mul_load(const char *arch, int sm_count, sp_kernel *k)
{
    /* out[i] = bf16(f(a[i]) * b[i]) with f = relu when relu != 0, else identity; any n. */
    static const char src[] =
        "extern \"C\" __global__ void sp_helper_mul(const unsigned short *a, const unsigned short *b,\n"
        "                                           unsigned short *out, unsigned long long n, int relu)\n"
        "{\n"
        "    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;\n"
        "         i += (unsigned long long)gridDim.x * blockDim.x) {\n"
        "        float x = __uint_as_float((unsigned)a[i] << 16), y = __uint_as_float((unsigned)b[i] << 16);\n"
        "        if (relu) x = fmaxf(x, 0.0f);\n"
        "        unsigned u = __float_as_uint(x * y);\n"
        "        out[i] = (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);\n"
        "    }\n"
        "}\n";
    sp_cubin cub;
    sp_kernel_src ks;
    memset(&ks, 0, sizeof ks);
    ks.nkernels = 1;
    sp_kernel_stage *g = &ks.stage[0];
    snprintf(g->kernel, sizeof g->kernel, "sp_helper_mul");
    g->grid[0] = (unsigned)(sm_count > 0 ? sm_count * 8 : 1024);
    g->grid[1] = g->grid[2] = 1;
    g->block[0] = 256;
    g->block[1] = g->block[2] = 1;
    sptune_status st = sp_kernel_build(NULL, src, g->kernel, arch, NULL, 0, &cub);
    if (st == SPTUNE_OK) st = sp_kernel_load(&cub, &ks, k);
    sp_cubin_free(&cub);
    return st;
}

sptune_status sp_helper_mul(const sp_kernel *k, CUstream s, CUdeviceptr a, CUdeviceptr b, CUdeviceptr out, size_t n,
                            int relu)
{
    unsigned long long nn = n;
    void *args[] = {&a, &b, &out, &nn, &relu};
    return sp_kernel_launch(k, s, args);
}

sptune_status sp_dense_ffn_create(const char *arch, int sm_count, sp_dense_ffn **out)
{
    sp_dense_ffn *d = calloc(1, sizeof *d);
    if (!d) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    sptune_status st = sp_cublas_create(&d->blas);
    if (st == SPTUNE_OK && (st = sp_helper_mul_load(arch, sm_count, &d->mul)) != SPTUNE_OK) {
        sp_cublas_destroy(d->blas);
        d->blas = NULL;
    }
    if (st != SPTUNE_OK) {
        free(d);
        return sp_wrap(st, "the dense layer on cuBLAS");
    }
    *out = d;
    return SPTUNE_OK;
}

void sp_dense_ffn_destroy(sp_dense_ffn *d)
{
    if (!d) return;
    sp_kernel_unload(&d->mul);
    sp_cublas_destroy(d->blas);
    free(d);
}

sptune_status sp_dense_ffn_chunk(sp_cublas *blas, const sp_kernel *mul, CUstream s, int r, int D, int F, CUdeviceptr X,
                                 CUdeviceptr Wg, CUdeviceptr Wu, CUdeviceptr Wd, CUdeviceptr Y, CUdeviceptr G,
                                 CUdeviceptr U)
{
    sptune_status st;
    if ((st = sp_cublas_gemm_nt(blas, r, F, D, X, Wg, G, 0)) != SPTUNE_OK) return st;
    if ((st = sp_cublas_gemm_nt(blas, r, F, D, X, Wu, U, 0)) != SPTUNE_OK) return st;
    if ((st = sp_helper_mul(mul, s, G, U, U, (size_t)r * (size_t)F, 1)) != SPTUNE_OK) return st;
    return sp_cublas_gemm_nn(blas, r, D, F, U, Wd, Y, 0);
}

/* A chunk of r rows: its gate at the workspace's base, its up 256-byte aligned after it. */
static size_t up_offset(long long r, int F) { return ((size_t)r * (size_t)F * 2 + 255) / 256 * 256; }

size_t sp_dense_ffn_bytes(long long rows, int F) { return up_offset(rows, F) + (size_t)rows * (size_t)F * 2; }

long long sp_dense_ffn_rows(long long M, int F, size_t ws_bytes)
{
    if (F < 1 || M < 1) return 0;
    long long r = (long long)(ws_bytes / ((size_t)F * 4 + 1));
    if (r > M) r = M;
    /* whole multiples of 128 rows where there are that many (cuBLAS's tiles), then what still fits */
    if (r > 128 && r < M) r -= r % 128;
    while (r > 0 && up_offset(r, F) + (size_t)r * (size_t)F * 2 > ws_bytes) r--;
    return r;
}

sptune_status sp_dense_ffn_run(sp_dense_ffn *d, CUstream s, long long M, int D, int F, CUdeviceptr X, CUdeviceptr Wg,
                               CUdeviceptr Wu, CUdeviceptr Wd, CUdeviceptr Y, CUdeviceptr ws, size_t ws_bytes)
{
    const long long rows = sp_dense_ffn_rows(M, F, ws_bytes);
    if (rows < 1)
        return sp_fail(SPTUNE_ERR_INVALID, "the dense layer: a workspace of %zu bytes holds no row's gate and up "
                       "(%zu bytes)", ws_bytes, up_offset(1, F) + (size_t)F * 2);
    sptune_status st = sp_cublas_set_stream(d->blas, s);
    const CUdeviceptr G = ws, U = ws + up_offset(rows, F);
    for (long long r0 = 0; st == SPTUNE_OK && r0 < M; r0 += rows) {
        const int r = (int)(M - r0 < rows ? M - r0 : rows);
        const CUdeviceptr Xc = X + (CUdeviceptr)r0 * (CUdeviceptr)D * 2, Yc = Y + (CUdeviceptr)r0 * (CUdeviceptr)D * 2;
        st = sp_dense_ffn_chunk(d->blas, &d->mul, s, r, D, F, Xc, Wg, Wu, Wd, Yc, G, U);
    }
    return st;
}
