/* The runtime API for applications: the best recorded configuration of an op for a problem and
 * GPU (exact, else the nearest recorded problem, else a result of another GPU of the same
 * architecture, else the template's default: api/sp_api_lookup.c), rendered, compiled through the
 * kernel cache, and launched on the caller's stream. */
#include "sp_api_lookup.h"
#include "sp_cache.h"
#include "sp_gpu.h"
#include "sp_launch.h"
#include "sp_status.h"
#include "sp_template.h"
#include "sptune.h"
#include "sp_variant.h"
#include "sptune_kernel_object.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sp_api_arg_sizes(const sp_template *t, const sp_config *cfg, const sp_problem *p, long long scalar[2][SP_MAX_ARGS],
                      long long elements[2][SP_MAX_ARGS])
{
    sp_vars vars;
    sp_config_vars(t, cfg, p, &vars);
    sp_vars at[2] = {vars, vars};   /* the scalars at their typical sizes, and at their bounds */
    for (int i = 0; i < sp_template_nargs(t); i++) {
        const sp_arg *a = sp_template_arg(t, i);
        for (int b = 0; b < 2; b++) {
            long long n = -1;
            if (a->role != SP_ROLE_SCALAR || sp_config_scalar_size(t, cfg, p, a->name, b, &n) != SPTUNE_OK) n = -1;
            if (n >= 0) sp_vars_set(&at[b], a->name, (double)n);
            scalar[b][i] = n;
        }
    }
    for (int i = 0; i < sp_template_nargs(t); i++) {
        const sp_arg *a = sp_template_arg(t, i);
        for (int b = 0; b < 2; b++)
            if (!sp_arg_is_pointer(a) || sp_arg_elements(a, &at[b], &elements[b][i]) != SPTUNE_OK) elements[b][i] = -1;
    }
    sp_clear_error();
}

/* The template's argument declarations, copied into k, with their declared sizes for the problem and configuration
 * (sp_api_arg_sizes). */
static sptune_status keep_args(const sp_template *t, const sp_config *cfg, const sp_problem *want, sptune_kernel *k)
{
    long long scalar[2][SP_MAX_ARGS], elements[2][SP_MAX_ARGS];
    sp_api_arg_sizes(t, cfg, want, scalar, elements);
    for (int i = 0; i < sp_template_nargs(t); i++) {
        const sp_arg *a = sp_template_arg(t, i);
        kernel_arg *x = &k->arg[i];
        k->nargs = i + 1;
        x->decl = *a;
        x->decl.typical = x->decl.bound = NULL;
        x->decl.doc = strdup(a->doc);
        int oom = !x->decl.doc;
        for (int s = 0; s < a->nshape; s++) oom |= !(x->decl.shape[s] = strdup(a->shape[s]));
        sp_buf b = {0};
        sp_arg_shape_text(a, &b);
        x->shape_text = b.data ? b.data : strdup("");
        if (oom || b.oom || !x->shape_text) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
        x->typical = scalar[0][i];
        x->bound = scalar[1][i];
        x->elements = elements[0][i];
        x->elements_bound = elements[1][i];
        x->dim = -1;
        for (int d = 0; a->role == SP_ROLE_DIM && d < want->n; d++)
            if (strcmp(want->name[d], a->name) == 0) x->dim = (long long)want->v[d];
    }
    return SPTUNE_OK;
}

/* The j-th value of parameter `param` nearest to index `from` in its list (j = 1, 2, ...: from - 1,
 * from + 1, from - 2, ...), or -1 past the list's ends. */
static int nth_nearest(const sp_template *t, int param, int from, int j)
{
    int n = sp_template_param(t, param)->nvalues;
    for (int d = 1, seen = 0; d < n; d++)
        for (int side = -1; side <= 1; side += 2) {
            int v = from + side * d;
            if (v >= 0 && v < n && ++seen == j) return v;
        }
    return -1;
}

/* When the default does not fit the problem (split-K deeper than a short K, say), the valid
 * configuration nearest to it: one parameter changed, else two, the fixed ones never; parameters
 * in the template's order, values nearest to the default's first, so the choice is the same every
 * time. *ok stays 0 when none is found. */
