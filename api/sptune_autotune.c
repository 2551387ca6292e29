/* Autotuning on the caller's own data (sptune_kernel_autotune): the configurations recorded nearest the problem
 * (and, for twell-ffn, the dense layer) timed on the application's tensors, stream and workspace, the fastest
 * kept. What the tuner's generators drew is not the application's data: the recorded order of the candidates
 * may not be the order on it, and this is where that is found out. */
#include "sp_cuda.h"
#include "sp_status.h"
#include "sp_str.h"
#include "sptune_kernel_object.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CANDIDATES 4   /* recorded configurations timed, at most (plus the served one and the dense layer) */
#define RUNS 5         /* timed runs per candidate, after one warm-up */

static int by_value(const void *a, const void *b)
{
    const float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* The median of RUNS timed launches of k (after one untimed), in ms; t: every run, ascending. */
static sptune_status time_kernel(const sp_cuda_api *cu, sptune_kernel *k, CUstream stream, long long tokens,
                                 const unsigned long long *tensors, unsigned long long ws, size_t ws_bytes,
                                 CUevent a, CUevent b, double *ms, float t[RUNS])
{
    sptune_status st = sptune_kernel_launch_ws(k, stream, tokens, tensors, ws, ws_bytes);
    for (int r = 0; st == SPTUNE_OK && r < RUNS; r++) {
        if ((st = SP_CU(cu->EventRecord(a, stream))) != SPTUNE_OK ||
            (st = sptune_kernel_launch_ws(k, stream, tokens, tensors, ws, ws_bytes)) != SPTUNE_OK ||
            (st = SP_CU(cu->EventRecord(b, stream))) != SPTUNE_OK || (st = SP_CU(cu->EventSynchronize(b))) != SPTUNE_OK)
            break;
        st = SP_CU(cu->EventElapsedTime(&t[r], a, b));
    }
    if (st != SPTUNE_OK) return st;
    qsort(t, RUNS, sizeof t[0], by_value);
    *ms = t[RUNS / 2];
    return SPTUNE_OK;
}

/* 1 when configuration text c sets name=value (the whole value). */
static int sets(const char *c, const char *name, const char *value)
{
    size_t n = 0;
    const char *v = sp_kv_find(c, name, strlen(name), &n);
    return v && n == strlen(value) && !strncmp(v, value, n);
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
    sptune_kernel *best = NULL;
    st = sptune_kernel_get(req, &best);
    if (st != SPTUNE_OK) return st;
    const sp_cuda_api *cu;
    if ((st = sp_cuda_load(&cu)) != SPTUNE_OK) { sptune_kernel_free(best); return st; }
    if (cu->StreamIsCapturing) {
        CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
        if ((st = SP_CU(cu->StreamIsCapturing((CUstream)stream, &cap))) == SPTUNE_OK && cap != CU_STREAM_CAPTURE_STATUS_NONE)
            st = sp_fail(SPTUNE_ERR_INVALID, "%s: the stream is being captured into a CUDA graph; autotuning times "
                         "kernels and cannot run inside a capture: autotune before capturing, then capture the kernel "
                         "it returns", fn);
        if (st != SPTUNE_OK) { sptune_kernel_free(best); return st; }
    }
    /* the candidates: the recorded configurations nearest the problem, and twell-ffn's dense layer (hot=8) */
    char *configs[CANDIDATES + 1];
    int n = 0;
    if ((st = sp_api_ranked_configs(req, CANDIDATES, configs, &n)) != SPTUNE_OK) { sptune_kernel_free(best); return st; }
    /* the dense layer: hot=8 fixed, the rest as the lookup has it (the sparse part's parameters at their defaults:
       the served configuration with hot=8 alone is seldom valid) */
    if (!strcmp(best->op, "twell-ffn") && n < CANDIDATES + 1 && (configs[n] = strdup("hot=8"))) n++;
    CUevent a = NULL, b = NULL;
    double best_ms = -1, dense_ms = -1;   /* dense: twell-ffn's dense layer (hot=8), the recorded result's baseline */
    float best_t[RUNS], t[RUNS];
    int timed = 0;
    if ((st = SP_CU(cu->EventCreate(&a, CU_EVENT_DEFAULT))) == SPTUNE_OK) st = SP_CU(cu->EventCreate(&b, CU_EVENT_DEFAULT));
    size_t need = 0;
    if (st == SPTUNE_OK && sptune_kernel_workspace(best, 0, &need) == SPTUNE_OK && need > workspace_bytes)
        st = sp_fail(SPTUNE_ERR_INVALID, "%s: the workspace has %zu bytes, the kernel served now needs %zu "
                     "(sptune_kernel_workspace)", fn, workspace_bytes, need);
    if (st == SPTUNE_OK && (st = time_kernel(cu, best, (CUstream)stream, tokens, tensors, workspace, workspace_bytes,
                                            a, b, &best_ms, best_t)) == SPTUNE_OK) {
        timed = 1;
        if (sets(best->config, "hot", "8")) dense_ms = best_ms;
    }
    for (int i = 0; st == SPTUNE_OK && i < n; i++) {
        if (!strcmp(configs[i], best->config)) continue;
        sptune_kernel_request one = rq;
        one.fixed = configs[i];   /* every parameter fixed (this configuration), or hot=8 alone (the dense layer) */
        sptune_kernel *k = NULL;
        double ms = -1;
        if (sptune_kernel_get(&one, &k) != SPTUNE_OK ||
            (sptune_kernel_workspace(k, 0, &need) == SPTUNE_OK && need > workspace_bytes)) {
            sp_clear_error();   /* not this one: invalid here, or more workspace than the caller has */
            sptune_kernel_free(k);
            continue;
        }
        st = time_kernel(cu, k, (CUstream)stream, tokens, tensors, workspace, workspace_bytes, a, b, &ms, t);
        timed++;
        if (st == SPTUNE_OK && sets(k->config, "hot", "8") && (dense_ms < 0 || ms < dense_ms)) dense_ms = ms;
        if (st == SPTUNE_OK && ms < best_ms) {
            sptune_kernel_free(best);
            best = k;
            best_ms = ms;
            memcpy(best_t, t, sizeof t);
        } else {
            sptune_kernel_free(k);
        }
    }
    if (a) cu->EventDestroy(a);
    if (b) cu->EventDestroy(b);
    for (int i = 0; i < n; i++) free(configs[i]);
    if (st != SPTUNE_OK) {
        sptune_kernel_free(best);
        return st;
    }
    /* recorded for the next lookups; a database that cannot be written costs the record, not the kernel: the
       detail says so */
    char where[768];
    if (sp_api_autotune_record(best, req->db_path, tokens, best_t, RUNS, dense_ms, where, sizeof where) != SPTUNE_OK) {
        snprintf(where, sizeof where, "not recorded: %.600s", sptune_last_error());
        sp_clear_error();
    }
    const size_t len = strlen(best->detail);
    snprintf(best->detail + len, sizeof best->detail - len, "; autotuned: the fastest of %d on the caller's data at "
             "%lld tokens, %.4f ms%s%s", timed, tokens, best_ms, where[0] ? "; " : "", where);
    *out = best;
    return SPTUNE_OK;
}
