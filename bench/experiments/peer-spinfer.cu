// SpInfer (HPMLL/SpInfer_EuroSys25, its bitmap kernel SpMM_SplitK_API_bitmap_v3) and Flash-LLM (its Tiled-CSL kernel
// SpMM_SplitK_API, as SpInfer's kernel_benchmark/Flashllm_utils.cuh carries it) beside sptune's Slot-Filling kernel
// (the public API: the default encoding, the kernel served for the problem, uploaded weights) and cuBLAS, on the same
// matrices in one process: 50 % sparse fp16 weights pruned per row (as Wanda and SparseGPT prune: each row keeps its
// largest |w| x column scale), by global magnitude (row and column scales) and uniformly at random (every element on
// its own, as SpInfer's own benchmark prunes), the issue's shapes, N = 8, 16, 32.
// Every output is checked against cuBLAS before it is timed (L2 flushed before every run, medians).
//
// Run as `peer-spinfer [runs [kinds [shapes]]]`: kinds, digits of the pruning kinds to draw (2 per-row, 1 magnitude,
// 0 uniform; default all three); shapes, how many of the list's first shapes (default all 14). Each peer's split-K
// 1-7 is checked and timed, its fastest correct one kept.
//
// Built by bench/experiments/peer-spinfer.sh from a SpInfer checkout (never committed to this repository): nvcc for sm_90 with
// SpInfer's csrc, build and kernel_benchmark folders on the include path, its csrc/SpMM_API.cu and this file, linked
// with the installed libsptune, cuBLAS and cuSPARSE.
#include "SpMM_API.cuh"
#include "Flashllm_utils.cuh"
#include "spmm_test_utils.h"
#include "sptune.h"
#include "../cuda_bench.cuh"

