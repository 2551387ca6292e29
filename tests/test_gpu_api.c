/* GPU test of the runtime API's contract for engines (include/sptune.h):
 * - one kernel object serves every token count up to the problem's: gemm, twell-ffn and slotfill-spmm
 *   got for a maximum, launched for counts from 1 to it (tails, primes), through sptune_kernel_launch
 *   and the family helpers, each output verified against the harness's fp32 reference;
 * - CUDA graphs: twell-ffn captured once, replayed, its inputs then overwritten and replayed again;
 * - autotuning on the caller's data: the fastest candidate computes exactly, is recorded in a database and served
 *   from it (measured on the application's own tensors); refused during a capture;
 * - threads and contexts: kernel objects got and launched from several threads at once (the primary
 *   context) and from a second context of the same device, every output verified;
 * - the host cost of a cached get and of a launch (printed; performance claims live in bench/).
 * Without a GPU it skips and says how many cases it did not run. SPTUNE_TEST_CACHE: a kernel cache filled elsewhere
 * (`sptune compile`), so that the GPU machine compiles less. */
#include "sp_cache.h"
#include "sp_clock.h"
#include "sp_case.h"
#include "sp_cuda.h"
#include "sp_status.h"
#include "sp_test.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const sp_cuda_api *cu;
static char cache_dir[1024];

/* The problems got for (the maximum token count) and the counts launched under them. */
static const struct { const char *op, *problem, *fixed; } maxima[] = {
    {"gemm", "M=640,N=264,K=136", "mainloop=mma"},
    {"gemm", "M=640,N=264,K=136", "mainloop=wgmma,load=tma,epi=overlap"},   /* tensor maps per count */
    {"twell-ffn", "M=700,D=256,F=1000,nnz=40,dense=1,dense_nnz=400", "mainloop=wgmma,load=tma"},
    {"slotfill-spmm", "M=512,K=520,N=384,sparsity=55,fp16=0,dist=1", NULL},
    {"twell-t2d", "M=700,F=1000,D=256,T=128,S=15,nnz=40", NULL},
    {"twell-gated", "M=700,F=1000,D=256,T=128,S=15,nnz=40", NULL},
};
#define NMAX (int)(sizeof maxima / sizeof maxima[0])
#define FFN_MAX "M=700,D=256,F=1000,nnz=40,dense=1,dense_nnz=400"
static const long long counts[] = {1, 7, 61, 128, 333, 0 /* the maximum - 1 */, -1 /* the maximum */};
#define NCOUNTS (int)(sizeof counts / sizeof counts[0])

static double now_us(void) { return 1e6 * sp_now_s(); }

/* problem with dimension `dim` set to n ("M=640,N=264" -> "M=7,N=264"; added when absent). */
static void with_count(const char *problem, const char *dim, long long n, char *out, size_t len)
{
    size_t o = 0;
    int seen = 0;
    out[0] = 0;
    for (const char *s = problem; *s && o < len;) {
        const char *comma = strchr(s, ',');
        size_t l = comma ? (size_t)(comma - s) : strlen(s);
        if (strncmp(s, dim, strlen(dim)) == 0 && s[strlen(dim)] == '=') {
            o += (size_t)snprintf(out + o, len - o, "%s%s=%lld", o ? "," : "", dim, n);
            seen = 1;
        }
        else
            o += (size_t)snprintf(out + o, len - o, "%s%.*s", o ? "," : "", (int)l, s);
        s = comma ? comma + 1 : s + l;
    }
    if (!seen && o < len) snprintf(out + o, len - o, ",%s=%lld", dim, n);
}

/* The inputs' and outputs' device pointers of a bound case, in declaration order (launch_ws). */
static int tensors_of(const sptune_kernel *k, const sp_case *cs, unsigned long long *t)
{
    int n = 0;
    for (int i = 0; i < sptune_kernel_arg_count(k); i++) {
        sptune_arg a = {.size = sizeof(sptune_arg)};
        if (sptune_kernel_arg(k, i, &a) != SPTUNE_OK) return -1;
        if (a.role == SPTUNE_ARG_INPUT || a.role == SPTUNE_ARG_OUTPUT) memcpy(&t[n++], cs->argv[i], sizeof *t);
    }
    return n;
}

