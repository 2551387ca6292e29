/* cuBLAS, loaded with dlopen like the driver: the tuner's baseline and reference, never a link
 * dependency of libsptune. */
#ifndef SP_CUBLAS_H
#define SP_CUBLAS_H

#include "sptune.h"
#include <cuda.h>

typedef struct sp_cublas sp_cublas;

/* Loads libcublas and creates a handle bound to the current context. */
sptune_status sp_cublas_create(sp_cublas **out);
void sp_cublas_destroy(sp_cublas *h);
sptune_status sp_cublas_set_stream(sp_cublas *h, CUstream s);

/* Row-major C[M,N] = A[M,K] * B[N,K]^T with bf16 A and B and fp32 accumulation; C is bf16
 * (c_fp32 == 0) or fp32 (c_fp32 != 0, used as the verification reference). */
sptune_status sp_cublas_gemm_nt(sp_cublas *h, int M, int N, int K, CUdeviceptr A, CUdeviceptr B,
                                CUdeviceptr C, int c_fp32);
/* The same with fp16 (f16 != 0) or bf16 A and B, and C of that type unless c_fp32. */
sptune_status sp_cublas_gemm_nt_half(sp_cublas *h, int M, int N, int K, CUdeviceptr A, CUdeviceptr B,
                                     CUdeviceptr C, int c_fp32, int f16);
/* Row-major C[M,N] = A[M,K] * B[K,N] (both plain row-major), bf16 in, fp32 accumulation. */
sptune_status sp_cublas_gemm_nn(sp_cublas *h, int M, int N, int K, CUdeviceptr A, CUdeviceptr B,
                                CUdeviceptr C, int c_fp32);
/* Row-major C[M,N] = A[M,K] * B[K,N], all fp32 (references whose inputs are not bf16). */
sptune_status sp_cublas_sgemm_nn(sp_cublas *h, int M, int N, int K, CUdeviceptr A, CUdeviceptr B, CUdeviceptr C);

#endif
