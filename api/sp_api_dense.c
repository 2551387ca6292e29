/* The dense layer in twell-ffn's place: where the lookup has nothing measured near the described data, or where
 * the dense layer measured faster there, sptune_kernel_get serves a kernel whose launches run the layer on cuBLAS
 * (runtime/sp_dense_ffn.h) in the caller's workspace, so that an engine never runs slower than dense because the data
 * it described is not what the results were measured on. Also the run-time guard: whether a call took the slower
 * exact paths. */
#include "sp_cuda.h"
#include "sp_dense_ffn.h"
#include "sp_status.h"
#include "sptune_kernel_object.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* How near the described data must be to the data a result was measured on for that result to be served (beyond,
 * the speed-up measured says nothing: docs/journal/2026-12-03.md has the configurations served at nnz=400 with 0.5 % heavy
 * tokens running 0.12x on nnz=300 with 21 %). */
#define NEAR_TOKENS 2.0     /* batch (M) within this factor */
#define NEAR_NNZ 1.5        /* mean active neurons per token within this factor */
#define NEAR_HEAVY 2.0      /* heavy-token share within this factor plus one percentage point */
#define NEAR_HEAVY_NNZ 2.0  /* the heavy tokens' active neurons within this factor (where there are heavy tokens) */
#define NEAR_TAIL 0.35      /* a firing-rate tail exponent at most this much lighter than measured (a heavier one
                             * concentrates the firing on fewer neurons, whose weight rows stay in L2 and in a hot
                             * slice; and gen=0's data fires with a heavier tail than its parameter says) */
#define NEAR_SPREAD 0.25    /* per-token gains' spread this close (where both were made by the layer) */

static double dim(const sp_problem *p, const char *name, double otherwise)
{
    double v;
    return sp_problem_get(p, name, &v) ? v : otherwise;
}

static int within(double a, double b, double factor) { return a > 0 && b > 0 ? fmax(a / b, b / a) <= factor : a == b; }

/* Why data `rec` is not near data `want` ("" when it is). */
static void far_why(const sp_problem *rec, const sp_problem *want, char *why, size_t len)
{
    const double M[2] = {dim(rec, "M", 0), dim(want, "M", 0)}, nnz[2] = {dim(rec, "nnz", 0), dim(want, "nnz", 0)};
    const double heavy[2] = {dim(rec, "dense", 0), dim(want, "dense", 0)};
    const double hnnz[2] = {dim(rec, "dense_nnz", 0), dim(want, "dense_nnz", 0)};
    const double tail[2] = {dim(rec, "tail", 0), dim(want, "tail", 0)};
    const double gen[2] = {dim(rec, "gen", 0), dim(want, "gen", 0)}, spread[2] = {dim(rec, "spread", 0), dim(want, "spread", 0)};
    *why = 0;
    if (!within(M[0], M[1], NEAR_TOKENS))
        snprintf(why, len, "a batch of %.0f tokens, measured at %.0f", M[1], M[0]);
    else if (!within(nnz[0], nnz[1], NEAR_NNZ))
        snprintf(why, len, "%.4g active neurons a token, measured at %.4g", nnz[1], nnz[0]);
    else if (fmax(heavy[0], heavy[1]) > NEAR_HEAVY * fmin(heavy[0], heavy[1]) + 1.0)
        snprintf(why, len, "%.4g %% heavy tokens, measured at %.4g %%", heavy[1], heavy[0]);
    else if (fmax(heavy[0], heavy[1]) > 0 && !within(hnnz[0], hnnz[1], NEAR_HEAVY_NNZ))
        snprintf(why, len, "heavy tokens of %.4g active neurons, measured at %.4g", hnnz[1], hnnz[0]);
    else if (tail[0] - tail[1] > NEAR_TAIL)
        snprintf(why, len, "a firing-rate tail of %.3g, measured at %.3g", tail[1], tail[0]);
    else if (gen[0] == 1 && gen[1] == 1 && fabs(spread[0] - spread[1]) > NEAR_SPREAD)
        snprintf(why, len, "tokens' gains of spread %.3g, measured at %.3g", spread[1], spread[0]);
}

void sp_api_dense_decide(const sp_template *t, const sp_problem *want, sptune_kernel *k)
{
    char why[256] = "";
    sp_problem rec;
    if (!k->recorded[0] || k->origin == SPTUNE_ORIGIN_DEFAULT) {
        snprintf(why, sizeof why, "nothing measured for this op near the problem");
    } else if (sp_problem_parse(t, k->recorded, &rec) != SPTUNE_OK) {
        sp_clear_error();
        snprintf(why, sizeof why, "the result served was measured on a problem of other dimensions (%.120s)",
                 k->recorded);
    } else if (dim(&rec, "gen", 0) != 2) {   /* measured on the application's own tensors: its own problem */
        char far[200];
        far_why(&rec, want, far, sizeof far);
        if (*far) snprintf(why, sizeof why, "the data described is far from where it was measured: %s", far);
    }
    if (!*why && k->baseline_ms > 0 && k->ms >= k->baseline_ms)
        snprintf(why, sizeof why, "the dense layer measured faster there (%.4f ms against %.4f ms)", k->baseline_ms, k->ms);
    if (!*why) return;
    sp_api_dense_mark(k, why);
    k->ms = k->baseline_ms;   /* what runs: the dense layer (-1 when nothing was measured) */
}

