/* twell-ffn the way an engine runs it, on the GPU machine (bench/tables/twell-engine.sh builds and runs it): a layer drawn by
 * the tuner's generators for PROBLEM (the data the engine meets, which the tuning never drew for this problem), 4096
 * calibration tokens' gate measured and described (sptune_twell_describe_gate), the kernel got for the described
 * problem, a workspace of its typical size, sptune_twell_ffn; the output checked against the fp32 reference and timed
 * against the dense layer on cuBLAS (the harness's baseline) with the same rule, the run-time guard read after the
 * call. The same with sparse_only (what runs without the dense layer in the op's place) beside it.
 *   twell-engine PROBLEM...      e.g. "M=16384,D=4096,F=14336,nnz=300,dense=21,gen=1,spread=0.5,order=1"
 * Prints a row per problem: served (dense / the configuration), its ms, the dense layer's, the ratio, the guard, and
 * the sparse-only kernel's ms and ratio. */
#include "sp_bench.h"
#include "sp_case.h"
#include "sp_cublas.h"
#include "sp_cuda.h"
#include "sp_status.h"
#include "sptune.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CALIBRATION 4096

typedef struct {
    sptune_kernel *k;
    long long M;
    unsigned long long t[5], ws;
    size_t ws_bytes;
} engine_call;

static sptune_status run_call(void *ud, CUstream s)
{
    engine_call *c = ud;
    return sptune_twell_ffn(c->k, s, c->M, c->t[0], c->t[1], c->t[2], c->t[3], c->t[4], c->ws, c->ws_bytes);
}

static sptune_status run_baseline(void *ud, CUstream s)
{
    sp_case *c = ud;
    return c->ops->baseline(c->state, s);
}

/* The described problem: relu(X Wg^T) of the first calibration tokens on cuBLAS, counted on the host. */
static sptune_status describe(sp_bench *b, sp_case *cs, int M, int D, int F, int order, char *out, size_t len)
{
    const int n = M < CALIBRATION ? M : CALIBRATION;
    sp_cublas *blas = NULL;
    CUdeviceptr G = 0;
    unsigned short *g = malloc((size_t)n * F * 2);
    sptune_status st = g ? sp_cublas_create(&blas) : sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    if (st == SPTUNE_OK) st = sp_cublas_set_stream(blas, b->stream);
    if (st == SPTUNE_OK) st = sp_bench_alloc(b, (size_t)n * F * 2, &G);
    if (st == SPTUNE_OK)
        st = sp_cublas_gemm_nt(blas, n, F, D, *(CUdeviceptr *)cs->ops->arg(cs->state, "X"),
                               *(CUdeviceptr *)cs->ops->arg(cs->state, "Wg"), G, 0);
    const sp_cuda_api *cu;
    if (st == SPTUNE_OK && (st = sp_cuda_load(&cu)) == SPTUNE_OK && (st = SP_CU(cu->StreamSynchronize(b->stream))) == SPTUNE_OK)
        st = SP_CU(cu->MemcpyDtoH(g, G, (size_t)n * F * 2));
    /* relu: the gate's negative entries are inactive (describe counts entries > 0) */
    if (st == SPTUNE_OK) st = sptune_twell_describe_gate(g, n, F, M, D, order, out, len);
    sp_bench_free(G);
    sp_cublas_destroy(blas);
    free(g);
    return st;
}

