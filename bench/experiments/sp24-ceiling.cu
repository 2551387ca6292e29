// The ceiling of the sparse-tensor-core route for slotfill-spmm on this GPU: a weight matrix that is
// exactly 2:4 sparse, streamed straight from global memory into mma.sp.m16n8k32 fragments (values and
// metadata in the register order of runtime/sp_slotfill.h's Sparse-TC layer, no decode at all), against
// dense cuBLAS bf16 on the same shapes in the same process. Whatever the unstructured encodings add
// (filled slots, residual, bitmap decode) comes on top of this kernel's time: it bounds what any design
// built on the sparse tensor cores can reach here (docs/journal/2026-12-01.md, issue 23's design evidence).
//
//   nvcc -O3 -std=c++17 -arch=sm_90a -o sp24-ceiling bench/experiments/sp24-ceiling.cu -lcublas
//   ./sp24-ceiling [runs [M K]]  (prints one line per shape and N, a summary last; M K: that shape alone)
//   SPARSITY=50,60,70 DIST=0,1,2 ./sp24-ceiling ...: unstructured weights instead (the split of issue 44 in its
//   leanest form): each group of 4 keeps 2 values in the 2:4 layer above, the rest (the 3rd and 4th) go to a
//   residual kept per row (CSR: value << 16 | column, a row start and a 16-bit offset every 128 columns), added
//   by the same kernel on the CUDA cores batch by batch beside its mma.sp, X of the batch from shared memory (lane
//   l: row l % 16, tokens 4 (l / 16) .. + 3 of each 8). DIST: 0 independent elements, 1 magnitude-pruned over rows
//   and outlier columns of different scales (rows unevenly dense), 2 per row (every row exactly as sparse, Wanda's
//   kind). Measured in docs/journal/2026-12-06.md. CFG=tt,nb,s,u: that configuration alone (for Nsight Compute).
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
// One residual entry w (value << 16 | column) times a lane's 4 tokens of each 8, X from shared memory (xb: the
// window's address less its first column's)
template <int NB> __device__ __forceinline__ void res_fma(float (&r)[NB][4], u32 w, u32 xb)
{
    const u32 a = xb + (w & 0xffffu) * (NB * 16);
    const float v = __uint_as_float(w & 0xffff0000u);
#pragma unroll
    for (int j = 0; j < NB; ++j) {
        u32 x0, x1;
        asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];" : "=r"(x0), "=r"(x1) : "r"(a + 16 * j));
        r[j][0] = fmaf(v, __uint_as_float(x0 << 16), r[j][0]);
        r[j][1] = fmaf(v, __uint_as_float(x0 & 0xffff0000u), r[j][1]);
        r[j][2] = fmaf(v, __uint_as_float(x1 << 16), r[j][2]);
        r[j][3] = fmaf(v, __uint_as_float(x1 & 0xffff0000u), r[j][3]);
    }
}