/* A harness case of op at problem, bound to k's configuration, output poisoned and prepared. */
static sptune_status make_case(sp_bench *b, const char *op, const char *problem, const sptune_kernel *k, sp_case *cs)
{
    sp_template *t = NULL;
    sp_problem p;
    sp_config c;
    sptune_status st = sp_template_load(op, &t);
    if (st == SPTUNE_OK) st = sp_problem_parse(t, problem, &p);
    if (st == SPTUNE_OK) st = sp_case_create(b, op, &p, cs);
    if (st == SPTUNE_OK) {
        if ((st = sp_config_parse(t, sptune_kernel_config(k), &c)) == SPTUNE_OK) st = sp_case_bind(cs, t, &c);
        if (st == SPTUNE_OK) st = cs->ops->poison(cs->state, b->stream);
        if (st == SPTUNE_OK && cs->ops->prepare) st = cs->ops->prepare(cs->state, b->stream);
        if (st != SPTUNE_OK) sp_case_destroy(cs);
    }
    sp_template_free(t);
    return st;
}

static double verify(sp_bench *b, sp_case *cs, char *detail, size_t len)
{
    double rel = 1;
    if (SP_CU(cu->StreamSynchronize(b->stream)) != SPTUNE_OK ||
        cs->ops->verify(cs->state, &rel, detail, len) != SPTUNE_OK)
        snprintf(detail, len, "%s", sptune_last_error());
    return rel;
}

/* The launch helper of k's family over the case's tensors and one workspace. */
static sptune_status helper_launch(sptune_kernel *k, const char *op, sp_bench *b, long long tokens,
                                   const unsigned long long *t, CUdeviceptr ws, size_t ws_bytes)
{
    if (!strcmp(op, "twell-ffn")) return sptune_twell_ffn(k, b->stream, tokens, t[0], t[1], t[2], t[3], t[4], ws, ws_bytes);
    if (!strcmp(op, "gemm")) return sptune_gemm(k, b->stream, tokens, t[0], t[1], t[2]);
    if (!strcmp(op, "twell-t2d")) return sptune_twell_t2d(k, b->stream, tokens, t[0], t[1], t[2], t[3]);
    if (!strcmp(op, "twell-gated")) return sptune_twell_gated(k, b->stream, tokens, t[0], t[1], t[2], t[3], t[4], t[5]);
    return sptune_slotfill_spmm(k, b->stream, tokens, t[0], t[1], t[2], ws, ws_bytes);
}

