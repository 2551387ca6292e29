/* The configuration of the best worst case over the kinds of data one problem was measured on (sp_api_across.h). */
#include "sp_api_across.h"
#include "sp_status.h"
#include "sp_str.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KINDS 8   /* kinds of data of one problem considered (the generators: 2 today) */
#define NEAR 0.03 /* worst cases this close (relative) count as equal */

typedef struct entry {
    double v[SP_MAX_DIMS];
    int predates, other_version;
    char gpu[32];
    char *key, *config;
    double ms, base;
} entry;

struct sp_across {
    const sp_template *t;
    int n_dims;
    int own_dim;          /* the dimension whose value own marks the caller's own tensors (ranges' own), -1 none */
    double own;
    entry *e;
    size_t n, cap;
};

sptune_status sp_across_new(const sp_template *t, sp_across **out)
{
    *out = NULL;
    int any = 0;
    for (int d = 0; d < sp_template_ndims(t); d++) any |= sp_template_dim_across(t, d);
    if (!any) return SPTUNE_OK;
    sp_across *a = calloc(1, sizeof *a);
    if (!a) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    a->t = t;
    a->n_dims = sp_template_ndims(t);
    a->own_dim = sp_template_own_dim(t, &a->own);
    *out = a;
    return SPTUNE_OK;
}

void sp_across_free(sp_across *a)
{
    if (!a) return;
    for (size_t i = 0; i < a->n; i++) { free(a->e[i].key); free(a->e[i].config); }
    free(a->e);
    free(a);
}

int sp_api_key_predates(const sp_template *t, const char *key)
{
    for (int d = 0; d < sp_template_ndims(t); d++) {
        size_t n;
        const char *name = sp_template_dim(t, d);
        if (!sp_template_dim_as_before(t, d) && !sp_kv_find(key, name, strlen(name), &n)) return 1;
    }
    return 0;
}

int sp_api_kinds_alike(const sp_template *t, int i, double x, double y)
{
    double own;
    return x == y || (sp_template_dim_own(t, i, &own) && (x == own || y == own));
}

sptune_status sp_across_add(sp_across *a, const sp_problem *p, const char *key, const char *gpu, int other_version,
                            const char *config, double median_ms, double baseline_ms)
{
    /* results measured on the caller's own tensors are compared by time alone, among themselves */
    const int mine = a->own_dim >= 0 && p->n == a->n_dims && p->v[a->own_dim] == a->own;
    if (!(median_ms > 0) || (!(baseline_ms > 0) && !mine) || p->n != a->n_dims) return SPTUNE_OK;
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 64;
        entry *m = realloc(a->e, cap * sizeof *m);
        if (!m) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
        a->e = m;
        a->cap = cap;
    }
    entry *e = &a->e[a->n];
    memset(e, 0, sizeof *e);
    memcpy(e->v, p->v, sizeof e->v);
    e->predates = sp_api_key_predates(a->t, key);
    e->other_version = other_version;
    snprintf(e->gpu, sizeof e->gpu, "%s", gpu);
    e->ms = median_ms;
    e->base = baseline_ms;
    e->key = strdup(key);
    /* one configuration, one text: a result recorded before a parameter was added (the text without it) and one
     * recorded after (naming its default) are the same kernel, tallied together below */
    sp_config c;
    if (sp_config_parse(a->t, config, &c) == SPTUNE_OK) {
        e->config = sp_config_format(a->t, &c);
    } else {   /* a parameter this version does not know: kept as it is (and its parse's message dropped) */
        e->config = strdup(config);
        sp_clear_error();
    }
    if (!e->key || !e->config) {
        free(e->key);
        free(e->config);
        return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    }
    a->n++;
    return SPTUNE_OK;
}

/* Whether two problems are one problem (every dimension but the across ones equal) / the same kind of data. */
static int same_problem(const sp_across *a, const double *x, const double *y)
{
    for (int d = 0; d < a->n_dims; d++)
        if (!sp_template_dim_across(a->t, d) && x[d] != y[d]) return 0;
    return 1;
}

static int same_data(const sp_across *a, const double *x, const double *y)
{
    for (int d = 0; d < a->n_dims; d++)
        if (sp_template_dim_across(a->t, d) && x[d] != y[d]) return 0;
    return 1;
}

/* A configuration's best result on each kind of data (-1: not measured there). */
typedef struct tally {
    const char *config;
    long best[KINDS];   /* entry index */
} tally;

/* A configuration's worst and mean speed-up over the kinds of data (0 when it was not measured on all), and the entry
 * of its worst. */
static int score(const sp_across *a, const tally *t, int kinds, double *worst, double *mean, long *at)
{
    double sum = 0;
    *worst = 0;
    for (int k = 0; k < kinds; k++) {
        const long b = t->best[k];
        if (b < 0) return 0;
        const double s = a->e[b].base / a->e[b].ms;
        sum += s;
        if (k == 0 || s < *worst) {
            *worst = s;
            if (at) *at = b;
        }
    }
    *mean = sum / kinds;
    return 1;
}