/* The kernel for the described problem, its workspace, one checked call, the timing; *ms, *slow. */
static sptune_status engine(sp_bench *b, sp_case *cs, const char *described, int sparse_only, int M, int D, double *ms,
                            int *slow, char *served, size_t slen)
{
    sptune_kernel_request req = {.size = SPTUNE_KERNEL_REQUEST_SIZE, .op = "twell-ffn", .problem = described,
                                 .gpu = "auto", .sparse_only = sparse_only};
    engine_call c = {.M = M};
    sptune_status st = sptune_kernel_get(&req, &c.k);
    const char *detail = "";
    if (st == SPTUNE_OK) {
        sptune_kernel_origin(c.k, &detail);
        snprintf(served, slen, "%s", !strncmp(detail, "the dense layer", 15) ? "dense (cuBLAS)" : sptune_kernel_config(c.k));
        st = sptune_kernel_workspace(c.k, 0, &c.ws_bytes);
    }
    CUdeviceptr ws = 0;
    if (st == SPTUNE_OK) st = sp_bench_alloc(b, c.ws_bytes ? c.ws_bytes : 256, &ws);
    c.ws = ws;
    static const char *names[5] = {"X", "Wg", "Wu", "Wd", "Y"};
    for (int i = 0; i < 5 && st == SPTUNE_OK; i++) c.t[i] = *(CUdeviceptr *)cs->ops->arg(cs->state, names[i]);
    double rel = -1;
    char why[512] = "";
    /* Y poisoned (the harness's own poison covers the workspace of its configurations, which this call does not use) */
    if (st == SPTUNE_OK && (st = sp_poison_bf16(c.t[4], (size_t)M * (size_t)D, b->stream)) == SPTUNE_OK &&
        (st = run_call(&c, b->stream)) == SPTUNE_OK &&
        (st = sptune_twell_ffn_slow(c.k, b->stream, M, c.ws, c.ws_bytes, slow)) == SPTUNE_OK) {
        /* the harness's check copies Y without waiting for the (non-blocking) bench stream */
        const sp_cuda_api *cu;
        if ((st = sp_cuda_load(&cu)) == SPTUNE_OK && (st = SP_CU(cu->StreamSynchronize(b->stream))) == SPTUNE_OK)
            st = cs->ops->verify(cs->state, &rel, why, sizeof why);
    }
    if (st == SPTUNE_OK && rel > cs->ops->tolerance)
        st = sp_fail(SPTUNE_ERR_WRONG_RESULT, "%s: error %.3g: %s", described, rel, why);
    sp_timing t;
    if (st == SPTUNE_OK && (st = sp_bench_time(b, run_call, &c, &t)) == SPTUNE_OK) *ms = t.median_ms;
    if (st == SPTUNE_OK) printf("    %s: %s\n", sparse_only ? "sparse only" : "served", detail);
    sp_bench_free(ws);
    sptune_kernel_free(c.k);
    return st;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PROBLEM...   (twell-ffn problems the data is drawn for, e.g. "
                        "M=16384,D=4096,F=14336,nnz=300,dense=21,gen=1,spread=0.5,order=1)\n", argv[0]);
        return 2;
    }
    sp_bench b;
    sp_bench_opts o;
    sp_bench_opts_default(&o);
    o.energy_ms = 0;
    if (sp_bench_open(0, &o, &b) != SPTUNE_OK) {
        fprintf(stderr, "twell-engine: %s\n", sptune_last_error());
        return 3;
    }
    sp_template *t = NULL;
    if (sp_template_load("twell-ffn", &t) != SPTUNE_OK) {
        fprintf(stderr, "twell-engine: %s\n", sptune_last_error());
        return 1;
    }
    int rc = 0;
    printf("| data drawn | described | served | ms | dense ms | ratio | slow paths | sparse only: ms | ratio |\n"
           "|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 1; i < argc; i++) {
        sp_problem p;
        sp_case cs;
        int M = 0, D = 0, F = 0, order = 0, slow[2] = {0, 0};
        double ord = 0, ms[2] = {-1, -1};
        char described[256] = "", served[2][512] = {"", ""};
        sp_timing base;
        sptune_status st = sp_problem_parse(t, argv[i], &p);
        if (st == SPTUNE_OK && !(sp_problem_int(&p, "M", &M) && sp_problem_int(&p, "D", &D) && sp_problem_int(&p, "F", &F)))
            st = sp_fail(SPTUNE_ERR_INVALID, "M, D and F are required");
        if (st == SPTUNE_OK && sp_problem_get(&p, "order", &ord)) order = (int)ord;
        if (st == SPTUNE_OK) st = sp_case_create(&b, "twell-ffn", &p, &cs);
        if (st != SPTUNE_OK) {
            fprintf(stderr, "twell-engine: %s: %s\n", argv[i], sptune_last_error());
            rc = 1;
            continue;
        }
        if ((st = describe(&b, &cs, M, D, F, order, described, sizeof described)) == SPTUNE_OK &&
            (st = sp_bench_time(&b, run_baseline, &cs, &base)) == SPTUNE_OK)
            for (int s = 0; s < 2 && st == SPTUNE_OK; s++)
                st = engine(&b, &cs, described, s, M, D, &ms[s], &slow[s], served[s], sizeof served[s]);
        if (st != SPTUNE_OK) {
            fprintf(stderr, "twell-engine: %s: %s\n", argv[i], sptune_last_error());
            rc = 1;
        } else {
            printf("| %s | %s | %.60s | %.4f | %.4f | %.2fx | %s | %.4f | %.2fx%s |\n", argv[i], described, served[0],
                   ms[0], base.median_ms, base.median_ms / ms[0], slow[0] ? "yes" : "no", ms[1],
                   base.median_ms / ms[1], slow[1] ? " (slow paths)" : "");
        }
        fflush(stdout);
        sp_case_destroy(&cs);
    }
    sp_template_free(t);
    sp_bench_close(&b);
    return rc;
}