/* Every count of `counts` under each maximum, through launch (argument list) and the helper. */
static void run_token_range(sp_bench *b)
{
    for (int m = 0; m < NMAX; m++) {
        const char *op = maxima[m].op;
        sptune_kernel_request req = {.op = op, .problem = maxima[m].problem, .gpu = b->gpu.info.profile, .db_path = "",
                                     .cache_dir = cache_dir, .ignore_shipped = 1, .fixed = maxima[m].fixed};
        sptune_kernel *k = NULL;
        CHECK_ST(sptune_kernel_get(&req, &k), SPTUNE_OK);
        long long max = 0;
        const char *dim = k ? sptune_kernel_tokens(k, &max) : NULL;
        CHECK_MSG(dim != NULL && max > 333, "%s: token dimension %s, max %lld", op, dim ? dim : "none", max);
        if (!dim || max <= 333) { sptune_kernel_free(k); continue; }
        size_t ws_bytes = 0;
        CUdeviceptr ws = 0;
        CHECK_ST(sptune_kernel_workspace(k, 1, &ws_bytes), SPTUNE_OK);
        if (ws_bytes) CHECK_ST(SP_CU(cu->MemAlloc(&ws, ws_bytes)), SPTUNE_OK);
        for (int i = 0; i < NCOUNTS; i++) {
            long long n = counts[i] > 0 ? counts[i] : counts[i] == 0 ? max - 1 : max;
            char problem[256], fewer[256];
            with_count(maxima[m].problem, dim, n, problem, sizeof problem);
            /* a handful of tokens cannot hold a dense one at the batch's mean: the data then has none */
            if (!strncmp(op, "twell", 5) && n < 64) {
                with_count(problem, "dense", 0, fewer, sizeof fewer);
                memcpy(problem, fewer, sizeof problem);
            }
            /* the argument list; the helper with the whole problem's workspace; the helper with a workspace for this
             * batch alone (sptune_kernel_workspace_for: the library cuts it at the count) */
            for (int how = 0; how < 3; how++) {
                sp_case cs;
                sptune_status st = make_case(b, op, problem, k, &cs);
                CHECK_MSG(st == SPTUNE_OK, "%s %s: %s", op, problem, sptune_last_error());
                if (st != SPTUNE_OK) continue;
                unsigned long long t[8];
                size_t ws_n = ws_bytes;
                if (how == 2) CHECK_ST(sptune_kernel_workspace_for(k, n, 0, &ws_n), SPTUNE_OK);
                if (how == 0) st = sptune_kernel_launch(k, b->stream, cs.argv);
                else st = tensors_of(k, &cs, t) < 0 ? SPTUNE_ERR_INVALID : helper_launch(k, op, b, n, t, ws, ws_n);
                CHECK_MSG(st == SPTUNE_OK, "%s %s: %s", op, problem, sptune_last_error());
                char detail[512] = "";
                double rel = st == SPTUNE_OK ? verify(b, &cs, detail, sizeof detail) : 1;
                CHECK_MSG(rel < cs.ops->tolerance, "%s got for %s, launched for %s=%lld (%s): error %.3g (%s)", op,
                          maxima[m].problem, dim, n, how == 2 ? "helper, the batch's workspace" : how ? "helper"
                          : "argument list", rel, detail);
                sp_case_destroy(&cs);
            }
        }
        printf("  tokens %-14s got for %-50s %s = 1, 7, 61, 128, 333, %lld, %lld: list, helper, helper with the batch's "
               "workspace ok (%s)\n", op,
               maxima[m].problem, dim, max - 1, max, sptune_kernel_config(k));
        /* an empty batch: OK and nothing launched (the poisoned output stays as it was), by both routes */
        {
            char problem[256];
            with_count(maxima[m].problem, dim, 1, problem, sizeof problem);
            sp_case cs;
            if (make_case(b, op, problem, k, &cs) == SPTUNE_OK) {
                unsigned long long t[8];
                const int nt = tensors_of(k, &cs, t);
                int tok = -1;
                for (int i = 0; i < sptune_kernel_arg_count(k); i++) {
                    sptune_arg a = {.size = sizeof(sptune_arg)};
                    if (sptune_kernel_arg(k, i, &a) == SPTUNE_OK && !strcmp(a.name, dim)) tok = i;
                }
                int saved = tok >= 0 ? *(int *)cs.argv[tok] : 0;
                if (tok >= 0) *(int *)cs.argv[tok] = 0;
                CHECK_ST(sptune_kernel_launch(k, b->stream, cs.argv), SPTUNE_OK);
                if (tok >= 0) *(int *)cs.argv[tok] = saved;
                CHECK_ST(nt > 0 ? helper_launch(k, op, b, 0, t, ws, ws_bytes) : SPTUNE_ERR_INVALID, SPTUNE_OK);
                unsigned short y[64];
                CHECK_ST(SP_CU(cu->StreamSynchronize(b->stream)), SPTUNE_OK);
                CHECK_ST(nt > 0 ? SP_CU(cu->MemcpyDtoH(y, t[nt - 1], sizeof y)) : SPTUNE_ERR_INVALID, SPTUNE_OK);
                int poisoned = 1;
                for (int i = 0; i < 64; i++) poisoned &= y[i] == 0xffffu;
                CHECK_MSG(poisoned, "%s with 0 tokens wrote its output", op);
                sp_case_destroy(&cs);
            }
        }
        if (ws) cu->MemFree(ws);
        sptune_kernel_free(k);
    }
}

/* twell-d2t through its helper: the packed gate and pool it leaves in the workspace
 * (sptune_kernel_workspace_part) copied into the harness's buffers and verified there. */