#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#define CS(x)                                                                                                          \
    do {                                                                                                               \
        sptune_status s_ = (x);                                                                                        \
        if (s_ != SPTUNE_OK) {                                                                                         \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, sptune_last_error());                           \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

// W (M x K, fp16) at 50 %: per-row (dist 2) or global magnitude (dist 1), scales log-normal as the sptune generator;
// dist 0: every element kept with probability 1/2 on its own (SpInfer's own benchmark prunes this way)
static void draw(int M, int K, int dist, std::mt19937_64 &rng, std::vector<half> &w)
{
    if (dist == 0) {
        std::normal_distribution<float> nd(0.f, 0.05f);
        w.assign((size_t)M * K, __float2half(0.f));
        for (auto &e : w)
            if (rng() & 1) e = __float2half(nd(rng));
        return;
    }
    std::normal_distribution<float> nd(0.f, 1.f);
    std::vector<float> cs(K), rs(M), v((size_t)M * K), mag;
    for (auto &c : cs) c = expf(0.6f * nd(rng));
    for (auto &r : rs) r = expf(0.3f * nd(rng));
    for (int r = 0; r < M; ++r)
        for (int c = 0; c < K; ++c) v[(size_t)r * K + c] = nd(rng) * (dist == 1 ? rs[r] * cs[c] : 1.f);
    w.assign((size_t)M * K, __float2half(0.f));
    if (dist == 1) {
        mag.resize(v.size());
        for (size_t i = 0; i < v.size(); ++i) mag[i] = fabsf(v[i]);
        std::nth_element(mag.begin(), mag.begin() + mag.size() / 2, mag.end());
        const float t = mag[mag.size() / 2];
        for (size_t i = 0; i < v.size(); ++i)
            if (fabsf(v[i]) > t) w[i] = __float2half(v[i] * 0.05f);
        return;
    }
    std::vector<float> score(K);
    for (int r = 0; r < M; ++r) {
        for (int c = 0; c < K; ++c) score[c] = fabsf(v[(size_t)r * K + c]) * cs[c];
        std::vector<float> s = score;
        std::nth_element(s.begin(), s.begin() + K / 2, s.end());
        const float t = s[K / 2];
        for (int c = 0; c < K; ++c)
            if (score[c] > t) w[(size_t)r * K + c] = __float2half(v[(size_t)r * K + c] * 0.05f);
    }
}

int main(int argc, char **argv)
{
    const int runs = argc > 1 ? atoi(argv[1]) : 20;
    const char *kinds = argc > 2 ? argv[2] : "210"; // the pruning kinds to draw, as digits: 2 per-row, 1 magnitude, 0 uniform
    const int nshapes = argc > 3 ? atoi(argv[3]) : 14; // the first nshapes of the list
    const int shapes[][2] = {{4096, 4096},  {11008, 4096}, {4096, 11008}, {14336, 4096}, {4096, 14336},
                             {18944, 3584}, {3584, 18944}, {13824, 5120}, {28672, 8192}, {8192, 28672},
                             {3584, 8192},  {8192, 3584},  {1792, 4096},  {4096, 1792}};
    const int Ns[] = {8, 16, 32};
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    cublasHandle_t h;
    cublasCreate(&h);
    cublasSetStream(h, st);
    bench_timer tm(st);
    auto timed = [&](const std::function<void()> &fn) { return tm.median_ms(runs, fn); };
    auto rel_err = [&](const half *y, const half *ref, size_t n) { return tm.rel_err(y, ref, n); };
    std::mt19937_64 rng(7);
    double lg_peer[2] = {0, 0}, lg_ours[2] = {0, 0}, lg_kind[3] = {0, 0, 0}; // per peer: SpInfer, Flash-LLM
    int n_peer[2] = {0, 0}, n_kind[3] = {0, 0, 0};
    const char *peer_name[2] = {"SpInfer", "Flash-LLM"};
    const char *kind_name[3] = {"uniform", "magnitude", "per-row"};
    printf("%-12s %-9s %3s %9s %9s %6s %9s %6s %9s %6s  %s\n", "W (MxK)", "pruning", "N", "cuBLAS", "SpInfer", "x",
           "Flash-LLM", "x", "sptune", "x",
           "split-K of SpInfer, Flash-LLM / sptune configuration");
    for (int si = 0; si < nshapes && si < (int)(sizeof shapes / sizeof shapes[0]); ++si)
        for (int dist = 2; dist >= 0; --dist) {
            if (!strchr(kinds, '0' + dist)) continue;
            const int M = shapes[si][0], K = shapes[si][1];
            std::vector<half> w;
            draw(M, K, dist, rng, w);
            // SpInfer's encoding (its tiles: 8 x 8 bitmaps, 16 x 64 and 64 x 64 groups)
            half *cval = nullptr;
            int *toff = nullptr, *toff_med = nullptr, *toff_glob = nullptr, max_nnz = 0;
            uint64_t *bm = nullptr;
            const int ng = InitSparseMatrixA_bitmap_v6(w.data(), M, K, 8, 16, 64, 8, 64, 64, &cval, &toff, &toff_med,
                                                       &toff_glob, &bm, max_nnz);
            const int nl = ng * 64, nm = ng * 4, nval = std::max(toff_glob[ng], 1);
            if (max_nnz % 64) max_nnz = (max_nnz / 64 + 1) * 64;
            // SpInfer stages a 64 x 64 tile's values in a shared-memory buffer sized for 2304 (56 % of the tile) and
            // places its X tile and bitmaps after the tile's actual count: a denser tile writes past the allocation
            // (an illegal address, seen on per-row pruning with outlier columns), so such a matrix is not launched.
            const bool spinfer_fits = max_nnz <= 2304;
            if (!spinfer_fits)
                printf("%5dx%-6d %-9s: SpInfer cannot run it: a 64 x 64 tile holds %d values, its kernel's shared memory "
                       "2304\n", M, K, kind_name[dist], max_nnz);
            half *d_cval, *d_w, *d_x, *d_ref, *d_y, *d_ws;
            int *d_toff_med, *d_toff_glob, *d_max;
            uint64_t *d_bm;
            CK(cudaMalloc(&d_cval, sizeof(half) * nval));
            CK(cudaMalloc(&d_toff_med, sizeof(int) * nm));
            CK(cudaMalloc(&d_toff_glob, sizeof(int) * (ng + 1)));
            CK(cudaMalloc(&d_bm, sizeof(uint64_t) * nl));
            CK(cudaMalloc(&d_max, sizeof(int)));
            CK(cudaMemcpy(d_cval, cval, sizeof(half) * nval, cudaMemcpyHostToDevice));
            CK(cudaMemcpy(d_toff_med, toff_med, sizeof(int) * nm, cudaMemcpyHostToDevice));
            CK(cudaMemcpy(d_toff_glob, toff_glob, sizeof(int) * (ng + 1), cudaMemcpyHostToDevice));
            CK(cudaMemcpy(d_bm, bm, sizeof(uint64_t) * nl, cudaMemcpyHostToDevice));
            CK(cudaMemcpy(d_max, &max_nnz, sizeof(int), cudaMemcpyHostToDevice));
            free(cval); free(toff); free(toff_med); free(toff_glob); free(bm);
            // Flash-LLM's Tiled-CSL (its kernel as SpInfer's benchmark carries it: flash_llm_utils), one encoding for
            // every N
            uint32_t *fl_nz = nullptr, *d_fl_nz;
            int *fl_off = nullptr, *d_fl_off;
            const int fl_noff = flash_llm_utils::InitSparseMatrixA_API_NoReorder(w.data(), M, 32, K, &fl_nz, &fl_off);
            const int fl_words = std::max(fl_off[fl_noff - 1] * 4, 1); // 4 (value, position) words a vector
            CK(cudaMalloc(&d_fl_nz, sizeof(uint32_t) * fl_words));
            CK(cudaMalloc(&d_fl_off, sizeof(int) * fl_noff));
            CK(cudaMemcpy(d_fl_nz, fl_nz, sizeof(uint32_t) * fl_words, cudaMemcpyHostToDevice));
            CK(cudaMemcpy(d_fl_off, fl_off, sizeof(int) * fl_noff, cudaMemcpyHostToDevice));
            free(fl_nz); free(fl_off);
            CK(cudaMalloc(&d_w, sizeof(half) * w.size()));
            CK(cudaMemcpy(d_w, w.data(), sizeof(half) * w.size(), cudaMemcpyHostToDevice));
            // sptune: the default encoding and the kernel the runtime serves for each N
            sptune_slotfill *enc = nullptr;
            CS(sptune_slotfill_encode(w.data(), M, K, 1, nullptr, &enc));
            sptune_slotfill_gpu *dw = nullptr;
            CS(sptune_slotfill_upload(enc, &dw));
            const int Nmax = 32;
            std::vector<half> hx((size_t)Nmax * K);
            std::normal_distribution<float> nd(0.f, 1.f);
            for (auto &v : hx) v = __float2half(nd(rng));
            CK(cudaMalloc(&d_x, sizeof(half) * hx.size()));
            CK(cudaMemcpy(d_x, hx.data(), sizeof(half) * hx.size(), cudaMemcpyHostToDevice));
            CK(cudaMalloc(&d_ref, sizeof(half) * Nmax * M));
            CK(cudaMalloc(&d_y, sizeof(half) * Nmax * M));
            CK(cudaMalloc(&d_ws, sizeof(half) * (size_t)Nmax * M * 7));
            for (int N : Ns) {
                const float one = 1.f, zero = 0.f;
                // Y[N x M] = X[N x K] W^T: C (M x N, column-major) = W (row-major M x K) times X^T
                auto dense = [&]() {
                    cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, M, N, K, &one, d_w, CUDA_R_16F, K, d_x, CUDA_R_16F, K, &zero,
                                 d_ref, CUDA_R_16F, M, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
                };
                dense();
                CK(cudaStreamSynchronize(st));
                const float t_dense = timed(dense);
                // a peer's fastest correct split-K (1-7; each checked against cuBLAS first), INFINITY if none
                auto peer_best = [&](const char *peer, const std::function<void(int)> &launch, int &best) {
                    float t_best = INFINITY;
                    best = 0;
                    for (int split = 1; split <= 7; ++split) {
                        CK(cudaMemsetAsync(d_y, 0xff, sizeof(half) * N * M, st));
                        launch(split);
                        CK(cudaGetLastError());
                        const float err = rel_err(d_y, d_ref, (size_t)N * M);
                        if (!(err < 2e-2f)) {
                            printf("%s %dx%d N=%d split-K %d: WRONG (max err %.3g of max |y|)\n", peer, M, K, N, split,
                                   err);
                            continue;
                        }
                        const float t = timed([&]() { launch(split); });
                        if (t < t_best) { t_best = t; best = split; }
                    }
                    return t_best;
                };
                int best_split = 0, best_fl = 0;
                const float t_sp = !spinfer_fits ? INFINITY : peer_best("SpInfer", [&](int split) {
                    SpMM_SplitK_API_bitmap_v3(st, d_w, d_cval, d_toff_glob, d_toff_med, d_bm, d_max, d_x, d_y, M, N, K,
                                              d_ws, split);
                }, best_split);
                const float t_fl = peer_best("Flash-LLM", [&](int split) {
                    flash_llm_utils::SpMM_SplitK_API(st, d_w, reinterpret_cast<const uint4 *>(d_fl_nz), d_fl_off, d_x, d_y,
                                                     M, N, K, d_ws, split);
                }, best_fl);
                char problem[160];
                CS(sptune_slotfill_problem(enc, N, problem, sizeof problem));
                sptune_kernel_request req;
                memset(&req, 0, sizeof req);
                req.size = sizeof req;
                req.op = "slotfill-spmm";
                req.problem = problem;
                req.gpu = "auto";
                req.fixed = sptune_slotfill_fixed(enc);
                sptune_kernel *k = nullptr;
                CS(sptune_kernel_get(&req, &k));
                size_t ws_bytes = 0;
                void *d_ws = nullptr;
                CS(sptune_kernel_workspace(k, 0, &ws_bytes));
                if (ws_bytes) CK(cudaMalloc(&d_ws, ws_bytes));
                auto ours = [&]() {
                    CS(sptune_slotfill_apply(k, st, N, dw, (unsigned long long)d_x, (unsigned long long)d_y,
                                             (unsigned long long)d_ws, ws_bytes));
                };
                CK(cudaMemsetAsync(d_y, 0xff, sizeof(half) * N * M, st));
                ours();
                const float err = rel_err(d_y, d_ref, (size_t)N * M);
                const float t_ours = err < 2e-2f ? timed(ours) : INFINITY;
                if (!(err < 2e-2f)) printf("sptune %dx%d N=%d: WRONG (max err %.3g of max |y|)\n", M, K, N, err);
                printf("%5dx%-6d %-9s %3d %9.4f %9.4f %5.2fx %9.4f %5.2fx %9.4f %5.2fx  %d, %d / %s\n", M, K,
                       kind_name[dist], N, t_dense, t_sp, t_dense / t_sp, t_fl, t_dense / t_fl, t_ours, t_dense / t_ours,
                       best_split, best_fl, sptune_kernel_config(k));
                fflush(stdout);
                if (std::isfinite(t_ours)) {
                    lg_kind[dist] += log(t_dense / t_ours);
                    ++n_kind[dist];
                }
                const float t_peer[2] = {t_sp, t_fl};
                for (int q = 0; q < 2; ++q)
                    if (std::isfinite(t_peer[q]) && std::isfinite(t_ours)) {
                        lg_peer[q] += log(t_dense / t_peer[q]);
                        lg_ours[q] += log(t_dense / t_ours);
                        ++n_peer[q];
                    }
                sptune_kernel_free(k);
                if (d_ws) CK(cudaFree(d_ws));
            }
            sptune_slotfill_gpu_free(dw);
            sptune_slotfill_free(enc);
            CK(cudaFree(d_cval)); CK(cudaFree(d_toff_med)); CK(cudaFree(d_toff_glob)); CK(cudaFree(d_bm));
            CK(cudaFree(d_max)); CK(cudaFree(d_w)); CK(cudaFree(d_x)); CK(cudaFree(d_ref)); CK(cudaFree(d_y));
            CK(cudaFree(d_ws)); CK(cudaFree(d_fl_nz)); CK(cudaFree(d_fl_off));
        }
    for (int d = 2; d >= 0; --d)
        if (n_kind[d]) printf("sptune on %s weights: geometric mean %.3fx cuBLAS over %d points\n", kind_name[d],
                              exp(lg_kind[d] / n_kind[d]), n_kind[d]);
    for (int q = 0; q < 2; ++q)
        if (n_peer[q])
            printf("where %s ran correctly, geometric means over %d points: %s %.3fx, sptune %.3fx cuBLAS (sptune / %s "
                   "%.3fx)\n", peer_name[q], n_peer[q], peer_name[q], exp(lg_peer[q] / n_peer[q]),
                   exp(lg_ours[q] / n_peer[q]), peer_name[q], exp((lg_ours[q] - lg_peer[q]) / n_peer[q]));
    return 0;
}
