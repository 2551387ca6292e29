#include "sp_cublas.h"
#include "sp_status.h"

#include <cublas_v2.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

struct sp_cublas {
    void *lib;
    cublasHandle_t handle;
    __typeof__(cublasCreate_v2) *Create;
    __typeof__(cublasDestroy_v2) *Destroy;
    __typeof__(cublasSetStream_v2) *SetStream;
    __typeof__(cublasGemmEx) *GemmEx;
    __typeof__(cublasSgemm_v2) *Sgemm;
};

static sptune_status check(cublasStatus_t s, const char *what)
{
    if (s == CUBLAS_STATUS_SUCCESS) return SPTUNE_OK;
    return sp_fail(SPTUNE_ERR_CUDA, "%s: cuBLAS status %d", what, (int)s);
}

sptune_status sp_cublas_create(sp_cublas **out)
{
    static const char *names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};
    sp_cublas *h = calloc(1, sizeof *h);
    if (!h) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !h->lib; i++)
        h->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h->lib) {
        free(h);
        return sp_fail(SPTUNE_ERR_UNSUPPORTED, "cuBLAS not found (libcublas.so.13): %s", dlerror());
    }
#define SYM(field, name) do { *(void **)&h->field = dlsym(h->lib, name); \
        if (!h->field) { dlclose(h->lib); free(h); \
            return sp_fail(SPTUNE_ERR_UNSUPPORTED, "cuBLAS lacks %s", name); } } while (0)
    SYM(Create, "cublasCreate_v2");
    SYM(Destroy, "cublasDestroy_v2");
    SYM(SetStream, "cublasSetStream_v2");
    SYM(GemmEx, "cublasGemmEx");
    SYM(Sgemm, "cublasSgemm_v2");
#undef SYM
    sptune_status st = check(h->Create(&h->handle), "cublasCreate");
    if (st != SPTUNE_OK) { dlclose(h->lib); free(h); return st; }
    *out = h;
    return SPTUNE_OK;
}

void sp_cublas_destroy(sp_cublas *h)
{
    if (!h) return;
    if (h->handle) h->Destroy(h->handle);
    /* libcublas stays loaded: unloading it while the runtime holds state is not safe. */
    free(h);
}

sptune_status sp_cublas_set_stream(sp_cublas *h, CUstream s)
{
    return check(h->SetStream(h->handle, (cudaStream_t)s), "cublasSetStream");
}

/* Row-major C[M,N] = A[M,K] * op(B). cuBLAS is column-major, so it computes C^T (N x M) =
 * op(B)^T * A^T with A as stored (K x M column-major); B as stored is K x N column-major (B is
 * N x K row-major, b_kmajor: transposed) or N x K column-major (B is K x N row-major). */
static sptune_status gemm(sp_cublas *h, int M, int N, int K, CUdeviceptr A, CUdeviceptr B, int b_kmajor,
                          CUdeviceptr C, int c_fp32, int f16)
{
    const float one = 1.0f, zero = 0.0f;
    const cudaDataType_t in = f16 ? CUDA_R_16F : CUDA_R_16BF;
    return check(h->GemmEx(h->handle, b_kmajor ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one,
                           (const void *)B, in, b_kmajor ? K : N, (const void *)A, in, K,
                           &zero, (void *)C, c_fp32 ? CUDA_R_32F : in, N, CUBLAS_COMPUTE_32F,
                           CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx");
}

sptune_status sp_cublas_gemm_nt(sp_cublas *h, int M, int N, int K, CUdeviceptr A, CUdeviceptr B,
                                CUdeviceptr C, int c_fp32)
{
    return gemm(h, M, N, K, A, B, 1, C, c_fp32, 0);
}

sptune_status sp_cublas_gemm_nt_half(sp_cublas *h, int M, int N, int K, CUdeviceptr A, CUdeviceptr B,
                                     CUdeviceptr C, int c_fp32, int f16)
{
    return gemm(h, M, N, K, A, B, 1, C, c_fp32, f16);
}

sptune_status sp_cublas_gemm_nn(sp_cublas *h, int M, int N, int K, CUdeviceptr A, CUdeviceptr B,
                                CUdeviceptr C, int c_fp32)
{
    return gemm(h, M, N, K, A, B, 0, C, c_fp32, 0);
}

sptune_status sp_cublas_sgemm_nn(sp_cublas *h, int M, int N, int K, CUdeviceptr A, CUdeviceptr B, CUdeviceptr C)
{
    const float one = 1.0f, zero = 0.0f;
    return check(h->Sgemm(h->handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, (const float *)B, N, (const float *)A, K,
                          &zero, (float *)C, N),
                 "cublasSgemm");
}

