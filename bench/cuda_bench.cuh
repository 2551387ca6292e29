// What the standalone CUDA benchmarks in bench/ share (bench/experiments/sp24-ceiling.cu, bench/experiments/peer-spinfer.cu): a checked CUDA
// call, a comparison kernel, and the timing method of sptune's own benchmarks (an L2 flush before every run, CUDA
// events around the run alone, three warm-ups, the median).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                                                          \
    do {                                                                                                               \
        cudaError_t e_ = (x);                                                                                          \
        if (e_ != cudaSuccess) {                                                                                       \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));                       \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

__device__ __forceinline__ float bench_to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float bench_to_float(half v) { return __half2float(v); }

// max |a - b| into out[0] and max |b| into out[1] (both zeroed first), over n elements; a NaN in a counts as infinite
template <typename T> __global__ void bench_cmp_kernel(const T *a, const T *b, size_t n, float *out)
{
    float d = 0.f, m = 0.f;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const float x = bench_to_float(a[i]), y = bench_to_float(b[i]);
        d = fmaxf(d, isnan(x) ? INFINITY : fabsf(x - y));
        m = fmaxf(m, fabsf(y));
    }
    atomicMax((int *)&out[0], __float_as_int(d));
    atomicMax((int *)&out[1], __float_as_int(m));
}

struct bench_timer {
    cudaStream_t st;
    void *flush = nullptr;
    size_t flush_bytes = 512u << 20;   // past the H200's 60 MB L2
    float *cmp = nullptr;
    cudaEvent_t e0, e1;
    explicit bench_timer(cudaStream_t s) : st(s)
    {
        CK(cudaMalloc(&flush, flush_bytes));
        CK(cudaMalloc(&cmp, 8));
        CK(cudaEventCreate(&e0));
        CK(cudaEventCreate(&e1));
    }
    // the median of `runs` timed runs of fn (launches on st), each after an L2 flush
    template <typename F> float median_ms(int runs, F &&fn)
    {
        std::vector<float> ts;
        for (int r = 0; r < runs + 3; ++r) {
            CK(cudaMemsetAsync(flush, r & 0xff, flush_bytes, st));
            CK(cudaEventRecord(e0, st));
            fn();
            CK(cudaEventRecord(e1, st));
            CK(cudaEventSynchronize(e1));
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            if (r >= 3) ts.push_back(ms);
        }
        std::sort(ts.begin(), ts.end());
        return ts[ts.size() / 2];
    }
    // max |y - ref| / max |ref| over n elements
    template <typename T> float rel_err(const T *y, const T *ref, size_t n)
    {
        CK(cudaMemsetAsync(cmp, 0, 8, st));
        bench_cmp_kernel<T><<<264, 256, 0, st>>>(y, ref, n, cmp);
        float h[2];
        CK(cudaMemcpyAsync(h, cmp, 8, cudaMemcpyDeviceToHost, st));
        CK(cudaStreamSynchronize(st));
        return h[1] > 0 ? h[0] / h[1] : INFINITY;
    }
};
