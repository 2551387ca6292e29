// The ceiling of the sparse-tensor-core route for slotfill-spmm on this GPU: a weight matrix that is
// exactly 2:4 sparse, streamed straight from global memory into mma.sp.m16n8k32 fragments (values and
// metadata in the register order of runtime/sp_slotfill.h's Sparse-TC layer, no decode at all), against
// dense cuBLAS bf16 on the same shapes in the same process. Whatever the unstructured encodings add
// (filled slots, residual, bitmap decode) comes on top of this kernel's time: it bounds what any design
// built on the sparse tensor cores can reach here (docs/journal/2026-12-01.md, issue 23's design evidence).
//
//   nvcc -O3 -std=c++17 -arch=sm_90a -o sp24-ceiling bench/experiments/sp24-ceiling.cu -lcublas
//   ./sp24-ceiling [runs [M K]]  (prints one line per shape and N, a summary last; M K: that shape alone)
//
// Kernel: a CTA is S warps over TT 16-row tiles; warp w takes the w-th of S slices of K and every tile,
// loading U k32 steps at a time (TT x U x 16 bytes of values per lane in flight, the X fragments
// beside them, read from L1/L2), then adds the S partial tiles in shared memory. Outputs are checked
// against cuBLAS (dense, fp32 accumulation) on the same data before anything is timed.
#include "../cuda_bench.cuh"

#include <cublas_v2.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#define CB(x)                                                                                       \
    do {                                                                                            \
        cublasStatus_t s_ = (x);                                                                    \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                          \
            fprintf(stderr, "%s:%d: %s: cuBLAS status %d\n", __FILE__, __LINE__, #x, (int)s_);      \
            exit(1);                                                                                \
        }                                                                                           \
    } while (0)

typedef uint32_t u32;

__device__ __forceinline__ void mma_sp(float *d, const u32 *a, const u32 *b, u32 e, int sel)
{
    if (sel)
        asm volatile("mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                     "{%4,%5,%6,%7}, {%8,%9,%10,%11}, {%0,%1,%2,%3}, %12, 1;\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]), "r"(e));
    else
        asm volatile("mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                     "{%4,%5,%6,%7}, {%8,%9,%10,%11}, {%0,%1,%2,%3}, %12, 0;\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]), "r"(e));
}

__device__ __forceinline__ uint4 ldg_stream(const uint4 *p)
{
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
}