// The residual (RES): per row, entries value << 16 | column in column order from rstart[row]; soff[row][s] the
// entries of that row before column 128 s (s = 0 .. K / 128).
struct residual { const u32 *rstart, *ent; const unsigned short *soff; };
// RES: the X window of a CTA (a batch's columns, a column's NB * 8 tokens side by side, per warp), in static shared
// memory: configurations past the bound are skipped by the host and compiled empty
constexpr int XWIN_MAX = 40 * 1024;
__host__ __device__ constexpr int xwin_bytes(int s, int u, int nb) { return s * u * 32 * nb * 16; }
template <int TT, int NB, int S, int U, bool RES, bool SPLIT>
__global__ void __launch_bounds__(32 * S) sp24_kernel(const uint4 *__restrict__ vals, const u32 *__restrict__ meta,
                                                      const __nv_bfloat16 *__restrict__ X, __nv_bfloat16 *__restrict__ Y,
                                                      int M, int N, int K, residual R)
{
    __shared__ float red[S][TT * 16][NB * 8];
    // RES: the batch's X column-major (one 8-byte load gives a lane its 4 tokens)
    constexpr bool XFIT = RES && xwin_bytes(S, U, NB) <= XWIN_MAX;
    __shared__ __align__(16) unsigned char xw[XFIT ? S : 1][XFIT ? xwin_bytes(1, U, NB) : 16];
    if (RES && !XFIT) return;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    // slices of whole 64-column pairs of steps (with the residual, of 128 columns: its offsets' grain)
    const int KS = K / 32, G = RES ? 4 : 2, pairs = KS / G;
    const int p0 = (int)((long long)pairs * warp / S), p1 = (int)((long long)pairs * (warp + 1) / S);
    const int k0 = G * p0, k1 = G * p1;
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
    // RES: lane l's row rr = l % 16 and tokens 4 h .. + 3 of each 8 (h = l / 16; SPLIT, N <= 4: tokens 0-3 and every
    // other entry); rows past N read row 0 (never written out): no predicate in the loops. cur[i]: its next residual
    // entry of tile i.
    const int rr = lane & 15, h = lane >> 4, segs = K / 128 + 1;
    float r[TT][NB][4] = {};
    u32 cur[TT], rs[TT];
    if (RES) {
#pragma unroll
        for (int i = 0; i < TT; ++i) {
            const size_t row = (size_t)(tile0 + i) * 16 + rr;
            rs[i] = __ldg(R.rstart + row);
            cur[i] = rs[i] + __ldg(R.soff + row * segs + k0 / 4);
        }
    }
    auto compute = [&](const batch &B, int bi) {
        if (RES) { // the batch's X into shared memory, for the residual below (column c = 32 u + 8 q + 2 t and c + 1)
            unsigned short *xc = (unsigned short *)&xw[warp][0];
#pragma unroll
            for (int u = 0; u < U; ++u)
#pragma unroll
                for (int j = 0; j < NB; ++j)
#pragma unroll
                    for (int q = 0; q < 4; ++q) {
                        const u32 x = B.b[u][j][q], c = 32 * u + 8 * q + 2 * t;
                        xc[c * NB * 8 + j * 8 + g] = (unsigned short)x;
                        xc[(c + 1) * NB * 8 + j * 8 + g] = (unsigned short)(x >> 16);
                    }
        }
#pragma unroll
        for (int u = 0; u < U; ++u)
#pragma unroll
            for (int i = 0; i < TT; ++i) {
                const u32 av[4] = {B.a[i][u].x, B.a[i][u].y, B.a[i][u].z, B.a[i][u].w};
#pragma unroll
                for (int j = 0; j < NB; ++j) mma_sp(acc[i][j], av, B.b[u][j], B.e[i][u / 2], u & 1);
            }
        if (RES) { // the residual entries of the batch's columns (U * 32, a multiple of 128: their offsets' grain)
            __syncwarp();
            const int cb = (k0 + bi * U) * 32;
            // shared address of column 0 of the batch's window less cb columns: a column's tokens at xb + 16 NB col
            const u32 xb = (u32)__cvta_generic_to_shared(&xw[warp][SPLIT ? 0 : 8 * h]) - (u32)cb * NB * 16;
#pragma unroll
            for (int i = 0; i < TT; ++i) {
                const size_t row = (size_t)(tile0 + i) * 16 + rr;
                const u32 end = rs[i] + __ldg(R.soff + row * segs + (cb + U * 32) / 128);
                // this lane's share (with N <= 4, lanes h = 0 and 1 take every other entry: both hold tokens 0-3),
                // four loads at a time before any is used
                const u32 *ep = R.ent + cur[i] + (SPLIT ? h : 0);
                constexpr int step = SPLIT ? 2 : 1;
                for (int n = (int)(end - cur[i]) - (SPLIT ? h : 0); n > 0; n -= 4 * step, ep += 4 * step) {
                    u32 w[4];
#pragma unroll
                    for (int m = 0; m < 4; ++m) w[m] = m * step < n ? __ldg(ep + m * step) : 0u;
#pragma unroll
                    for (int m = 0; m < 4; ++m)
                        if (m * step < n) res_fma<NB>(r[i], w[m], xb);
                }
                cur[i] = end;
            }
            __syncwarp();
        }
    };
    const int nbat = (k1 - k0) / U;
    batch P, Q;
    if (nbat > 0) load(P, 0);
    for (int bi = 0; bi < nbat; bi += 2) {
        if (bi + 1 < nbat) load(Q, bi + 1);
        compute(P, bi);
        if (bi + 1 >= nbat) break;
        if (bi + 2 < nbat) load(P, bi + 2);
        compute(Q, bi + 1);
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
    if (RES) {
        // the slice's last steps (past the batches): their residual entries with X from L1
        const unsigned short *xs[NB][4];
#pragma unroll
        for (int j = 0; j < NB; ++j)
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const int n = j * 8 + (SPLIT ? 0 : 4 * h) + q;
                xs[j][q] = (const unsigned short *)X + (size_t)(n < N ? n : 0) * K;
            }
        __syncwarp();
#pragma unroll
        for (int i = 0; i < TT; ++i) {
            const size_t row = (size_t)(tile0 + i) * 16 + rr;
            const u32 end = rs[i] + __ldg(R.soff + row * segs + k1 / 4);
            for (u32 e = cur[i] + (SPLIT ? h : 0); e < end; e += SPLIT ? 2 : 1) {
                const u32 w = __ldg(R.ent + e), col = w & 0xffffu;
                const float v = __uint_as_float(w & 0xffff0000u);
#pragma unroll
                for (int j = 0; j < NB; ++j)
#pragma unroll
                    for (int q = 0; q < 4; ++q) r[i][j][q] = fmaf(v, __uint_as_float((u32)__ldg(xs[j][q] + col) << 16), r[i][j][q]);
            }
            // SPLIT: both halves add into tokens 0-3, one after the other
#pragma unroll
            for (int hh = 0; hh < (SPLIT ? 2 : 1); ++hh) {
                if (!SPLIT || h == hh)
#pragma unroll
                    for (int j = 0; j < NB; ++j)
#pragma unroll
                        for (int q = 0; q < 4; ++q) red[warp][i * 16 + rr][j * 8 + (SPLIT ? 0 : 4 * h) + q] += r[i][j][q];
                __syncwarp();
            }
        }
    }
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

typedef void (*launch_fn)(const uint4 *, const u32 *, const __nv_bfloat16 *, __nv_bfloat16 *, int, int, int, residual,
                          cudaStream_t);
template <int TT, int NB, int S, int U>
static void launch(const uint4 *v, const u32 *m, const __nv_bfloat16 *x, __nv_bfloat16 *y, int M, int N, int K, residual R,
                   cudaStream_t st)
{
    if (R.ent && N <= 4) sp24_kernel<TT, NB, S, U, true, true><<<M / 16 / TT, 32 * S, 0, st>>>(v, m, x, y, M, N, K, R);
    else if (R.ent) sp24_kernel<TT, NB, S, U, true, false><<<M / 16 / TT, 32 * S, 0, st>>>(v, m, x, y, M, N, K, R);
    else sp24_kernel<TT, NB, S, U, false, false><<<M / 16 / TT, 32 * S, 0, st>>>(v, m, x, y, M, N, K, R);
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

// W (M x K) for one data mode: sparsity < 0 exactly 2:4 (each group of 4 one of the six pairs); else unstructured
// at that sparsity by dist (see the top)
static void draw(int M, int K, double sparsity, int dist, std::mt19937_64 &rng, std::vector<uint16_t> &wd)
{
    std::normal_distribution<float> nd(0.f, 1.f);
    std::uniform_real_distribution<float> ud(0.f, 1.f);
    wd.assign((size_t)M * K, 0);
    auto val = [&]() { float v = nd(rng) * 0.05f; return bf16_bits(fabsf(v) < 1e-4f ? 1e-3f : v); };
    if (sparsity < 0) {
        static const int pairs6[6][2] = {{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}};
        for (size_t r = 0; r < (size_t)M; ++r)
            for (int q = 0; q < K / 4; ++q) {
                const int p = (int)(rng() % 6);
                for (int h2 = 0; h2 < 2; ++h2) wd[r * K + 4 * q + pairs6[p][h2]] = val();
            }
        return;
    }
    const double keep = 1.0 - sparsity;
    if (dist == 0) {
        for (auto &w : wd) if (ud(rng) < keep) w = val();
    } else if (dist == 2) {   // every row exactly keep * K values at random columns
        std::vector<float> sc(K), tmp(K);
        const int kk = (int)(keep * K + 0.5);
        for (size_t r = 0; r < (size_t)M; ++r) {
            for (int c = 0; c < K; ++c) sc[c] = ud(rng);
            tmp = sc;
            std::nth_element(tmp.begin(), tmp.begin() + kk, tmp.end());
            const float th = tmp[kk];
            for (int c = 0; c < K; ++c) if (sc[c] < th) wd[r * K + c] = val();
        }
    } else {                  // |normal| x row scale (lognormal) x column scale (1 % outlier columns x 4), pruned globally
        std::vector<float> rs(M), cs(K), mag((size_t)M * K);
        std::lognormal_distribution<float> ln(0.f, 0.35f);
        for (auto &x : rs) x = ln(rng);
        for (auto &x : cs) x = ud(rng) < 0.01f ? 4.f : 1.f;
        for (size_t r = 0; r < (size_t)M; ++r)
            for (int c = 0; c < K; ++c) mag[r * K + c] = fabsf(nd(rng)) * rs[r] * cs[c];
        std::vector<float> tmp(mag);
        const size_t kth = (size_t)(sparsity * (double)tmp.size());
        std::nth_element(tmp.begin(), tmp.begin() + kth, tmp.end());
        const float th = tmp[kth];
        for (size_t i = 0; i < mag.size(); ++i)
            if (mag[i] >= th) wd[i] = bf16_bits((rng() & 1 ? 0.05f : -0.05f) * std::max(mag[i], 2e-2f));
    }
}

int main(int argc, char **argv)
{
    const int runs = argc > 1 ? atoi(argv[1]) : 20;
    const int shapes[][2] = {{4096, 4096},  {11008, 4096}, {4096, 11008}, {14336, 4096}, {4096, 14336},
                             {18944, 3584}, {3584, 18944}, {13824, 5120}, {28672, 8192}, {8192, 28672},
                             {3584, 8192},  {8192, 3584},  {1792, 4096},  {4096, 1792}};
    const int Ns[] = {1, 8, 16};
    // data modes: (sparsity, dist); none given: exactly 2:4
    std::vector<std::pair<double, int>> modes;
    {
        const char *sp = getenv("SPARSITY"), *ds = getenv("DIST");
        std::vector<int> dl;
        for (const char *q = ds ? ds : "2"; *q; ++q) if (*q >= '0' && *q <= '2') dl.push_back(*q - '0');
        if (sp) {
            for (const char *q = sp; *q;) {
                const int v = atoi(q);
                for (int d : dl) modes.push_back({v / 100.0, d});
                while (*q && *q != ',') ++q;
                if (*q) ++q;
            }
        } else {
            modes.push_back({-1.0, -1});
        }
    }
    // CFG=tt,nb,s,u: that configuration alone (for a profiler)
    int only[4] = {0, 0, 0, 0};
    if (const char *oc = getenv("CFG")) sscanf(oc, "%d,%d,%d,%d", &only[0], &only[1], &only[2], &only[3]);
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
    std::vector<double> lg_sum(3 * modes.size(), 0.0);
    std::vector<int> lg_n(3 * modes.size(), 0);
    int failed = 0;
    printf("%-12s %-8s %3s %10s %10s %7s %6s %9s %9s  %s\n", "W (MxK)", "data", "N", "sp24 ms", "cuBLAS ms", "ratio",
           "bytes", "sp24 TB/s", "dense TB/s", "best config");
    for (auto &sh : shapes) {
        if (argc > 3 && (sh[0] != atoi(argv[2]) || sh[1] != atoi(argv[3]))) continue;
        const int M = sh[0], K = sh[1], KS = K / 32, tiles = M / 16, segs = K / 128 + 1;
        // the residual's offsets every 128 columns, its 16-bit columns
        if (modes[0].first >= 0 && (K % 128 || K > 65536)) { printf("%dx%d: K %% 128 != 0 or K > 65536\n", M, K); continue; }
        for (size_t mi = 0; mi < modes.size(); ++mi) {
        const double sparsity = modes[mi].first;
        std::vector<uint16_t> wd;
        draw(M, K, sparsity, modes[mi].second, rng, wd);
        // the 2:4 layer: each group's first two values (its pair: their columns, or any pair holding its one value);
        // the rest to the residual, row by row in column order
        std::vector<uint8_t> idx((size_t)M * (K / 4) * 2);
        std::vector<uint32_t> ent, rstart(M + 1);
        std::vector<uint16_t> soff((size_t)M * segs);
        for (size_t r = 0; r < (size_t)M; ++r) {
            rstart[r] = (uint32_t)ent.size();
            for (int q = 0; q < K / 4; ++q) {
                if ((4 * q) % 128 == 0) soff[r * segs + 4 * q / 128] = (uint16_t)(ent.size() - rstart[r]);
                int at[4], n = 0;
                for (int c = 0; c < 4; ++c) if (wd[r * K + 4 * q + c] & 0x7fffu) at[n++] = c;
                int i0, i1;
                if (n >= 2) { i0 = at[0]; i1 = at[1]; }
                else if (n == 1) { i0 = at[0] == 3 ? 2 : at[0]; i1 = at[0] == 3 ? 3 : at[0] + 1; }
                else { i0 = 0; i1 = 1; }
                idx[(r * (K / 4) + q) * 2] = (uint8_t)i0;
                idx[(r * (K / 4) + q) * 2 + 1] = (uint8_t)i1;
                for (int k = 2; k < n; ++k) ent.push_back((uint32_t)wd[r * K + 4 * q + at[k]] << 16 | (uint32_t)(4 * q + at[k]));
            }
            soff[r * segs + segs - 1] = (uint16_t)(ent.size() - rstart[r]);
        }
        rstart[M] = (uint32_t)ent.size();
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
        residual R = {nullptr, nullptr, nullptr};
        u32 *drs = nullptr, *dent = nullptr;
        unsigned short *dso = nullptr;
        if (sparsity >= 0) {
            CK(cudaMalloc(&drs, rstart.size() * 4));
            CK(cudaMalloc(&dent, (ent.size() + 1) * 4));
            CK(cudaMalloc(&dso, soff.size() * 2));
            CK(cudaMemcpy(drs, rstart.data(), rstart.size() * 4, cudaMemcpyHostToDevice));
            if (ent.size()) CK(cudaMemcpy(dent, ent.data(), ent.size() * 4, cudaMemcpyHostToDevice));
            CK(cudaMemcpy(dso, soff.data(), soff.size() * 2, cudaMemcpyHostToDevice));
            R = {drs, dent, dso};
        }
        const double sp_bytes = (double)hv.size() * 4 + (double)hm.size() * 4 +
                                (sparsity >= 0 ? 4.0 * (double)(ent.size() + rstart.size()) + 2.0 * (double)soff.size() : 0.0),
                     dense_bytes = (double)M * K * 2;
        char data[16];
        if (sparsity < 0) snprintf(data, sizeof data, "2:4");
        else snprintf(data, sizeof data, "%.0f%% d%d", 100 * sparsity, modes[mi].second);
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
                if (only[0] && (C.tt != only[0] || C.nb != only[1] || C.s != only[2] || C.u != only[3])) continue;
                if (sparsity >= 0 && xwin_bytes(C.s, C.u, C.nb) > XWIN_MAX) continue;
                CK(cudaMemsetAsync(dy, 0xff, (size_t)Nmax * M * 2, st)); // poison: NaN
                C.f(dv, dm, dx, dy, M, N, K, R, st);
                CK(cudaGetLastError());
                const float err = tm.rel_err(dy, dref, (size_t)N * M);
                if (!(err <= 2e-2f)) {
                    printf("WRONG %dx%d %s N=%d config tt=%d nb=%d s=%d u=%d: max err %g of max |y|\n", M, K, data, N,
                           C.tt, C.nb, C.s, C.u, err);
                    ++failed;
                    continue;
                }
                const float t = timed([&]() { C.f(dv, dm, dx, dy, M, N, K, R, st); });
                if (t < best) { best = t; bestc = c; }
            }
            if (bestc < 0) continue;
            const cfg &B = CFGS[bestc];
            printf("%5dx%-6d %-8s %3d %10.4f %10.4f %6.2fx %6.3f %9.2f %9.2f  tt=%d nb=%d s=%d u=%d\n", M, K, data, N, best,
                   tdense, tdense / best, sp_bytes / dense_bytes, sp_bytes / best / 1e9, dense_bytes / tdense / 1e9, B.tt,
                   B.nb, B.s, B.u);
            lg_sum[3 * mi + ni] += log(tdense / best);
            lg_n[3 * mi + ni]++;
        }
        CK(cudaFree(dv)); CK(cudaFree(dm)); CK(cudaFree(dw)); CK(cudaFree(dx)); CK(cudaFree(dy)); CK(cudaFree(dref));
        if (drs) { CK(cudaFree(drs)); CK(cudaFree(dent)); CK(cudaFree(dso)); }
        }
    }
    for (size_t mi = 0; mi < modes.size(); ++mi) {
        double all = 0;
        int alln = 0;
        printf("data %s:", modes[mi].first < 0 ? "2:4" : "unstructured");
        if (modes[mi].first >= 0) printf(" %.0f %% dist %d:", 100 * modes[mi].first, modes[mi].second);
        for (int ni = 0; ni < 3; ++ni) {
            const double l = lg_sum[3 * mi + ni];
            const int n = lg_n[3 * mi + ni];
            printf(" N=%d %.3fx,", Ns[ni], n ? exp(l / n) : 0.0);
            all += l;
            alln += n;
        }
        printf(" geomean N=1-16 %.3fx (%d points)\n", alln ? exp(all / alln) : 0.0, alln);
    }
    printf("%d wrong configurations\n", failed);
    return failed ? 1 : 0;
}
