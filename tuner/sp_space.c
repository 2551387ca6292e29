#include "sp_space.h"
#include "sp_rng.h"
#include "sp_status.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

int sp_configs_push(sp_configs *cs, const sp_config *c)
{
    if (cs->n == cs->cap) {
        long long cap = cs->cap ? cs->cap * 2 : 256;
        sp_config *v = realloc(cs->v, (size_t)cap * sizeof *v);
        if (!v) return 1;
        cs->v = v;
        cs->cap = cap;
    }
    cs->v[cs->n++] = *c;
    return 0;
}

static int collect_cb(const sp_config *c, void *ud) { return sp_configs_push(ud, c); }

sptune_status sp_space_collect(sp_template *t, const sp_gpu_profile *gpu, const sp_problem *p, sp_configs *out)
{
    long long count = 0;
    memset(out, 0, sizeof *out);
    sptune_status st = sp_template_space(t, gpu, p, collect_cb, out, &count);
    if (st == SPTUNE_OK && count != out->n) st = sp_fail(SPTUNE_ERR_NOMEM, "out of memory listing the space of %s", sp_template_name(t));
    if (st != SPTUNE_OK) sp_configs_free(out);
    return st;
}

sptune_status sp_configs_one(sp_configs *cs, const sp_config *c)
{
    memset(cs, 0, sizeof *cs);
    return sp_configs_push(cs, c) ? sp_fail(SPTUNE_ERR_NOMEM, "out of memory") : SPTUNE_OK;
}

sptune_status sp_space_sample(sp_configs *cs, const sp_template *t, long long n, unsigned long long seed)
{
    if (n >= cs->n) return SPTUNE_OK;
    if (n < 0) return sp_fail(SPTUNE_ERR_INVALID, "negative sample size");
    sp_config def;
    sp_config_default(t, &def);
    char *keep = calloc((size_t)cs->n, 1);
    if (!keep) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    long long kept = 0;
    for (long long i = 0; i < cs->n && kept < n; i++)
        if (memcmp(cs->v[i].idx, def.idx, (size_t)def.nparams * sizeof def.idx[0]) == 0) { keep[i] = 1; kept++; }
    uint64_t s = seed;
    while (kept < n) {
        long long i = (long long)sp_rng_below(&s, (uint64_t)cs->n);
        if (!keep[i]) { keep[i] = 1; kept++; }
    }
    long long w = 0;
    for (long long i = 0; i < cs->n; i++)
        if (keep[i]) cs->v[w++] = cs->v[i];
    cs->n = w;
    free(keep);
    return SPTUNE_OK;
}

int sp_config_cmp(const void *a, const void *b)
{
    const sp_config *x = a, *y = b;
    for (int k = 0; k < x->nparams; k++)
        if (x->idx[k] != y->idx[k]) return x->idx[k] < y->idx[k] ? -1 : 1;
    return 0;
}

int sp_config_distance(const sp_config *a, const sp_config *b)
{
    int d = 0;
    for (int k = 0; k < a->nparams; k++) d += a->idx[k] != b->idx[k];
    return d;
}

sptune_status sp_configs_push_valid(sp_template *t, const sp_gpu_profile *gpu, const sp_problem *p, const sp_config *c,
                                    sp_configs *out)
{
    int ok = 0;
    sptune_status st = sp_template_check(t, c, gpu, p, &ok, NULL);
    if (st == SPTUNE_OK && ok && sp_configs_push(out, c)) st = sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    return st;
}

sptune_status sp_configs_push_new(sp_template *t, const sp_gpu_profile *gpu, const sp_problem *p, const sp_config *c,
                                  sp_configs *out)
{
    for (long long i = 0; i < out->n; i++)
        if (sp_config_cmp(&out->v[i], c) == 0) return SPTUNE_OK;
    return sp_configs_push_valid(t, gpu, p, c, out);
}

sptune_status sp_space_draw(sp_template *t, const sp_gpu_profile *gpu, const sp_problem *p, long long n,
                            unsigned long long seed, sp_configs *out)
{
    memset(out, 0, sizeof *out);
    if (n < 0) return sp_fail(SPTUNE_ERR_INVALID, "negative sample size");
    sp_config c;
    sptune_status st = n > 0 ? sp_config_default_for(t, gpu, p, &c) : SPTUNE_OK;
    if (st == SPTUNE_OK && n > 0) st = sp_configs_push_new(t, gpu, p, &c, out);
    /* uniform draws over the parameters' product, kept when valid: uniform over the valid configurations. A try
     * costs tens of microseconds; listing twell-ffn's space (1.1 M valid in ~6e9) takes minutes, and a draw there
     * is valid once in ~5000 tries: enough tries that such spaces are sampled, not listed. */
    uint64_t s = seed;
    const long long tries = n < LLONG_MAX / 20000 - 1 ? 20000 * (n + 1) : LLONG_MAX;
    for (long long i = 0; st == SPTUNE_OK && out->n < n && i < tries; i++) {
        c.nparams = sp_template_nparams(t);
        for (int k = 0; k < c.nparams; k++) c.idx[k] = (int)sp_rng_below(&s, (uint64_t)sp_template_param(t, k)->nvalues);
        st = sp_configs_push_new(t, gpu, p, &c, out);
    }
    const int listable = sp_space_raw(t) <= SP_SPACE_LIST_MAX;
    if (st == SPTUNE_OK && out->n < n && !listable) /* rare, and too many to list */
        st = sp_space_draw_subtrees(t, gpu, p, n, seed, out);
    if (st != SPTUNE_OK) {
        sp_configs_free(out);
        return st;
    }
    if (out->n < n && listable) { /* rare, or fewer than n: list them and sample */
        sp_configs_free(out);
        st = sp_space_collect(t, gpu, p, out);
        return st == SPTUNE_OK ? sp_space_sample(out, t, n, seed) : st;
    }
    qsort(out->v, (size_t)out->n, sizeof *out->v, sp_config_cmp);
    return SPTUNE_OK;
}

void sp_configs_free(sp_configs *cs)
{
    free(cs->v);
    memset(cs, 0, sizeof *cs);
}
