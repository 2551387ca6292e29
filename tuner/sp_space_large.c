/* Spaces too large to list (twell-ffn's: 1.8e10 combinations, 3 M valid, minutes to walk on one core): their
 * size estimated and their configurations drawn from random subtrees of the walk, in seconds. */
#include "sp_space.h"
#include "sp_clock.h"
#include "sp_rng.h"
#include "sp_status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SUBTREES 4096   /* the prefix sampled fixes the first parameters whose product reaches this */
#define MIN_SAMPLES 30  /* subtrees an estimate takes at least, whatever the time */

double sp_space_raw(const sp_template *t)
{
    double raw = 1;
    for (int k = 0; k < sp_template_nparams(t); k++) raw *= sp_template_param(t, k)->nvalues;
    return raw;
}

/* The prefix length whose product reaches SUBTREES (fewer when all parameters together do not), and that product. */
static int prefix_len(const sp_template *t, double *prefixes)
{
    int j = 0;
    *prefixes = 1;
    while (j < sp_template_nparams(t) - 1 && *prefixes < SUBTREES) *prefixes *= sp_template_param(t, j++)->nvalues;
    return j;
}

static void random_prefix(const sp_template *t, int j, uint64_t *rng, int *prefix)
{
    for (int k = 0; k < j; k++) prefix[k] = (int)sp_rng_below(rng, (uint64_t)sp_template_param(t, k)->nvalues);
}

sptune_status sp_space_count_valid(sp_template *t, const sp_gpu_profile *gpu, const sp_problem *p, double seconds,
                                   unsigned long long seed, sp_space_count *out)
{
    memset(out, 0, sizeof *out);
    if (sp_space_raw(t) <= SP_SPACE_LIST_MAX) {
        long long n = 0;
        sptune_status st = sp_template_space(t, gpu, p, NULL, NULL, &n);
        out->exact = 1;
        out->count = out->lo = out->hi = (double)n;
        return st;
    }
    /* the mean count of uniformly drawn subtrees times their number: unbiased, its spread from the samples' */
    double prefixes;
    const int j = prefix_len(t, &prefixes);
    int prefix[SP_MAX_PARAMS];
    uint64_t rng = seed ? seed : 0x9e3779b97f4a7c15ull;
    double sum = 0, sum2 = 0;
    const double t0 = sp_now_s();
    while (out->samples < MIN_SAMPLES || sp_now_s() - t0 < seconds) {
        random_prefix(t, j, &rng, prefix);
        long long n = 0;
        sptune_status st = sp_template_subspace(t, gpu, p, prefix, j, NULL, NULL, &n);
        if (st != SPTUNE_OK) return st;
        sum += (double)n;
        sum2 += (double)n * (double)n;
        out->samples++;
    }
    const double k = (double)out->samples, mean = sum / k, var = k > 1 ? fmax(0, (sum2 - k * mean * mean) / (k - 1)) : 0;
    const double half = 1.96 * prefixes * sqrt(var / k);
    out->count = prefixes * mean;
    out->lo = fmax(0, out->count - half);
    out->hi = out->count + half;
    out->subtrees = prefixes;
    return SPTUNE_OK;
}

/* ---- candidates --------------------------------------------------------------------------------- */

typedef struct pick { sp_config c; long long seen; uint64_t *rng; } pick;

/* Reservoir of one: every valid configuration of the subtree equally likely. */
static int pick_cb(const sp_config *c, void *ud)
{
    pick *k = ud;
    if (sp_rng_below(k->rng, (uint64_t)++k->seen) == 0) k->c = *c;
    return 0;
}

/* Every configuration one or two parameters away from s (two: a switch of algorithm that needs another parameter
 * with it), kept when valid. */
static sptune_status neighbours(sp_template *t, const sp_gpu_profile *gpu, const sp_problem *p, const sp_config *s,
                                sp_configs *out)
{
    const int np = sp_template_nparams(t);
    sptune_status st = SPTUNE_OK;
    for (int a = 0; a < np && st == SPTUNE_OK; a++)
        for (int va = 0; va < sp_template_param(t, a)->nvalues && st == SPTUNE_OK; va++) {
            if (va == s->idx[a]) continue;
            sp_config c = *s;
            c.idx[a] = va;
            st = sp_configs_push_valid(t, gpu, p, &c, out);
            for (int b = a + 1; b < np && st == SPTUNE_OK; b++)
                for (int vb = 0; vb < sp_template_param(t, b)->nvalues && st == SPTUNE_OK; vb++) {
                    if (vb == s->idx[b]) continue;
                    sp_config d = c;
                    d.idx[b] = vb;
                    st = sp_configs_push_valid(t, gpu, p, &d, out);
                }
        }
    return st;
}

sptune_status sp_space_draw_subtrees(sp_template *t, const sp_gpu_profile *gpu, const sp_problem *p, long long n,
                                    unsigned long long seed, sp_configs *out)
{
    double prefixes;
    const int j = prefix_len(t, &prefixes);
    uint64_t rng = seed ^ 0x6a09e667f3bcc909ull;
    sptune_status st = SPTUNE_OK;
    for (long long tries = 0; st == SPTUNE_OK && out->n < n && tries < MIN_SAMPLES + 16 * n; tries++) {
        int prefix[SP_MAX_PARAMS];
        random_prefix(t, j, &rng, prefix);
        pick k = {.rng = &rng};
        long long count = 0;
        st = sp_template_subspace(t, gpu, p, prefix, j, pick_cb, &k, &count);
        if (st == SPTUNE_OK && k.seen > 0) st = sp_configs_push_new(t, gpu, p, &k.c, out);
    }
    return st;
}

sptune_status sp_space_candidates(sp_template *t, const sp_gpu_profile *gpu, const sp_problem *p,
                                  const sp_config *seeds, int nseeds, double seconds, unsigned long long seed,
                                  sp_configs *out)
{
    memset(out, 0, sizeof *out);
    sptune_status st = SPTUNE_OK;
    for (int i = 0; i < nseeds && st == SPTUNE_OK; i++)
        if ((st = sp_configs_push_valid(t, gpu, p, &seeds[i], out)) == SPTUNE_OK) st = neighbours(t, gpu, p, &seeds[i], out);
    /* then one valid configuration from each random subtree, for the time given (at least MIN_SAMPLES subtrees) */
    double prefixes;
    const int j = prefix_len(t, &prefixes);
    uint64_t rng = seed ? seed : 0x2545f4914f6cdd1dull;
    const double t0 = sp_now_s();
    for (int tries = 0; st == SPTUNE_OK && (tries < MIN_SAMPLES || sp_now_s() - t0 < seconds); tries++) {
        int prefix[SP_MAX_PARAMS];
        random_prefix(t, j, &rng, prefix);
        pick k = {.rng = &rng};
        long long n = 0;
        st = sp_template_subspace(t, gpu, p, prefix, j, pick_cb, &k, &n);
        if (st == SPTUNE_OK && k.seen > 0 && sp_configs_push(out, &k.c)) st = sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    }
    if (st != SPTUNE_OK) {
        sp_configs_free(out);
        return st;
    }
    /* in space order, each once */
    qsort(out->v, (size_t)out->n, sizeof *out->v, sp_config_cmp);
    long long w = 0;
    for (long long i = 0; i < out->n; i++)
        if (w == 0 || sp_config_cmp(&out->v[w - 1], &out->v[i]) != 0) out->v[w++] = out->v[i];
    out->n = w;
    return SPTUNE_OK;
}