// vals: [tile][kstep][lane] uint4; meta: [tile][kstep/2][lane]; X: [N][K]; Y: [N][M]. K % 64 == 0, M % 16 == 0.
template <int TT, int NB, int S, int U>
__global__ void __launch_bounds__(32 * S) sp24_kernel(const uint4 *__restrict__ vals, const u32 *__restrict__ meta,
                                                      const __nv_bfloat16 *__restrict__ X, __nv_bfloat16 *__restrict__ Y,
                                                      int M, int N, int K)
{
    __shared__ float red[S][TT * 16][NB * 8];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int KS = K / 32, pairs = KS / 2;
    const int p0 = (int)((long long)pairs * warp / S), p1 = (int)((long long)pairs * (warp + 1) / S);
    const int k0 = 2 * p0, k1 = 2 * p1;
    const int tile0 = blockIdx.x * TT;
    float acc[TT][NB][4];
#pragma unroll
    for (int i = 0; i < TT; ++i)
#pragma unroll
        for (int j = 0; j < NB; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;
    // pointers advanced step by step (32-bit strides); rows of X past N read as zeros (a select, no branch)
    const uint4 *vp = vals + ((size_t)tile0 * KS + k0) * 32 + lane;
    const u32 *mp = meta + ((size_t)tile0 * (KS / 2) + k0 / 2) * 32 + lane;
    const u32 *xp[NB];
    bool xin[NB];
#pragma unroll
    for (int j = 0; j < NB; ++j) {
        xin[j] = j * 8 + g < N;
        xp[j] = (const u32 *)X + ((size_t)(xin[j] ? j * 8 + g : 0) * K + (size_t)k0 * 32 + 2 * t) / 2;
    }
    const size_t vtile = (size_t)KS * 32, mtile = (size_t)(KS / 2) * 32;
    // two register batches of U steps: batch b + 1's loads are in flight while batch b's mma run
    struct batch { uint4 a[TT][U]; u32 e[TT][U / 2], b[U][NB][4]; };
    auto load = [&](batch &B, int bi) {
        const int o = bi * U;
#pragma unroll
        for (int u = 0; u < U; ++u) {
#pragma unroll
            for (int i = 0; i < TT; ++i) {
                B.a[i][u] = ldg_stream(vp + i * vtile + (o + u) * 32);
                if ((u & 1) == 0) B.e[i][u / 2] = __ldg(mp + i * mtile + ((o + u) / 2) * 32);
            }
#pragma unroll
            for (int j = 0; j < NB; ++j)
#pragma unroll
                for (int q = 0; q < 4; ++q) {
                    const u32 v = __ldg(xp[j] + (o + u) * 16 + 4 * q);
                    B.b[u][j][q] = xin[j] ? v : 0u;
                }
        }
    };
    auto compute = [&](const batch &B) {
#pragma unroll
        for (int u = 0; u < U; ++u)
#pragma unroll
            for (int i = 0; i < TT; ++i) {
                const u32 av[4] = {B.a[i][u].x, B.a[i][u].y, B.a[i][u].z, B.a[i][u].w};
#pragma unroll
                for (int j = 0; j < NB; ++j) mma_sp(acc[i][j], av, B.b[u][j], B.e[i][u / 2], u & 1);
            }
    };
    const int nbat = (k1 - k0) / U;
    batch P, Q;
    if (nbat > 0) load(P, 0);
    for (int bi = 0; bi < nbat; bi += 2) {
        if (bi + 1 < nbat) load(Q, bi + 1);
        compute(P);
        if (bi + 1 >= nbat) break;
        if (bi + 2 < nbat) load(P, bi + 2);
        compute(Q);
    }
    int ks = k0 + nbat * U;
    vp += nbat * U * 32;
    mp += nbat * (U / 2) * 32;
#pragma unroll
    for (int j = 0; j < NB; ++j) xp[j] += nbat * U * 16;
    for (; ks < k1; ks += 2) { // the slice's last steps, a pair at a time
#pragma unroll
        for (int i = 0; i < TT; ++i) {
            const u32 ee = __ldg(mp + i * mtile);
#pragma unroll
            for (int u = 0; u < 2; ++u) {
                const uint4 q4 = ldg_stream(vp + i * vtile + u * 32);
                const u32 av[4] = {q4.x, q4.y, q4.z, q4.w};
#pragma unroll
                for (int j = 0; j < NB; ++j) {
                    u32 bb[4];
#pragma unroll
                    for (int q = 0; q < 4; ++q) {
                        const u32 v = __ldg(xp[j] + u * 16 + 4 * q);
                        bb[q] = xin[j] ? v : 0u;
                    }
                    mma_sp(acc[i][j], av, bb, ee, u);
                }
            }
        }
        vp += 64;
        mp += 32;
#pragma unroll
        for (int j = 0; j < NB; ++j) xp[j] += 32;
    }
#pragma unroll
    for (int i = 0; i < TT; ++i)
#pragma unroll
        for (int j = 0; j < NB; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) red[warp][i * 16 + g + 8 * (e >> 1)][j * 8 + 2 * t + (e & 1)] = acc[i][j][e];
    __syncthreads();
    for (int idx = threadIdx.x; idx < TT * 16 * NB * 8; idx += 32 * S) {
        const int r = idx / (NB * 8), n = idx % (NB * 8);
        float s = 0.f;
#pragma unroll
        for (int w = 0; w < S; ++w) s += red[w][r][n];
        const int row = tile0 * 16 + r;
        if (n < N && row < M) Y[(size_t)n * M + row] = __float2bfloat16(s);
    }
}

typedef void (*launch_fn)(const uint4 *, const u32 *, const __nv_bfloat16 *, __nv_bfloat16 *, int, int, int, cudaStream_t);
template <int TT, int NB, int S, int U>
static void launch(const uint4 *v, const u32 *m, const __nv_bfloat16 *x, __nv_bfloat16 *y, int M, int N, int K, cudaStream_t st)
{
    sp24_kernel<TT, NB, S, U><<<M / 16 / TT, 32 * S, 0, st>>>(v, m, x, y, M, N, K);
}
struct cfg { int tt, nb, s, u; launch_fn f; };
#define CFG(TT, NB, S, U) {TT, NB, S, U, launch<TT, NB, S, U>}
static const cfg CFGS[] = {
    CFG(1, 1, 4, 8), CFG(1, 1, 8, 8), CFG(1, 1, 16, 4), CFG(2, 1, 4, 4), CFG(2, 1, 8, 4), CFG(1, 1, 8, 4), CFG(1, 1, 16, 8),
    CFG(1, 2, 4, 8), CFG(1, 2, 8, 8), CFG(1, 2, 16, 4), CFG(2, 2, 4, 4), CFG(2, 2, 8, 4), CFG(1, 2, 8, 4), CFG(1, 2, 16, 8),
};

static uint16_t bf16_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

int main(int argc, char **argv)
{
    const int runs = argc > 1 ? atoi(argv[1]) : 20;
    const int shapes[][2] = {{4096, 4096},  {11008, 4096}, {4096, 11008}, {14336, 4096}, {4096, 14336},
                             {18944, 3584}, {3584, 18944}, {13824, 5120}, {28672, 8192}, {8192, 28672},
                             {3584, 8192},  {8192, 3584},  {1792, 4096},  {4096, 1792}};
    const int Ns[] = {1, 8, 16};
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("GPU %s, %d SMs\n", prop.name, prop.multiProcessorCount);
    cublasHandle_t h;
    CB(cublasCreate(&h));
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    CB(cublasSetStream(h, st));
    bench_timer tm(st);
    std::mt19937_64 rng(7);
    std::normal_distribution<float> nd(0.f, 1.f);
    double lg_sum[3] = {0, 0, 0};
    int lg_n[3] = {0, 0, 0};
    int failed = 0;
    printf("%-12s %3s %10s %10s %7s %9s %9s  %s\n", "W (MxK)", "N", "sp24 ms", "cuBLAS ms", "ratio", "sp24 TB/s", "dense TB/s", "best config");
    for (auto &sh : shapes) {
        if (argc > 3 && (sh[0] != atoi(argv[2]) || sh[1] != atoi(argv[3]))) continue;
        const int M = sh[0], K = sh[1], KS = K / 32, tiles = M / 16;
        // W: each group of 4 along K keeps exactly two values (one of the six pairs), nonzero
        std::vector<uint16_t> wd((size_t)M * K, 0);
        std::vector<uint8_t> idx((size_t)M * (K / 4) * 2);
        static const int pairs6[6][2] = {{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}};
        for (size_t r = 0; r < (size_t)M; ++r)
            for (int q = 0; q < K / 4; ++q) {
                const int p = (int)(rng() % 6);
                for (int h2 = 0; h2 < 2; ++h2) {
                    float v = nd(rng) * 0.05f;
                    if (fabsf(v) < 1e-4f) v = 1e-3f;
                    wd[r * K + 4 * q + pairs6[p][h2]] = bf16_bits(v);
                    idx[(r * (K / 4) + q) * 2 + h2] = (uint8_t)pairs6[p][h2];
                }
            }
        std::vector<uint32_t> hv((size_t)tiles * KS * 32 * 4), hm((size_t)tiles * (KS / 2) * 32);
        for (int i = 0; i < tiles; ++i) {
            for (int s = 0; s < KS; ++s)
                for (int l = 0; l < 32; ++l) {
                    const int g = l >> 2, t = l & 3;
                    for (int wdd = 0; wdd < 4; ++wdd) {
                        const size_t row = 16 * (size_t)i + g + 8 * (wdd & 1);
                        const int q = s * 8 + t + 4 * (wdd >> 1); // group index along K
                        const uint16_t v0 = wd[row * K + 4 * q + idx[(row * (K / 4) + q) * 2]];
                        const uint16_t v1 = wd[row * K + 4 * q + idx[(row * (K / 4) + q) * 2 + 1]];
                        hv[(((size_t)i * KS + s) * 32 + l) * 4 + wdd] = (uint32_t)v0 | (uint32_t)v1 << 16;
                    }
                }
            for (int pr = 0; pr < KS / 2; ++pr)
                for (int l = 0; l < 32; ++l) {
                    const int g = l >> 2, s = 2 * pr + ((l >> 1) & 1), j = l & 1;
                    uint32_t word = 0;
                    for (int half = 0; half < 2; ++half) {
                        const size_t row = 16 * (size_t)i + g + 8 * half;
                        for (int u = 0; u < 4; ++u) {
                            const int q = s * 8 + 4 * j + u;
                            const uint32_t i0 = idx[(row * (K / 4) + q) * 2], i1 = idx[(row * (K / 4) + q) * 2 + 1];
                            word |= (i0 | i1 << 2) << (16 * half + 4 * u);
                        }
                    }
                    hm[((size_t)i * (KS / 2) + pr) * 32 + l] = word;
                }
        }
        const int Nmax = 16;
        std::vector<uint16_t> hx((size_t)Nmax * K);
        for (auto &v : hx) v = bf16_bits(nd(rng));
        uint4 *dv;
        u32 *dm;
        __nv_bfloat16 *dw, *dx, *dy, *dref;
        CK(cudaMalloc(&dv, hv.size() * 4));
        CK(cudaMalloc(&dm, hm.size() * 4));
        CK(cudaMalloc(&dw, wd.size() * 2));
        CK(cudaMalloc(&dx, hx.size() * 2));
        CK(cudaMalloc(&dy, (size_t)Nmax * M * 2));
        CK(cudaMalloc(&dref, (size_t)Nmax * M * 2));
        CK(cudaMemcpy(dv, hv.data(), hv.size() * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dm, hm.data(), hm.size() * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dw, wd.data(), wd.size() * 2, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dx, hx.data(), hx.size() * 2, cudaMemcpyHostToDevice));
        const double sp_bytes = (double)hv.size() * 4 + (double)hm.size() * 4, dense_bytes = (double)M * K * 2;
        for (int ni = 0; ni < 3; ++ni) {
            const int N = Ns[ni];
            auto timed = [&](auto &&fn) { return tm.median_ms(runs, fn); };
            const float one = 1.f, zero = 0.f;
            auto dense = [&]() {
                CB(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, M, N, K, &one, dw, CUDA_R_16BF, K, dx, CUDA_R_16BF, K, &zero, dref,
                                CUDA_R_16BF, M, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
            };
            dense();
            CK(cudaStreamSynchronize(st));
            const float tdense = timed(dense);
            float best = 1e30f;
            int bestc = -1;
            for (int c = 0; c < (int)(sizeof CFGS / sizeof CFGS[0]); ++c) {
                const cfg &C = CFGS[c];
                if (C.nb * 8 < N || (C.nb == 2 && N <= 8) || tiles % C.tt) continue;
                CK(cudaMemsetAsync(dy, 0xff, (size_t)Nmax * M * 2, st)); // poison: NaN
                C.f(dv, dm, dx, dy, M, N, K, st);
                CK(cudaGetLastError());
                const float err = tm.rel_err(dy, dref, (size_t)N * M);
                if (!(err <= 2e-2f)) {
                    printf("WRONG %dx%d N=%d config tt=%d nb=%d s=%d u=%d: max err %g of max |y|\n", M, K, N, C.tt, C.nb,
                           C.s, C.u, err);
                    ++failed;
                    continue;
                }
                const float t = timed([&]() { C.f(dv, dm, dx, dy, M, N, K, st); });
                if (t < best) { best = t; bestc = c; }
            }
            if (bestc < 0) continue;
            const cfg &B = CFGS[bestc];
            printf("%5dx%-6d %3d %10.4f %10.4f %6.2fx %9.2f %9.2f  tt=%d nb=%d s=%d u=%d\n", M, K, N, best, tdense, tdense / best,
                   sp_bytes / best / 1e9, dense_bytes / tdense / 1e9, B.tt, B.nb, B.s, B.u);
            lg_sum[ni] += log(tdense / best);
            lg_n[ni]++;
        }
        CK(cudaFree(dv)); CK(cudaFree(dm)); CK(cudaFree(dw)); CK(cudaFree(dx)); CK(cudaFree(dy)); CK(cudaFree(dref));
    }
    double all = 0;
    int alln = 0;
    for (int ni = 0; ni < 3; ++ni) {
        printf("geomean N=%d: %.3fx over %d shapes\n", Ns[ni], lg_n[ni] ? exp(lg_sum[ni] / lg_n[ni]) : 0.0, lg_n[ni]);
        all += lg_sum[ni];
        alln += lg_n[ni];
    }
    printf("geomean N=1-16: %.3fx (%d points), %d wrong configurations\n", alln ? exp(all / alln) : 0.0, alln, failed);
    return failed ? 1 : 0;
}
