/* A TwELL gated FFN layer, Y = (relu(X Wg^T) (.) X Wu^T) Wd, run through libsptune as an inference
 * engine would: ask for the tuned kernel of the layer's shape on this GPU, allocate what its declared
 * arguments say (workspaces at their typical sizes: no configuration string is read), launch it on
 * a stream, and check a few rows against a CPU reference. Without a GPU it still gets and compiles
 * the kernel for an H200 and prints what it would allocate.
 *
 *   twell_ffn [M [D [F]]]        (default 1000 256 1024) */
#include <sptune.h>

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
static float from_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static float unit(uint64_t *s)   /* uniform in [0, 1) */
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)(*s >> 40) / (float)(1ull << 24);
}

static int fail_cuda(const char *what, cudaError_t e)
{
    fprintf(stderr, "twell_ffn: %s: %s\n", what, cudaGetErrorString(e));
    return 1;
}

int main(int argc, char **argv)
{
    int M = argc > 1 ? atoi(argv[1]) : 1000, D = argc > 2 ? atoi(argv[2]) : 256, F = argc > 3 ? atoi(argv[3]) : 1024;
    if (M < 1 || D < 1 || F < 1) {
        fprintf(stderr, "usage: twell_ffn [M [D [F]]] (positive sizes)\n");
        return 2;
    }
    int have_gpu = cudaSetDevice(0) == cudaSuccess && cudaFree(0) == cudaSuccess;
    char problem[128];
    snprintf(problem, sizeof problem, "M=%d,D=%d,F=%d,nnz=40", M, D, F);
    sptune_kernel_request req = {.op = "twell-ffn", .problem = problem, .gpu = have_gpu ? "auto" : "h200"};
    sptune_kernel *k = NULL;
    if (sptune_kernel_get(&req, &k) != SPTUNE_OK) {
        fprintf(stderr, "twell_ffn: %s\n", sptune_last_error());
        return 1;
    }
    const char *why = NULL;
    sptune_kernel_origin(k, &why);
    size_t typical = 0, bound = 0;
    if (sptune_kernel_workspace(k, 0, &typical) != SPTUNE_OK || sptune_kernel_workspace(k, 1, &bound) != SPTUNE_OK) {
        fprintf(stderr, "twell_ffn: %s\n", sptune_last_error());
        sptune_kernel_free(k);
        return 1;
    }
    printf("sptune %s, twell-ffn %s on %s\n  configuration %s\n  (%s)\n  workspace %.2f MiB (%.2f MiB bound)\n",
           sptune_version(), problem, req.gpu, sptune_kernel_config(k), why, typical / 1048576.0, bound / 1048576.0);
    if (!have_gpu) {
        printf("no CUDA device here: compiled for an H200, nothing launched\n");
        sptune_kernel_free(k);
        return 0;
    }

    /* the data: X in [0, 1); Wg with a negative bias so that few neurons fire; Wu, Wd in [-1, 1) */
    size_t md = (size_t)M * D, fd = (size_t)F * D;
    uint16_t *hX = malloc(md * 2), *hWg = malloc(fd * 2), *hWu = malloc(fd * 2), *hWd = malloc(fd * 2), *hY = malloc(md * 2);
    if (!hX || !hWg || !hWu || !hWd || !hY) return fprintf(stderr, "twell_ffn: out of memory\n"), 1;
    uint64_t s = 42;
    for (size_t i = 0; i < md; i++) hX[i] = to_bf16(unit(&s));
    for (size_t i = 0; i < fd; i++) {
        hWg[i] = to_bf16(unit(&s) * 2 - 1 - 0.08f);
        hWu[i] = to_bf16(unit(&s) * 2 - 1);
        hWd[i] = to_bf16(unit(&s) * 2 - 1);
    }

    /* the arguments, from the kernel's own description of them */
    int n = sptune_kernel_arg_count(k), dims[3] = {M, F, D};
    void *dev[32] = {0}, *args[32] = {0};
    unsigned long long u64[32];
    int i32[32];
    cudaError_t e = cudaSuccess;
    for (int i = 0; i < n && i < 32 && e == cudaSuccess; i++) {
        sptune_arg a = {.size = sizeof(sptune_arg)};
        sptune_kernel_arg(k, i, &a);
        if (a.pointer) {
            if (a.elements < 0) return fprintf(stderr, "twell_ffn: %s has no size\n", a.name), 1;
            e = cudaMalloc(&dev[i], (size_t)(a.elements > 0 ? a.elements : 1) * a.type_bytes);
            const uint16_t *src = !strcmp(a.name, "X") ? hX : !strcmp(a.name, "Wg") ? hWg : !strcmp(a.name, "Wu") ? hWu
                                  : !strcmp(a.name, "Wd") ? hWd : NULL;
            if (e == cudaSuccess && src) e = cudaMemcpy(dev[i], src, (size_t)a.elements * 2, cudaMemcpyHostToDevice);
            args[i] = &dev[i];
        } else if (a.role == SPTUNE_ARG_DIM) {
            args[i] = &dims[!strcmp(a.name, "M") ? 0 : !strcmp(a.name, "F") ? 1 : 2];
        } else if (!strcmp(a.type, "u64")) {
            u64[i] = (unsigned long long)a.typical;
            args[i] = &u64[i];
        } else {
            i32[i] = (int)a.typical;
            args[i] = &i32[i];
        }
    }
    if (e != cudaSuccess) return fail_cuda("allocating the arguments", e);

    cudaStream_t stream;
    cudaEvent_t t0, t1;
    float ms = 0;
    if ((e = cudaStreamCreate(&stream)) || (e = cudaEventCreate(&t0)) || (e = cudaEventCreate(&t1)))
        return fail_cuda("creating a stream", e);
    if (sptune_kernel_launch(k, stream, args) != SPTUNE_OK) return fprintf(stderr, "twell_ffn: %s\n", sptune_last_error()), 1;
    cudaEventRecord(t0, stream);
    if (sptune_kernel_launch(k, stream, args) != SPTUNE_OK) return fprintf(stderr, "twell_ffn: %s\n", sptune_last_error()), 1;
    cudaEventRecord(t1, stream);
    if ((e = cudaStreamSynchronize(stream))) return fail_cuda("running the layer", e);
    cudaEventElapsedTime(&ms, t0, t1);
    int yi = -1;
    for (int i = 0; i < n; i++) {
        sptune_arg a = {.size = sizeof(sptune_arg)};
        sptune_kernel_arg(k, i, &a);
        if (!strcmp(a.name, "Y")) yi = i;
    }
    if (yi < 0 || (e = cudaMemcpy(hY, dev[yi], md * 2, cudaMemcpyDeviceToHost))) return fail_cuda("reading Y", e);

    /* a CPU reference for a few rows: the gate rounded to bf16 as the kernels keep it */
    double worst = 0;
    int rows[4] = {0, M / 3, M / 2, M - 1};
    for (int r = 0; r < 4; r++) {
        const uint16_t *x = hX + (size_t)rows[r] * D;
        double *y = calloc((size_t)D, sizeof *y), norm = 0, err = 0;
        for (int j = 0; j < F; j++) {
            double g = 0, u = 0;
            for (int c = 0; c < D; c++) {
                g += (double)from_bf16(x[c]) * from_bf16(hWg[(size_t)j * D + c]);
                u += (double)from_bf16(x[c]) * from_bf16(hWu[(size_t)j * D + c]);
            }
            double h = (double)from_bf16(to_bf16((float)(g > 0 ? g : 0))) * u;
            for (int c = 0; c < D && h != 0; c++) y[c] += h * from_bf16(hWd[(size_t)j * D + c]);
        }
        for (int c = 0; c < D; c++) {
            double d = from_bf16(hY[(size_t)rows[r] * D + c]) - y[c];
            norm += y[c] * y[c];
            err += d * d;
        }
        double rel = sqrt(err / (norm > 0 ? norm : 1));
        if (!(rel <= worst)) worst = rel;   /* NaN stays */
        free(y);
    }
    printf("  %.4f ms per call; relative error of 4 rows against the CPU: %.2e\n", ms, worst);
    for (int i = 0; i < n; i++) cudaFree(dev[i]);
    sptune_kernel_free(k);
    free(hX); free(hWg); free(hWu); free(hWd); free(hY);
    if (!(worst < 2e-2)) {
        fprintf(stderr, "twell_ffn: the result is wrong\n");
        return 1;
    }
    return 0;
}