static sptune_status nearest_valid(sp_template *t, const sp_gpu_profile *gpu, const sp_problem *p,
                                   const sp_fixed_params *f, sp_config *cfg, int *ok)
{
    const sp_config base = *cfg;
    const int np = sp_template_nparams(t);
    sptune_status st = SPTUNE_OK;
#define SP_TRY(a, va, b, vb)                                                      \
    do {                                                                          \
        *cfg = base;                                                              \
        cfg->idx[a] = (va);                                                       \
        cfg->idx[b] = (b) == (a) ? (va) : (vb);                                   \
        if ((st = sp_template_check(t, cfg, gpu, p, ok, NULL)) != SPTUNE_OK) return st; \
        if (*ok) return SPTUNE_OK;                                                \
    } while (0)
    for (int a = 0; a < np; a++) /* one parameter changed */
        for (int ja = 1, va; !sp_api_fixed_has(f, a) && (va = nth_nearest(t, a, base.idx[a], ja)) >= 0; ja++)
            SP_TRY(a, va, a, va);
    for (int a = 0; a < np; a++) /* two */
        for (int b = a + 1; b < np; b++) {
            if (sp_api_fixed_has(f, a) || sp_api_fixed_has(f, b)) continue;
            for (int ja = 1, va; (va = nth_nearest(t, a, base.idx[a], ja)) >= 0; ja++)
                for (int jb = 1, vb; (vb = nth_nearest(t, b, base.idx[b], jb)) >= 0; jb++) SP_TRY(a, va, b, vb);
        }
#undef SP_TRY
    *cfg = base;
    return SPTUNE_OK;
}

/* The caller's request as this library's struct: what the caller's size covers, the rest 0 (the defaults). */
sptune_status sp_api_request_copy(const sptune_kernel_request *in, sptune_kernel_request *r)
{
    memset(r, 0, sizeof *r);
    if (!in) return sp_fail(SPTUNE_ERR_INVALID, "sptune_kernel_get: no request");
    const size_t first = offsetof(sptune_kernel_request, fixed) + sizeof r->fixed; /* 0.3's fields */
    size_t n = in->size ? in->size : first;
    if (n < first)
        return sp_fail(SPTUNE_ERR_INVALID, "sptune_kernel_get: request size %zu is smaller than the first "
                       "version's %zu", n, first);
    memcpy(r, in, n < sizeof *r ? n : sizeof *r);
    r->size = sizeof *r;
    return SPTUNE_OK;
}