static void run_d2t_helper(sp_bench *b)
{
    const char *problem = "M=333,D=256,F=1000,nnz=40";
    sptune_kernel_request req = {.op = "twell-d2t", .problem = problem, .gpu = b->gpu.info.profile, .db_path = "",
                                 .cache_dir = cache_dir, .ignore_shipped = 1};
    sptune_kernel *k = NULL;
    sp_case cs;
    CHECK_ST(sptune_kernel_get(&req, &k), SPTUNE_OK);
    if (!k || make_case(b, "twell-d2t", problem, k, &cs) != SPTUNE_OK) {
        CHECK_MSG(0, "d2t helper: %s", sptune_last_error());
        sptune_kernel_free(k);
        return;
    }
    size_t bytes = 0, off[3], len[3];
    CUdeviceptr ws = 0;
    unsigned long long t[8], used = 0;
    const char *names[3] = {"packed", "pool", "pool_counter"};
    CHECK_EQ(tensors_of(k, &cs, t), 2);
    CHECK_ST(sptune_kernel_workspace(k, 1, &bytes), SPTUNE_OK);
    CHECK_ST(SP_CU(cu->MemAlloc(&ws, bytes)), SPTUNE_OK);
    for (int i = 0; i < 3; i++) CHECK_ST(sptune_kernel_workspace_part(k, names[i], bytes, &off[i], &len[i]), SPTUNE_OK);
    CHECK_ST(sptune_twell_d2t(k, b->stream, SPTUNE_ALL_TOKENS, t[0], t[1], ws, bytes), SPTUNE_OK);
    CHECK_ST(SP_CU(cu->StreamSynchronize(b->stream)), SPTUNE_OK);
    CHECK_ST(SP_CU(cu->MemcpyDtoH(&used, ws + off[2], 8)), SPTUNE_OK);
    /* the harness's buffers by argument index: packed (2), pool (3), pool_counter (4), pool_capacity (5) */
    sptune_arg a = {.size = sizeof(sptune_arg)};
    CHECK_ST(sptune_kernel_arg(k, 2, &a), SPTUNE_OK);
    unsigned long long packed, pool, counter, cap;
    memcpy(&packed, cs.argv[2], 8);
    memcpy(&pool, cs.argv[3], 8);
    memcpy(&counter, cs.argv[4], 8);
    memcpy(&cap, cs.argv[5], 8);
    CHECK_MSG(used <= cap, "d2t helper: the data needs %llu pool words, the harness holds %llu", used, cap);
    if (used <= cap) {
        CHECK_ST(SP_CU(cu->MemcpyDtoD(packed, ws + off[0], (size_t)a.elements * 4)), SPTUNE_OK);
        if (used) CHECK_ST(SP_CU(cu->MemcpyDtoD(pool, ws + off[1], used * 4)), SPTUNE_OK);
        CHECK_ST(SP_CU(cu->MemcpyDtoD(counter, ws + off[2], 8)), SPTUNE_OK);
        char detail[512] = "";
        double rel = verify(b, &cs, detail, sizeof detail);
        CHECK_MSG(rel < cs.ops->tolerance, "d2t helper: error %.3g (%s)", rel, detail);
        printf("  helper twell-d2t %s: packed gate and pool from the workspace parts verified (%llu pool words)\n",
               problem, used);
    }
    cu->MemFree(ws);
    sp_case_destroy(&cs);
    sptune_kernel_free(k);
}

/* Bytes of twell-ffn's X, Wg, Wu, Wd and Y for `tokens` tokens of the maximum problem (D=256, F=1000). */
static void ffn_bytes(long long tokens, size_t bytes[5])
{
    bytes[0] = bytes[4] = (size_t)tokens * 256 * 2;
    bytes[1] = bytes[2] = bytes[3] = 1000 * 256 * 2;
}

/* twell-ffn captured in a CUDA graph (stream capture), replayed, then replayed after its inputs were
 * overwritten with another case's: the output follows the new inputs. */
