#include "sp_space.h"
#include "sp_rng.h"
#include "sp_status.h"

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

void sp_configs_free(sp_configs *cs)
{
    free(cs->v);
    memset(cs, 0, sizeof *cs);
}
