/* The dense gated FFN layer on cuBLAS, Y = (relu(X Wg^T) (.) X Wu^T) Wd (bf16, fp32 accumulation): the tuner's
 * baseline for twell-ffn, and what the runtime API runs in the op's place where the dense layer is the faster or the
 * safer choice (api/sp_api_dense.c). It needs no workspace of its own: the gate and up of a chunk of rows live in the
 * caller's workspace, as many rows at a time as it holds. */
#ifndef SP_DENSE_FFN_H
#define SP_DENSE_FFN_H

#include "sp_cublas.h"
#include "sp_launch.h"
#include "sptune.h"
#include <cuda.h>
#include <stddef.h>

/* The element-wise step, compiled with NVRTC for arch (sm_count: its grid): out = bf16(f(a) * b) over n bf16 elements,
 * f = relu when relu != 0, else identity. */
sptune_status sp_helper_mul_load(const char *arch, int sm_count, sp_kernel *k);
sptune_status sp_helper_mul(const sp_kernel *k, CUstream s, CUdeviceptr a, CUdeviceptr b, CUdeviceptr out, size_t n,
                            int relu);

/* One chunk of r rows of the layer below (G, U: its gate and up, r x F each), on blas's stream and s: the gate and up
 * GEMMs, relu(gate) (.) up into U, the down GEMM into Y. */
sptune_status sp_dense_ffn_chunk(sp_cublas *blas, const sp_kernel *mul, CUstream s, int r, int D, int F, CUdeviceptr X,
                                 CUdeviceptr Wg, CUdeviceptr Wu, CUdeviceptr Wd, CUdeviceptr Y, CUdeviceptr G,
                                 CUdeviceptr U);

typedef struct sp_dense_ffn sp_dense_ffn;

/* cuBLAS and the element-wise kernel, in the current context. */
sptune_status sp_dense_ffn_create(const char *arch, int sm_count, sp_dense_ffn **out);
void sp_dense_ffn_destroy(sp_dense_ffn *d);

/* Rows of a chunk that ws_bytes hold (its gate and up, F bf16 values each): at most M; 0 when not even one. */
long long sp_dense_ffn_rows(long long M, int F, size_t ws_bytes);
/* The workspace a chunk of `rows` rows takes. */
size_t sp_dense_ffn_bytes(long long rows, int F);

/* The layer for M tokens (X, Y: M x D; Wg, Wu, Wd: F x D, row j neuron j's), chunk by chunk of sp_dense_ffn_rows rows
 * on stream s; ws (256-byte aligned) of ws_bytes holds each chunk's gate and up. SPTUNE_ERR_INVALID when it holds not
 * even one row's. */
sptune_status sp_dense_ffn_run(sp_dense_ffn *d, CUstream s, long long M, int D, int F, CUdeviceptr X, CUdeviceptr Wg,
                               CUdeviceptr Wu, CUdeviceptr Wd, CUdeviceptr Y, CUdeviceptr ws, size_t ws_bytes);

#endif