static void run_graph(sp_bench *b)
{
    if (!cu->StreamBeginCapture || !cu->GraphInstantiate || !cu->GraphLaunch) {
        CHECK_MSG(0, "the driver lacks the graph entry points");
        return;
    }
    const char *problem = "M=333,D=256,F=1000,nnz=40,dense=1,dense_nnz=400";
    sptune_kernel_request req = {.op = "twell-ffn", .problem = FFN_MAX, .gpu = b->gpu.info.profile, .db_path = "",
                                 .cache_dir = cache_dir, .ignore_shipped = 1};
    sptune_kernel *k = NULL;
    sp_case a, c2;
    CHECK_ST(sptune_kernel_get(&req, &k), SPTUNE_OK);
    if (!k) return;
    int have_a = make_case(b, "twell-ffn", problem, k, &a) == SPTUNE_OK;
    int have_c = have_a && make_case(b, "twell-ffn", problem, k, &c2) == SPTUNE_OK; /* other random data */
    CHECK_MSG(have_a && have_c, "graph cases: %s", sptune_last_error());
    size_t ws_bytes = 0;
    CUdeviceptr ws = 0;
    CUgraph g = NULL;
    CUgraphExec ge = NULL;
    unsigned long long ta[8], tc[8];
    if (!have_c) goto done;
    CHECK_ST(sptune_kernel_workspace(k, 0, &ws_bytes), SPTUNE_OK);
    CHECK_ST(SP_CU(cu->MemAlloc(&ws, ws_bytes)), SPTUNE_OK);
    CHECK(tensors_of(k, &a, ta) == 5 && tensors_of(k, &c2, tc) == 5);
    CHECK_ST(SP_CU(cu->StreamSynchronize(b->stream)), SPTUNE_OK);
    CHECK_ST(SP_CU(cu->StreamBeginCapture(b->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)), SPTUNE_OK);
    sptune_status st = sptune_twell_ffn(k, b->stream, 333, ta[0], ta[1], ta[2], ta[3], ta[4], ws, ws_bytes);
    CHECK_MSG(st == SPTUNE_OK, "launch under capture: %s", sptune_last_error());
    CHECK_ST(SP_CU(cu->StreamEndCapture(b->stream, &g)), SPTUNE_OK);
    if (st != SPTUNE_OK || !g) goto done;
    CHECK_ST(SP_CU(cu->GraphInstantiate(&ge, g, 0)), SPTUNE_OK);
    if (!ge) goto done;
    char detail[512] = "";
    for (int replay = 0; replay < 3; replay++) {
        CHECK_ST(SP_CU(cu->GraphLaunch(ge, b->stream)), SPTUNE_OK);
        double rel = verify(b, &a, detail, sizeof detail);
        CHECK_MSG(rel < a.ops->tolerance, "graph replay %d: error %.3g (%s)", replay, rel, detail);
    }
    /* the other case's inputs into the captured buffers; the output back into the other case's */
    size_t bytes[5];
    ffn_bytes(333, bytes);
    for (int i = 0; i < 4; i++) CHECK_ST(SP_CU(cu->MemcpyDtoD(ta[i], tc[i], bytes[i])), SPTUNE_OK);
    CHECK_ST(SP_CU(cu->GraphLaunch(ge, b->stream)), SPTUNE_OK);
    CHECK_ST(SP_CU(cu->StreamSynchronize(b->stream)), SPTUNE_OK);
    CHECK_ST(SP_CU(cu->MemcpyDtoD(tc[4], ta[4], bytes[4])), SPTUNE_OK);
    double rel = verify(b, &c2, detail, sizeof detail);
    CHECK_MSG(rel < c2.ops->tolerance, "graph replay on new inputs: error %.3g (%s)", rel, detail);
    printf("  graph twell-ffn %s: captured once, 3 replays and a replay on new inputs ok\n", problem);
done:
    if (ge) cu->GraphExecDestroy(ge);
    if (g) cu->GraphDestroy(g);
    if (ws) cu->MemFree(ws);
    if (have_c) sp_case_destroy(&c2);
    if (have_a) sp_case_destroy(&a);
    sptune_kernel_free(k);
}

/* ---- threads and contexts ---- */

typedef struct worker {
    CUcontext ctx;                 /* the context the thread makes current */
    const void *host_in[4];        /* twell-ffn's inputs (host copies): a second context allocates its own */
    size_t in_bytes[4];
    const unsigned long long *shared_in; /* the primary context's inputs (NULL: allocate from host_in) */
    int tokens, launches;
    void *y_host;                  /* the output, for the main thread to verify */
    size_t y_bytes;
    char error[512];
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    sptune_kernel *k = NULL;
    CUstream s = NULL;
    CUdeviceptr in[4] = {0}, y = 0, ws = 0;
    size_t ws_bytes = 0;
    sptune_status st = SP_CU(cu->CtxSetCurrent(w->ctx));
    sptune_kernel_request req = {.op = "twell-ffn", .problem = FFN_MAX, .gpu = "auto", .db_path = "",
                                 .cache_dir = cache_dir, .ignore_shipped = 1};
    if (st == SPTUNE_OK) st = sptune_kernel_get(&req, &k);
    if (st == SPTUNE_OK) st = SP_CU(cu->StreamCreate(&s, CU_STREAM_NON_BLOCKING));
    if (st == SPTUNE_OK) st = sptune_kernel_workspace(k, 1, &ws_bytes);
    if (st == SPTUNE_OK) st = SP_CU(cu->MemAlloc(&ws, ws_bytes));
    if (st == SPTUNE_OK) st = SP_CU(cu->MemAlloc(&y, w->y_bytes));
    for (int i = 0; i < 4 && st == SPTUNE_OK; i++) {
        if (w->shared_in) { in[i] = w->shared_in[i]; continue; }
        if ((st = SP_CU(cu->MemAlloc(&in[i], w->in_bytes[i]))) == SPTUNE_OK)
            st = SP_CU(cu->MemcpyHtoD(in[i], w->host_in[i], w->in_bytes[i]));
    }
    for (int r = 0; r < w->launches && st == SPTUNE_OK; r++)
        st = sptune_twell_ffn(k, s, w->tokens, in[0], in[1], in[2], in[3], y, ws, ws_bytes);
    if (st == SPTUNE_OK) st = SP_CU(cu->StreamSynchronize(s));
    if (st == SPTUNE_OK) st = SP_CU(cu->MemcpyDtoH(w->y_host, y, w->y_bytes));
    if (st != SPTUNE_OK) snprintf(w->error, sizeof w->error, "%s", sptune_last_error());
    sptune_kernel_free(k);  /* in its own context, still current */
    for (int i = 0; i < 4; i++)
        if (in[i] && !w->shared_in) cu->MemFree(in[i]);
    if (y) cu->MemFree(y);
    if (ws) cu->MemFree(ws);
    if (s) cu->StreamDestroy(s);
    return NULL;
}

