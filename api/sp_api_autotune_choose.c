/* Autotuning's choice (sp_api_autotune_choose): which of the candidates, timed by the caller's timer, is kept. The
 * GPU's timer is sptune_autotune.c's; a test gives made-up times, so that the choice is checked without a GPU. */
#include "sp_status.h"
#include "sp_str.h"
#include "sptune_kernel_object.h"

#include <stdio.h>
#include <string.h>

/* 1 when configuration text c sets name=value (the whole value). */
static int sets(const char *c, const char *name, const char *value)
{
    size_t n = 0;
    const char *v = sp_kv_find(c, name, strlen(name), &n);
    return v && n == strlen(value) && !strncmp(v, value, n);
}

sptune_status sp_api_autotune_choose(const sptune_kernel_request *req, sptune_kernel *served, char *const *configs,
                                     int n, size_t workspace_bytes, const sp_autotune_timer *timer,
                                     sp_autotune_choice *out)
{
    memset(out, 0, sizeof *out);
    out->best_ms = out->dense_ms = out->served_ms = out->challenger_ms = -1;
    sptune_kernel *best = served;
    float t[SP_AUTOTUNE_RUNS];
    size_t need = 0;
    sptune_status st = SPTUNE_OK;
    if (sptune_kernel_workspace(served, 0, &need) == SPTUNE_OK && need > workspace_bytes)
        return sp_fail(SPTUNE_ERR_INVALID, "sptune_kernel_autotune: the workspace has %zu bytes, the kernel served now "
                       "needs %zu (sptune_kernel_workspace)", workspace_bytes, need);
    if ((st = timer->time(timer->ctx, served, &out->best_ms, out->best_t, NULL, NULL, NULL)) != SPTUNE_OK) return st;
    memcpy(out->served_t, out->best_t, sizeof out->served_t);
    out->timed = 1;
    if (served->dense || sets(served->config, "hot", "8")) out->dense_ms = out->best_ms;
    /* the candidates, and (twell-ffn, where the served kernel is its own) the dense layer on cuBLAS last */
    const int cublas = !served->dense && !strcmp(served->op, "twell-ffn");
    for (int i = 0; st == SPTUNE_OK && i < n + cublas; i++) {
        if (i < n && !strcmp(configs[i], served->config)) continue;   /* timed already (the candidates are distinct) */
        sptune_kernel_request one = *req;
        one.sparse_only = 1;
        one.fixed = i < n ? configs[i] : NULL;   /* every parameter fixed (this configuration), or hot=8 alone (sptune's
                                                    dense layer) */
        sptune_kernel *k = NULL;
        double ms = -1;
        if (i == n) {   /* the served configuration, the dense layer in its place */
            if ((st = sp_api_kernel_clone(served, &k)) != SPTUNE_OK) break;
            sp_api_dense_mark(k, NULL);
        } else if (sptune_kernel_get(&one, &k) != SPTUNE_OK ||
                   (sptune_kernel_workspace(k, 0, &need) == SPTUNE_OK && need > workspace_bytes)) {
            sp_clear_error();   /* not this one: invalid here, or more workspace than the caller has */
            sptune_kernel_free(k);
            continue;
        }
        st = timer->time(timer->ctx, k, &ms, t, NULL, NULL, NULL);
        out->timed++;
        if (st == SPTUNE_OK && (k->dense || sets(k->config, "hot", "8")) && (out->dense_ms < 0 || ms < out->dense_ms))
            out->dense_ms = ms;
        if (st == SPTUNE_OK && ms < out->best_ms) {
            if (best != served) sptune_kernel_free(best);
            best = k;
            out->best_ms = ms;
            memcpy(out->best_t, t, sizeof t);
        } else {
            sptune_kernel_free(k);
        }
    }
    /* the head-to-head: the fastest against the kernel served now, launch by launch */
    float served_t[SP_AUTOTUNE_RUNS];
    out->kept = best == served;
    if (st == SPTUNE_OK && !out->kept &&
        (st = timer->time(timer->ctx, best, &out->challenger_ms, out->best_t, served, &out->served_ms, served_t)) == SPTUNE_OK) {
        out->best_ms = out->challenger_ms;
        if (out->challenger_ms > out->served_ms * (1.0 - SP_AUTOTUNE_MARGIN)) {
            sptune_kernel_free(best);
            best = served;
            out->best_ms = out->served_ms;
            memcpy(out->best_t, served_t, sizeof served_t);
            out->kept = 1;
        }
    }
    if (st != SPTUNE_OK) {
        if (best != served) sptune_kernel_free(best);
        return st;
    }
    out->best = best;
    return SPTUNE_OK;
}
