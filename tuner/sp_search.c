#include "sp_search.h"
#include "sp_rng.h"
#include "sp_status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct sp_search {
    sp_search_kind kind;
    const sp_configs *space;
    int nparams;
    int nvalues[SP_MAX_PARAMS];
    char choice[SP_MAX_PARAMS]; /* string-valued: a choice of algorithm (mainloop, load, consumer, ...) */
    long long *order;       /* exhaustive/random: the proposal order */
    long long pos;
    /* descent */
    char *proposed;         /* per index */
    char *explored;         /* per index: its neighbourhood was queued */
    double *ms;             /* per index: time, INFINITY failed, NAN not measured */
    long long *table;       /* open-addressing hash: config key -> index + 1 */
    long long table_size;
    long long *queue;       /* neighbours of the configuration being explored, still to propose */
    long long nqueue, queue_cap;
    long long start;        /* the template's default when valid, else a random configuration */
    uint64_t rng;
    int started;
};

int sp_search_parse(const char *name, sp_search_kind *kind)
{
    static const char *names[] = {"exhaustive", "random", "descent"};
    for (int i = 0; i < 3; i++)
        if (strcmp(name, names[i]) == 0) { *kind = (sp_search_kind)i; return 1; }
    return 0;
}

const char *sp_search_name(sp_search_kind kind)
{
    return kind == SP_SEARCH_EXHAUSTIVE ? "exhaustive" : kind == SP_SEARCH_RANDOM ? "random" : "descent";
}

/* Mixed-radix key of a configuration (fits: at most 32 params of few values each is checked). */
static unsigned long long key_of(const sp_search *s, const sp_config *c)
{
    unsigned long long k = 0;
    for (int p = 0; p < s->nparams; p++) k = k * (unsigned long long)s->nvalues[p] + (unsigned long long)c->idx[p];
    return k;
}

static long long lookup(const sp_search *s, unsigned long long key)
{
    for (long long h = (long long)(key * 0x9e3779b97f4a7c15ull % (unsigned long long)s->table_size);;
         h = (h + 1) % s->table_size) {
        long long v = s->table[h];
        if (v == 0) return -1;
        if (key_of(s, &s->space->v[v - 1]) == key) return v - 1;
    }
}

sptune_status sp_search_create(sp_search_kind kind, const sp_template *t, const sp_configs *space,
                               unsigned long long seed, sp_search **out)
{
    sp_search *s = calloc(1, sizeof *s);
    if (!s) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    s->kind = kind;
    s->space = space;
    s->nparams = sp_template_nparams(t);
    s->rng = seed ? seed : 0x2545f4914f6cdd1dull;
    double raw = 1;
    for (int p = 0; p < s->nparams; p++) {
        s->nvalues[p] = sp_template_param(t, p)->nvalues;
        s->choice[p] = sp_template_param(t, p)->values[0].kind == SP_VAL_STR;
        raw *= s->nvalues[p];
    }
    long long n = space->n;
    if (kind != SP_SEARCH_DESCENT) {
        s->order = malloc((size_t)(n ? n : 1) * sizeof *s->order);
        if (!s->order) { free(s); return sp_fail(SPTUNE_ERR_NOMEM, "out of memory"); }
        for (long long i = 0; i < n; i++) s->order[i] = i;
        if (kind == SP_SEARCH_RANDOM)
            for (long long i = n - 1; i > 0; i--) {
                long long j = (long long)sp_rng_below(&s->rng, (uint64_t)(i + 1));
                long long tmp = s->order[i]; s->order[i] = s->order[j]; s->order[j] = tmp;
            }
        *out = s;
        return SPTUNE_OK;
    }
    if (raw > 9e18) { free(s); return sp_fail(SPTUNE_ERR_UNSUPPORTED, "descent: parameter space too large to index"); }
    s->table_size = 2 * n + 1;
    s->proposed = calloc((size_t)(n ? n : 1), 1);
    s->explored = calloc((size_t)(n ? n : 1), 1);
    s->ms = malloc((size_t)(n ? n : 1) * sizeof *s->ms);
    s->table = calloc((size_t)s->table_size, sizeof *s->table);
    s->queue_cap = 64;
    s->queue = malloc((size_t)s->queue_cap * sizeof *s->queue);
    if (!s->proposed || !s->explored || !s->ms || !s->table || !s->queue) {
        sp_search_free(s);
        return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    }
    for (long long i = 0; i < n; i++) {
        s->ms[i] = NAN;
        unsigned long long k = key_of(s, &space->v[i]);
        long long h = (long long)(k * 0x9e3779b97f4a7c15ull % (unsigned long long)s->table_size);
        while (s->table[h]) h = (h + 1) % s->table_size;
        s->table[h] = i + 1;
    }
    sp_config def;
    sp_config_default(t, &def);
    s->start = n > 0 ? lookup(s, key_of(s, &def)) : -1;
    if (s->start < 0 && n > 0) s->start = (long long)sp_rng_below(&s->rng, (uint64_t)n);
    *out = s;
    return SPTUNE_OK;
}