#define NTHREADS 6
static void run_threads(sp_bench *b)
{
    const int tokens = 333;
    const char *problem = "M=333,D=256,F=1000,nnz=40,dense=1,dense_nnz=400";
    sptune_kernel_request req = {.op = "twell-ffn", .problem = FFN_MAX, .gpu = b->gpu.info.profile, .db_path = "",
                                 .cache_dir = cache_dir, .ignore_shipped = 1};
    sptune_kernel *k = NULL;
    sp_case a;
    CHECK_ST(sptune_kernel_get(&req, &k), SPTUNE_OK);
    if (!k) return;
    if (make_case(b, "twell-ffn", problem, k, &a) != SPTUNE_OK) {
        CHECK_MSG(0, "threads case: %s", sptune_last_error());
        sptune_kernel_free(k);
        return;
    }
    unsigned long long t[8];
    CHECK_EQ(tensors_of(k, &a, t), 5);
    size_t bytes[5];
    ffn_bytes(tokens, bytes);
    void *host[4] = {0};
    for (int i = 0; i < 4; i++) {
        host[i] = malloc(bytes[i]);
        CHECK(host[i] && SP_CU(cu->MemcpyDtoH(host[i], t[i], bytes[i])) == SPTUNE_OK);
    }
    CUcontext primary = NULL, second = NULL;
    CHECK_ST(SP_CU(cu->CtxGetCurrent(&primary)), SPTUNE_OK);
    int two = cu->CtxCreate != NULL;
    if (two) {
        CUdevice dev;
        CUctxCreateParams params;
        memset(&params, 0, sizeof params);
        CHECK_ST(SP_CU(cu->CtxGetDevice(&dev)), SPTUNE_OK);
        two = SP_CU(cu->CtxCreate(&second, &params, 0, dev)) == SPTUNE_OK;
        CHECK_MSG(two, "a second context: %s", sptune_last_error());
        CHECK_ST(SP_CU(cu->CtxSetCurrent(primary)), SPTUNE_OK);  /* cuCtxCreate made it current */
    }
    worker w[NTHREADS];
    pthread_t th[NTHREADS];
    double t0 = now_us();
    for (int i = 0; i < NTHREADS; i++) {
        memset(&w[i], 0, sizeof w[i]);
        /* the last two threads in the second context, with their own copies of the inputs */
        w[i].ctx = two && i >= NTHREADS - 2 ? second : primary;
        w[i].shared_in = w[i].ctx == primary ? t : NULL;
        for (int j = 0; j < 4; j++) { w[i].host_in[j] = host[j]; w[i].in_bytes[j] = bytes[j]; }
        w[i].tokens = tokens;
        w[i].launches = 20;
        w[i].y_bytes = bytes[4];
        w[i].y_host = malloc(w[i].y_bytes);
        CHECK(w[i].y_host && pthread_create(&th[i], NULL, work, &w[i]) == 0);
    }
    for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
    double t1 = now_us();
    CHECK_ST(SP_CU(cu->CtxSetCurrent(primary)), SPTUNE_OK);
    for (int i = 0; i < NTHREADS; i++) {
        CHECK_MSG(!w[i].error[0], "thread %d (%s context): %s", i, w[i].ctx == primary ? "primary" : "second",
                  w[i].error);
        if (w[i].error[0]) continue;
        char detail[512] = "";
        CHECK_ST(SP_CU(cu->MemcpyHtoD(t[4], w[i].y_host, w[i].y_bytes)), SPTUNE_OK);
        double rel = verify(b, &a, detail, sizeof detail);
        CHECK_MSG(rel < a.ops->tolerance, "thread %d (%s context): error %.3g (%s)", i,
                  w[i].ctx == primary ? "primary" : "second", rel, detail);
    }
    printf("  threads: %d threads x 20 launches (%d in a second context%s), every output verified (%.0f ms)\n",
           NTHREADS, two ? 2 : 0, two ? "" : ": the driver lacks cuCtxCreate_v4", (t1 - t0) / 1e3);
    for (int i = 0; i < NTHREADS; i++) free(w[i].y_host);
    for (int i = 0; i < 4; i++) free(host[i]);
    if (second) cu->CtxDestroy(second);
    CHECK_ST(SP_CU(cu->CtxSetCurrent(primary)), SPTUNE_OK);
    sp_case_destroy(&a);
    sptune_kernel_free(k);
}