void sp_api_dense_mark(sptune_kernel *k, const char *why)
{
    char was[sizeof k->detail];
    snprintf(was, sizeof was, "%s", k->detail);
    k->dense = 1;
    snprintf(k->detail, sizeof k->detail, "the dense layer on cuBLAS in the op's place%s%.240s%s; the configuration "
             "beside it: %.680s", why ? " (" : "", why ? why : "", why ? ")" : "", was);
}

/* The pointers of twell-ffn's tensors in argument order: X, Wg, Wu, Wd, Y. */
sptune_status sp_api_dense_launch(sptune_kernel *k, void *stream, long long tokens, const unsigned long long *tensors,
                                  unsigned long long workspace, size_t workspace_bytes)
{
    if (!k->dense_rt) {   /* the driver first: without one, SPTUNE_ERR_NO_GPU as for the op's own kernels */
        const sp_cuda_api *cu;
        sptune_status st = sp_cuda_load(&cu);
        if (st == SPTUNE_OK) st = sp_dense_ffn_create(k->gpu.info.arch, k->gpu.info.sm_count, &k->dense_rt);
        if (st != SPTUNE_OK) return st;
    }
    const double D = dim(&k->want, "D", -1), F = dim(&k->want, "F", -1);
    if (D < 1 || F < 1 || k->ntensors != 5)
        return sp_fail(SPTUNE_ERR_TEMPLATE, "%s: the dense layer needs D, F and five tensors", k->op);
    return sp_dense_ffn_run(k->dense_rt, (CUstream)stream, tokens, (int)D, (int)F, tensors[0], tensors[1], tensors[2],
                            tensors[3], tensors[4], workspace, workspace_bytes);
}

/* The raw launch's list (pointers to the arguments' values, sptune_kernel_launch): the tensors, and the largest
 * workspace part as the dense layer's workspace. */
sptune_status sp_api_dense_launch_args(sptune_kernel *k, void *stream, long long tokens, void **args)
{
    unsigned long long t[5], ws = 0;
    size_t ws_bytes = 0;
    int n = 0;
    for (int i = 0; i < k->nargs; i++) {
        const kernel_arg *x = &k->arg[i];
        if ((x->decl.role == SP_ROLE_INPUT || x->decl.role == SP_ROLE_OUTPUT) && n < 5) {
            memcpy(&t[n++], args[i], sizeof t[0]);
        } else if (x->decl.role == SP_ROLE_WORKSPACE && sp_api_part_bytes(x, 0) > ws_bytes) {
            ws_bytes = sp_api_part_bytes(x, 0);
            memcpy(&ws, args[i], sizeof ws);
        }
    }
    if (n != 5) return sp_fail(SPTUNE_ERR_TEMPLATE, "%s: the dense layer needs five tensors", k->op);
    return sp_api_dense_launch(k, stream, tokens, t, ws, ws_bytes);
}

sptune_status sptune_twell_ffn_slow(sptune_kernel *k, void *stream, long long tokens, unsigned long long workspace,
                                    size_t workspace_bytes, int *slow)
{
    static const char fn[] = "sptune_twell_ffn_slow";
    if (!k || !slow) return sp_fail(SPTUNE_ERR_INVALID, "%s: no kernel or no output", fn);
    *slow = 0;
    if (strcmp(k->op, "twell-ffn") != 0) return sp_fail(SPTUNE_ERR_INVALID, "%s: the kernel is %s's", fn, k->op);
    if (k->dense || tokens == 0) return SPTUNE_OK;   /* the dense layer has no slower path */
    sp_api_cut cut;
    sptune_status st = sp_api_cut_workspace(k, fn, &tokens, workspace, workspace_bytes, &cut);
    if (st != SPTUNE_OK) return st;
    const int counter = sp_api_arg_named(k, "pool_counter"), capacity = sp_api_arg_named(k, "pool_capacity");
    const int info = sp_api_arg_named(k, "row_info"), dense_cap = sp_api_arg_named(k, "dense_capacity");
    if (counter < 0 || capacity < 0 || info < 0 || dense_cap < 0)
        return sp_fail(SPTUNE_ERR_TEMPLATE, "%s: twell-ffn's workspace lacks its counters", fn);
    const sp_cuda_api *cu;
    if ((st = sp_cuda_load(&cu)) != SPTUNE_OK) return st;
    unsigned long long wanted = 0;
    unsigned routed = 0;
    if ((st = SP_CU(cu->StreamSynchronize((CUstream)stream))) != SPTUNE_OK ||
        (st = SP_CU(cu->MemcpyDtoH(&wanted, cut.ptr[counter], 8))) != SPTUNE_OK ||
        (st = SP_CU(cu->MemcpyDtoH(&routed, cut.ptr[info] + (CUdeviceptr)tokens * 4, 4))) != SPTUNE_OK)
        return st;
    *slow = wanted > (unsigned long long)cut.num[capacity] || (long long)routed > cut.num[dense_cap];
    return SPTUNE_OK;
}