/* A kind of data named by its across dimensions ("gen=1,spread=0.1") at note + len; the new length. */
static size_t kind_name(const sp_across *a, const double *v, char *note, size_t len, size_t cap)
{
    for (int d = 0, first = 1; d < a->n_dims && len < cap; d++)
        if (sp_template_dim_across(a->t, d)) {
            len += (size_t)snprintf(note + len, cap - len, "%s%s=%g", first ? "" : ",", sp_template_dim(a->t, d), v[d]);
            first = 0;
        }
    return len;
}

/* "gen=0,spread=0.5: 1.80x; gen=1,spread=0.5: 1.05x": each kind's speed-up. */
static void describe(const sp_across *a, const tally *t, int kinds, char *note, size_t cap)
{
    size_t len = 0;
    note[0] = 0;
    for (int k = 0; k < kinds && len < cap; k++) {
        const entry *x = &a->e[t->best[k]];
        if (k) len += (size_t)snprintf(note + len, cap - len, "; ");
        len = kind_name(a, x->v, note, len, cap);
        if (len < cap) len += (size_t)snprintf(note + len, cap - len, ": %.2fx", x->base / x->ms);
    }
}

int sp_across_choose(const sp_across *a, const sp_problem *p, const char *key, const char *gpu, int other_version,
                     sp_across_pick *out)
{
    if (!a || p->n != a->n_dims) return 0;
    const int predates = sp_api_key_predates(a->t, key);
    long own_best = -1;   /* the fastest result on the caller's own tensors */
    long kind_of[KINDS];  /* an entry of each kind of data */
    int kinds = 0;
    size_t ntally = 0;
    tally *t = NULL;
    int ok = 1;
    for (size_t i = 0; ok && i < a->n; i++) {
        const entry *e = &a->e[i];
        if (e->predates != predates || e->other_version != other_version || strcmp(e->gpu, gpu) != 0 ||
            !same_problem(a, e->v, p->v))
            continue;
        /* the caller's own tensors, no generator's: out of the worst case, and served where present */
        if (a->own_dim >= 0 && e->v[a->own_dim] == a->own) {
            if (own_best < 0 || e->ms < a->e[own_best].ms) own_best = (long)i;
            continue;
        }
        int k = 0;
        while (k < kinds && !same_data(a, a->e[kind_of[k]].v, e->v)) k++;
        if (k == kinds) {
            if (kinds == KINDS) continue;
            kind_of[kinds++] = (long)i;
        }
        size_t c = 0;
        while (c < ntally && strcmp(t[c].config, e->config) != 0) c++;
        if (c == ntally) {
            tally *m = realloc(t, (ntally + 1) * sizeof *t);
            if (!m) { ok = 0; break; }   /* out of memory: no pick, the fastest on the problem's own data stands */
            t = m;
            t[c].config = e->config;
            for (int j = 0; j < KINDS; j++) t[c].best[j] = -1;
            ntally++;
        }
        /* measured more than once on that data (the user's database and the shipped results): the faster */
        const long b = t[c].best[k];
        if (b < 0 || e->base / e->ms > a->e[b].base / a->e[b].ms) t[c].best[k] = (long)i;
    }
    out->kinds = kinds;
    out->own = 0;
    out->note[0] = 0;
    if (own_best >= 0) {   /* timed on the application's own tensors: that, not the generators' worst case */
        const entry *x = &a->e[own_best];
        out->config = x->config;
        out->median_ms = x->ms;
        out->baseline_ms = x->base;
        out->worst_key = x->key;
        out->kinds = kinds + 1;
        out->own = 1;
        size_t len = (size_t)snprintf(out->note, sizeof out->note, "measured on the application's own tensors (");
        len = kind_name(a, x->v, out->note, len, sizeof out->note);
        if (len < sizeof out->note && x->base > 0)
            snprintf(out->note + len, sizeof out->note - len, "): %.2fx the dense layer timed with it", x->base / x->ms);
        else if (len < sizeof out->note)
            snprintf(out->note + len, sizeof out->note - len, ")");
        free(t);
        return 1;
    }
    if (kinds == 1) kind_name(a, a->e[kind_of[0]].v, out->note, 0, sizeof out->note);
    /* the best worst speed-up, then, among the configurations within NEAR of it (a measurement's noise), the best
     * mean: two near-equal worst cases are not told apart by the noise of one run */
    double best_worst = 0;
    for (size_t c = 0; ok && kinds >= 2 && c < ntally; c++) {
        double worst, mean;
        if (score(a, &t[c], kinds, &worst, &mean, NULL) && worst > best_worst) best_worst = worst;
    }
    int found = 0;
    double best_mean = 0;
    for (size_t c = 0; ok && kinds >= 2 && best_worst > 0 && c < ntally; c++) {
        double worst, mean;
        long at;
        if (!score(a, &t[c], kinds, &worst, &mean, &at) || worst < best_worst * (1 - NEAR) || (found && mean <= best_mean))
            continue;
        found = 1;
        best_mean = mean;
        out->config = t[c].config;
        out->median_ms = a->e[at].ms;
        out->baseline_ms = a->e[at].base;
        out->worst_key = a->e[at].key;
        out->kinds = kinds;
        describe(a, &t[c], kinds, out->note, sizeof out->note);
    }
    free(t);
    return found;
}