/* Host cost: a repeated get (the in-process copy) and a launch through the helper (not the GPU time). */
static void run_host_cost(sp_bench *b)
{
    sptune_kernel_request req = {.op = "twell-ffn", .problem = FFN_MAX, .gpu = b->gpu.info.profile, .db_path = "",
                                 .cache_dir = cache_dir, .ignore_shipped = 1};
    sptune_kernel *k = NULL;
    double t0 = now_us();
    CHECK_ST(sptune_kernel_get(&req, &k), SPTUNE_OK);
    double first = now_us() - t0;
    sptune_kernel_free(k);
    const int n = 200;
    t0 = now_us();
    for (int i = 0; i < n; i++) {
        k = NULL;
        CHECK_ST(sptune_kernel_get(&req, &k), SPTUNE_OK);
        if (i < n - 1) sptune_kernel_free(k);
    }
    double get_us = (now_us() - t0) / n;
    sp_case a;
    if (!k || make_case(b, "twell-ffn", "M=333,D=256,F=1000,nnz=40,dense=1,dense_nnz=400", k, &a) != SPTUNE_OK) {
        CHECK_MSG(0, "host cost case: %s", sptune_last_error());
        sptune_kernel_free(k);
        return;
    }
    unsigned long long t[8];
    size_t ws_bytes = 0;
    CUdeviceptr ws = 0;
    CHECK_EQ(tensors_of(k, &a, t), 5);
    CHECK_ST(sptune_kernel_workspace(k, 1, &ws_bytes), SPTUNE_OK);
    CHECK_ST(SP_CU(cu->MemAlloc(&ws, ws_bytes)), SPTUNE_OK);
    double per[2];
    for (int which = 0; which < 2; which++) {   /* the maximum, then 333 tokens (geometry kept after the first) */
        long long tokens = which ? 333 : 0;
        if (which) CHECK_ST(sptune_twell_ffn(k, b->stream, tokens, t[0], t[1], t[2], t[3], t[4], ws, ws_bytes), SPTUNE_OK);
        CHECK_ST(SP_CU(cu->StreamSynchronize(b->stream)), SPTUNE_OK);
        const int runs = 100;
        t0 = now_us();
        for (int i = 0; i < runs; i++)
            CHECK_ST(sptune_twell_ffn(k, b->stream, tokens, t[0], t[1], t[2], t[3], t[4], ws, ws_bytes), SPTUNE_OK);
        per[which] = (now_us() - t0) / runs;
        CHECK_ST(SP_CU(cu->StreamSynchronize(b->stream)), SPTUNE_OK);
    }
    printf("  host cost: first get %.1f ms, cached get %.1f us, sptune_twell_ffn launch %.1f us (M = max), "
           "%.1f us (M = 333) for %d kernels\n", first / 1e3, get_us, per[0], per[1], sptune_kernel_launches(k));
    CHECK_MSG(get_us < 1000, "a cached get takes %.0f us (the target is at most 1 ms)", get_us);
    cu->MemFree(ws);
    sp_case_destroy(&a);
    sptune_kernel_free(k);
}

/* Autotuning on the caller's data: the fastest of the candidates (the kernel served unless another beats it by 2 %
 * head to head) is returned and computes exactly; a stream being
 * captured into a graph is refused, and the capture goes on unharmed. */
