/* Autotuning on the caller's own data (sptune_kernel_autotune): the configurations recorded nearest the problem
 * (and, for twell-ffn, the dense layer) timed on the application's tensors, stream and workspace, the fastest
 * kept (the kernel served unless the fastest other beats it head to head: sp_api_autotune_choose). What the
 * tuner's generators drew is not the application's data: the recorded order of the candidates may not be the
 * order on it, and this is where that is found out. */
#include "sp_cuda.h"
#include "sp_status.h"
#include "sptune_kernel_object.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CANDIDATES 4   /* recorded configurations timed, at most (plus the served one and the dense layer) */
#define RUNS SP_AUTOTUNE_RUNS

static int by_value(const void *a, const void *b)
{
    const float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* The caller's launch: its stream, tokens, tensors and workspace, and two events. */
typedef struct {
    const sp_cuda_api *cu;
    CUstream stream;
    long long tokens;
    const unsigned long long *tensors;
    unsigned long long ws;
    size_t ws_bytes;
    CUevent a, b;
} sp_tune_launch;

/* One launch of k between the events, in ms. */
static sptune_status time_once(const sp_tune_launch *l, sptune_kernel *k, float *ms)
{
    const sp_cuda_api *cu = l->cu;
    sptune_status st;
    if ((st = SP_CU(cu->EventRecord(l->a, l->stream))) != SPTUNE_OK ||
        (st = sptune_kernel_launch_ws(k, l->stream, l->tokens, l->tensors, l->ws, l->ws_bytes)) != SPTUNE_OK ||
        (st = SP_CU(cu->EventRecord(l->b, l->stream))) != SPTUNE_OK || (st = SP_CU(cu->EventSynchronize(l->b))) != SPTUNE_OK)
        return st;
    return SP_CU(cu->EventElapsedTime(ms, l->a, l->b));
}

/* sp_autotune_timer's time on the GPU (ctx: the sp_tune_launch): the median of RUNS timed launches of k (after one
 * untimed); with other, its launches alternate with k's (each after one untimed): what drifts meanwhile (clocks,
 * other work on the GPU) drifts for both. */
static sptune_status time_kernel(void *ctx, sptune_kernel *k, double *ms, float *t, sptune_kernel *other,
                                 double *other_ms, float *other_t)
{
    const sp_tune_launch *l = ctx;
    sptune_status st = sptune_kernel_launch_ws(k, l->stream, l->tokens, l->tensors, l->ws, l->ws_bytes);
    if (st == SPTUNE_OK && other) st = sptune_kernel_launch_ws(other, l->stream, l->tokens, l->tensors, l->ws, l->ws_bytes);
    for (int r = 0; st == SPTUNE_OK && r < RUNS; r++)
        if ((st = time_once(l, k, &t[r])) == SPTUNE_OK && other) st = time_once(l, other, &other_t[r]);
    if (st != SPTUNE_OK) return st;
    qsort(t, RUNS, sizeof t[0], by_value);
    *ms = t[RUNS / 2];
    if (other) {
        qsort(other_t, RUNS, sizeof other_t[0], by_value);
        *other_ms = other_t[RUNS / 2];
    }
    return SPTUNE_OK;
}

sptune_status sptune_kernel_autotune(const sptune_kernel_request *caller, void *stream, long long tokens,
                                     const unsigned long long *tensors, unsigned long long workspace,
                                     size_t workspace_bytes, sptune_kernel **out)
{
    const char *fn = "sptune_kernel_autotune";
    if (!out) return sp_fail(SPTUNE_ERR_INVALID, "%s: no output", fn);
    *out = NULL;
    if (!caller || !tensors) return sp_fail(SPTUNE_ERR_INVALID, "%s: no request or no tensors", fn);
    sptune_kernel_request rq;
    sptune_status st = sp_api_request_copy(caller, &rq);
    if (st != SPTUNE_OK) return st;
    const sptune_kernel_request *req = &rq;
    if (tokens < 1) return sp_fail(SPTUNE_ERR_INVALID, "%s: tokens=%lld (the batch to time: 1 to the problem's)", fn, tokens);
    /* the kernel served now: it is a candidate, and it checks the request before any GPU question */
    sptune_kernel *served = NULL;
    st = sptune_kernel_get(req, &served);
    if (st != SPTUNE_OK) return st;
    const sp_cuda_api *cu;
    if ((st = sp_cuda_load(&cu)) != SPTUNE_OK) { sptune_kernel_free(served); return st; }
    if (cu->StreamIsCapturing) {
        CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
        if ((st = SP_CU(cu->StreamIsCapturing((CUstream)stream, &cap))) == SPTUNE_OK && cap != CU_STREAM_CAPTURE_STATUS_NONE)
            st = sp_fail(SPTUNE_ERR_INVALID, "%s: the stream is being captured into a CUDA graph; autotuning times "
                         "kernels and cannot run inside a capture: autotune before capturing, then capture the kernel "
                         "it returns", fn);
        if (st != SPTUNE_OK) { sptune_kernel_free(served); return st; }
    }
    /* the candidates: the recorded configurations nearest the problem, and twell-ffn's dense layers (hot=8, and
       on cuBLAS: sp_api_autotune_choose) */
    char *configs[CANDIDATES + 1];
    int n = 0;
    if ((st = sp_api_ranked_configs(req, CANDIDATES, configs, &n)) != SPTUNE_OK) { sptune_kernel_free(served); return st; }
    /* the dense layer: hot=8 fixed, the rest as the lookup has it (the sparse part's parameters at their defaults:
       the served configuration with hot=8 alone is seldom valid) */
    if (!strcmp(served->op, "twell-ffn") && n < CANDIDATES + 1 && (configs[n] = strdup("hot=8"))) n++;
    sp_tune_launch l = {cu, (CUstream)stream, tokens, tensors, workspace, workspace_bytes, NULL, NULL};
    sp_autotune_choice ch;
    const sp_autotune_timer timer = {time_kernel, &l};
    if ((st = SP_CU(cu->EventCreate(&l.a, CU_EVENT_DEFAULT))) == SPTUNE_OK) st = SP_CU(cu->EventCreate(&l.b, CU_EVENT_DEFAULT));
    if (st == SPTUNE_OK) st = sp_api_autotune_choose(req, served, configs, n, workspace_bytes, &timer, &ch);
    if (l.a) cu->EventDestroy(l.a);
    if (l.b) cu->EventDestroy(l.b);
    for (int i = 0; i < n; i++) free(configs[i]);
    if (st != SPTUNE_OK) {
        sptune_kernel_free(served);
        return st;
    }
    sptune_kernel *best = ch.best;
    /* recorded for the next lookups; a database that cannot be written costs the record, not the kernel: the
       detail says so. Where the dense layer on cuBLAS won, the served configuration's own times are recorded beside
       it (the lookup then serves the dense layer for the problem); where it was served from the start, nothing. */
    char where[768] = "";
    const sptune_kernel *rec = best->dense ? (served->dense ? NULL : served) : best;
    if (rec && sp_api_autotune_record(rec, req->db_path, tokens, rec == served ? ch.served_t : ch.best_t, RUNS,
                                      ch.dense_ms, where, sizeof where) != SPTUNE_OK) {
        snprintf(where, sizeof where, "not recorded: %.600s", sptune_last_error());
        sp_clear_error();
    }
    if (best != served) sptune_kernel_free(served);
    const size_t len = strlen(best->detail);
    char duel[160] = "";
    if (ch.served_ms >= 0 && ch.kept)
        snprintf(duel, sizeof duel, " (kept: the fastest other, head to head, %.4f ms against its %.4f ms; a "
                 "challenger must be %.0f %% faster)", ch.challenger_ms, ch.served_ms, 100 * SP_AUTOTUNE_MARGIN);
    else if (ch.served_ms >= 0)
        snprintf(duel, sizeof duel, " (head to head against the kernel served: %.4f ms)", ch.served_ms);
    snprintf(best->detail + len, sizeof best->detail - len, "; autotuned: %s of %d timed on the caller's data at %lld "
             "tokens, %.4f ms%s%s%s", ch.kept ? "the kernel served, the best" : "the fastest", ch.timed, tokens,
             ch.best_ms, duel, where[0] ? "; " : "", where);
    *out = best;
    return SPTUNE_OK;
}