static void queue_push(sp_search *s, long long i)
{
    if (s->nqueue == s->queue_cap) {
        long long *q = realloc(s->queue, (size_t)s->queue_cap * 2 * sizeof *q);
        if (!q) return; /* a neighbour less: the restart still covers it */
        s->queue = q;
        s->queue_cap *= 2;
    }
    s->queue[s->nqueue++] = i;
}

/* The valid configuration nearest to c (fewest parameters changed, at most `limit`) among those
 * with parameter p at value v; -1 if none. Ties go to the first in space order. */
static long long nearest_with(const sp_search *s, const sp_config *c, int p, int v, int limit)
{
    long long best = -1;
    int best_d = limit + 1;
    for (long long i = 0; i < s->space->n; i++) {
        const sp_config *o = &s->space->v[i];
        if (o->idx[p] != v) continue;
        int d = 0;
        for (int q = 0; q < s->nparams && d < best_d; q++) d += o->idx[q] != c->idx[q];
        if (d < best_d) { best_d = d; best = i; }
    }
    return best;
}

/* The unproposed neighbours of `center`, in a seeded random order: each configuration one
 * parameter away, and, where switching a string-valued parameter (a choice of algorithm) alone
 * leaves the space because a constraint ties it to others (wgmma needs bk = 64, mma.sync does
 * best at 32), the nearest valid configuration with the new value (up to 3 more parameters
 * changed): a switch of algorithm is one step. Numeric parameters are not repaired: their
 * neighbourhoods would grow without a new kind of kernel in them. */
static void enqueue_neighbours(sp_search *s, long long center)
{
    sp_config c = s->space->v[center];
    s->nqueue = 0;
    for (int p = 0; p < s->nparams; p++) {
        int orig = c.idx[p];
        for (int v = 0; v < s->nvalues[p]; v++) {
            if (v == orig) continue;
            c.idx[p] = v;
            long long j = lookup(s, key_of(s, &c));
            c.idx[p] = orig;
            if (j < 0 && s->choice[p]) j = nearest_with(s, &c, p, v, 4);
            if (j >= 0 && !s->proposed[j]) queue_push(s, j);
        }
    }
    /* a repaired neighbour may be reached from several parameters: once is enough */
    long long kept = 0;
    for (long long i = 0; i < s->nqueue; i++) {
        int dup = 0;
        for (long long k = 0; k < kept && !dup; k++) dup = s->queue[k] == s->queue[i];
        if (!dup) s->queue[kept++] = s->queue[i];
    }
    s->nqueue = kept;
    for (long long i = s->nqueue - 1; i > 0; i--) {
        long long j = (long long)sp_rng_below(&s->rng, (uint64_t)(i + 1));
        long long tmp = s->queue[i]; s->queue[i] = s->queue[j]; s->queue[j] = tmp;
    }
}

static int propose(sp_search *s, long long i, long long *index)
{
    s->proposed[i] = 1;
    *index = i;
    return 1;
}

static int descent_next(sp_search *s, long long *index)
{
    const sp_configs *sp = s->space;
    if (sp->n == 0) return 0;
    if (!s->started) {
        s->started = 1;
        return propose(s, s->start, index);
    }
    for (;;) {
        while (s->nqueue > 0) {
            long long j = s->queue[--s->nqueue];
            if (!s->proposed[j]) return propose(s, j, index);
        }
        /* Neighbourhood done: move to the best measured configuration whose
         * neighbourhood was not explored yet (best first), else restart at random. */
        long long next = -1;
        for (long long i = 0; i < sp->n; i++) {
            if (s->explored[i] || isnan(s->ms[i]) || isinf(s->ms[i])) continue;
            if (next < 0 || s->ms[i] < s->ms[next]) next = i;
        }
        if (next >= 0) {
            s->explored[next] = 1;
            enqueue_neighbours(s, next);
            continue;
        }
        long long left = 0;
        for (long long i = 0; i < sp->n; i++) left += !s->proposed[i];
        if (left == 0) return 0;
        long long pick = (long long)sp_rng_below(&s->rng, (uint64_t)left);
        for (long long i = 0; i < sp->n; i++)
            if (!s->proposed[i] && pick-- == 0) return propose(s, i, index);
        return 0;
    }
}

void sp_search_start_at(sp_search *s, long long start)
{
    if (s->kind == SP_SEARCH_DESCENT && !s->started && start >= 0 && start < s->space->n) s->start = start;
}

int sp_search_next(sp_search *s, long long *index)
{
    if (s->kind == SP_SEARCH_DESCENT) return descent_next(s, index);
    if (s->pos >= s->space->n) return 0;
    *index = s->order[s->pos++];
    return 1;
}

void sp_search_report(sp_search *s, long long index, int ok, double ms)
{
    if (s->kind != SP_SEARCH_DESCENT || index < 0 || index >= s->space->n) return;
    s->ms[index] = ok && ms >= 0 ? ms : INFINITY;
}

void sp_search_free(sp_search *s)
{
    if (!s) return;
    free(s->order);
    free(s->proposed);
    free(s->explored);
    free(s->ms);
    free(s->table);
    free(s->queue);
    free(s);
}