static void run_autotune(sp_bench *b)
{
    const char *problem = "M=333,D=256,F=1000,nnz=40,dense=1,dense_nnz=400";
    sptune_kernel_request req = {.op = "twell-ffn", .problem = FFN_MAX, .gpu = b->gpu.info.profile, .db_path = "",
                                 .cache_dir = cache_dir};
    sptune_kernel *k = NULL, *best = NULL;
    sp_case a;
    CHECK_ST(sptune_kernel_get(&req, &k), SPTUNE_OK);
    if (!k) return;
    if (make_case(b, "twell-ffn", problem, k, &a) != SPTUNE_OK) {
        CHECK_MSG(0, "autotune case: %s", sptune_last_error());
        sptune_kernel_free(k);
        return;
    }
    size_t ws_bytes = 0;
    CUdeviceptr ws = 0;
    unsigned long long t[8];
    CHECK_ST(sptune_kernel_workspace(k, 1, &ws_bytes), SPTUNE_OK);
    CHECK_ST(SP_CU(cu->MemAlloc(&ws, ws_bytes)), SPTUNE_OK);
    CHECK_EQ(tensors_of(k, &a, t), 5);
    /* recorded in a database of the test's own, then served from it */
    char db[600];
    snprintf(db, sizeof db, "%s/autotune.db", sp_test_tmpdir("test_gpu_api"));
    remove(db);
    sptune_kernel_request rec = req;
    rec.db_path = db;
    CHECK_ST(sptune_kernel_autotune(&rec, b->stream, 333, t, ws, ws_bytes, &best), SPTUNE_OK);
    if (best) {
        sptune_kernel *again = NULL;
        const char *served = NULL;
        CHECK_ST(sptune_kernel_get(&rec, &again), SPTUNE_OK);
        if (again) {
            CHECK_MSG(!strcmp(sptune_kernel_config(again), sptune_kernel_config(best)), "served %s, autotuned %s",
                      sptune_kernel_config(again), sptune_kernel_config(best));
            CHECK_EQ(sptune_kernel_origin(again, &served), SPTUNE_ORIGIN_EXACT);
            CHECK_MSG(strstr(served, "measured on the application's own tensors (gen=2"), "%s", served);
        }
        sptune_kernel_free(again);
    }
    if (best) {
        const char *detail = NULL;
        sptune_kernel_origin(best, &detail);
        CHECK_MSG(strstr(detail, "autotuned: the fastest of") || strstr(detail, "autotuned: the kernel served, the best of"),
                  "%s", detail);
        char why[512] = "";
        CHECK_ST(a.ops->poison(a.state, b->stream), SPTUNE_OK);
        CHECK_ST(helper_launch(best, "twell-ffn", b, 333, t, ws, ws_bytes), SPTUNE_OK);
        double rel = verify(b, &a, why, sizeof why);
        CHECK_MSG(rel < a.ops->tolerance, "the autotuned kernel (%s): error %.3g (%s)", sptune_kernel_config(best), rel, why);
        printf("  autotune twell-ffn %s: %s (%s)\n", problem, sptune_kernel_config(best), detail);
    }
    if (cu->StreamBeginCapture && cu->StreamEndCapture) {
        CUgraph g = NULL;
        sptune_kernel *none = NULL;
        CHECK_ST(SP_CU(cu->StreamBeginCapture(b->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)), SPTUNE_OK);
        CHECK_ST(sptune_kernel_autotune(&req, b->stream, 333, t, ws, ws_bytes, &none), SPTUNE_ERR_INVALID);
        CHECK_MSG(none == NULL && strstr(sptune_last_error(), "captured into a CUDA graph"), "%s", sptune_last_error());
        CHECK_ST(SP_CU(cu->StreamEndCapture(b->stream, &g)), SPTUNE_OK);
        if (g) cu->GraphDestroy(g);
    }
    cu->MemFree(ws);
    sp_case_destroy(&a);
    sptune_kernel_free(best);
    sptune_kernel_free(k);
}

int main(void)
{
    int count = 0;
    if (sptune_gpu_count(&count) != SPTUNE_OK) {
        printf("test_gpu_api: %d GPU cases skipped: %s\n", NMAX * NCOUNTS * 3 + 1 + NTHREADS + 1 + 2, sptune_last_error());
        return sp_test_skip("test_gpu_api", "no GPU");
    }
    sp_bench b;
    sp_bench_opts o;
    sp_bench_opts_default(&o);
    o.energy_ms = 0;   /* correctness here; energy is the benchmarks' */
    CHECK_ST(sp_bench_open(0, &o, &b), SPTUNE_OK);
    CHECK_ST(sp_cuda_load(&cu), SPTUNE_OK);
    snprintf(cache_dir, sizeof cache_dir, "%s", sp_test_cache_dir("test_gpu_api"));
    if (sp_test_failures) return sp_test_done("test_gpu_api");
    run_token_range(&b);
    run_d2t_helper(&b);
    run_graph(&b);
    run_threads(&b);
    run_host_cost(&b);
    run_autotune(&b);
    sp_bench_close(&b);
    return sp_test_done("test_gpu_api");
}