sptune_status sptune_kernel_get(const sptune_kernel_request *caller, sptune_kernel **out)
{
    if (!out) return sp_fail(SPTUNE_ERR_INVALID, "sptune_kernel_get: no output");
    *out = NULL;
    sptune_kernel_request rq;
    sptune_status rst = sp_api_request_copy(caller, &rq);
    if (rst != SPTUNE_OK) return rst;
    const sptune_kernel_request *req = &rq;
    if (!req->op || !req->problem || !req->gpu)
        return sp_fail(SPTUNE_ERR_INVALID, "sptune_kernel_get: op, problem and gpu are required");
    sp_gpu_profile gpu;
    sptune_status st = strcmp(req->gpu, "auto") == 0 ? sp_gpu_profile_current(&gpu)
                                                     : sp_gpu_profile_named(req->gpu, &gpu);
    if (st != SPTUNE_OK) {
        /* an unknown op is the first thing to say, before any question about GPUs */
        char why[512];
        snprintf(why, sizeof why, "%s", sptune_last_error());
        sp_template *t = NULL;
        sptune_status op = sp_template_load(req->op, &t);
        sp_template_free(t);
        return op != SPTUNE_OK ? op : sp_fail(st, "%s", why);
    }
    char *key = sp_api_memo_key(req, &gpu);
    if (key && sp_api_memo_find(key, out)) {
        free(key);
        return SPTUNE_OK;
    }
    sp_template *t = NULL;
    if ((st = sp_template_load(req->op, &t)) != SPTUNE_OK) {
        free(key);
        return st;
    }
    sptune_kernel *k = calloc(1, sizeof *k);
    sp_cache *cache = NULL;
    if (!k) { sp_template_free(t); return sp_fail(SPTUNE_ERR_NOMEM, "out of memory"); }
    k->ms = k->baseline_ms = -1;
    sp_problem want;
    sp_config cfg;
    int found = 0, ok = 0;
    char *why = NULL;
    sp_fixed_params fixed;
    if ((st = sp_problem_parse(t, req->problem, &want)) != SPTUNE_OK) goto fail;
    if ((st = sp_api_fixed_parse(t, req->fixed, &fixed)) != SPTUNE_OK) goto fail;
    if ((st = sp_api_lookup(t, &gpu, &want, req, &fixed, k, &cfg, &found)) != SPTUNE_OK) goto fail;
    if (!found) {
        k->origin = SPTUNE_ORIGIN_DEFAULT;
        if ((st = sp_config_default_for(t, &gpu, &want, &cfg)) != SPTUNE_OK) goto fail;
        for (int i = 0; i < fixed.n; i++) cfg.idx[fixed.param[i]] = fixed.value[i];
        if ((st = sp_template_check(t, &cfg, &gpu, &want, &ok, &why)) != SPTUNE_OK) goto fail;
        if (!ok && (st = nearest_valid(t, &gpu, &want, &fixed, &cfg, &ok)) != SPTUNE_OK) goto fail;
        if (!ok) {
            st = sp_fail(SPTUNE_ERR_UNSUPPORTED, "%s: nothing recorded for %s on %s, and the default configuration "
                         "does not fit it (%s); tune it first: sptune tune %s --shape %s", req->op, req->problem,
                         gpu.info.profile, why ? why : "constraint failed", req->op, req->problem);
            goto fail;
        }
    }
    k->op = strdup(req->op);
    k->config = sp_config_format(t, &cfg);
    k->args = strdup(sp_template_args(t));
    if (!k->op || !k->config || !k->args) { st = sp_fail(SPTUNE_ERR_NOMEM, "out of memory"); goto fail; }
    k->cfg = cfg;
    k->gpu = gpu;
    k->want = want;
    snprintf(k->hash, sizeof k->hash, "%s", sp_template_hash(t));
    k->tokens_arg = k->tokens_dim = -1;
    if (sp_template_tokens(t)) {
        for (int d = 0; d < want.n; d++)
            if (strcmp(want.name[d], sp_template_tokens(t)) == 0) k->tokens_dim = d;
        if (k->tokens_dim >= 0) k->tokens_arg = sp_template_arg_index(t, sp_template_tokens(t));
    }
    if ((st = keep_args(t, &cfg, &want, k)) != SPTUNE_OK) goto fail;
    if (!req->sparse_only && !strcmp(req->op, "twell-ffn")) sp_api_dense_decide(t, &want, k);
    for (int b = 0; b < 2; b++)
        if (sptune_kernel_workspace(k, b, &k->ws_total[b]) != SPTUNE_OK) k->ws_total[b] = SIZE_MAX;
    sp_clear_error();
    for (int i = 0; i < k->nargs; i++)
        k->ntensors += k->arg[i].decl.role == SP_ROLE_INPUT || k->arg[i].decl.role == SP_ROLE_OUTPUT;
    if (!req->cache_dir || *req->cache_dir) {
        if ((st = sp_cache_open(req->cache_dir, &cache)) != SPTUNE_OK) goto fail;
    }
    if ((st = sp_variant_build(t, &cfg, &gpu, &want, cache, &k->src, &k->cubin)) != SPTUNE_OK) goto fail;
    sp_cache_close(cache);
    sp_template_free(t);
    free(why);
    if (key) sp_api_memo_add(key, k);
    free(key);
    *out = k;
    return SPTUNE_OK;
fail:
    free(key);
    free(why);
    sp_cache_close(cache);
    sp_template_free(t);
    sptune_kernel_free(k);
    return st;
}

void sptune_kernel_free(sptune_kernel *k)
{
    if (!k) return;
    if (k->loaded.module) sp_kernel_unload(&k->loaded);
    sp_dense_ffn_destroy(k->dense_rt);
    sp_template_free(k->t);
    free(k->op);
    sp_cubin_free(&k->cubin);
    sp_kernel_src_free(&k->src);
    free(k->config);
    free(k->args);
    for (int i = 0; i < k->nargs; i++) {
        sp_arg_free(&k->arg[i].decl);
        free(k->arg[i].shape_text);
    }
    free(k);
}
