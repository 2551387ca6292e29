/* Search quality on real measurements: the strategies replayed over an exhaustive run of the gemm
 * space on an H200 (bench/data/gemm-4096-h200.tsv, every valid configuration timed). Each
 * strategy gets 25 % of the exhaustive evaluations and must end within 3 % of the exhaustive
 * best. Descent is also started from random configurations, not only from the template's default
 * (which happens to be near the best here): that is what a new GPU or shape looks like. */
#include "sp_search.h"
#include "sp_space.h"
#include "sp_status.h"
#include "sp_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct landscape {
    const sp_configs *space;
    double *ms; /* per index: recorded median, INFINITY failed, NAN missing */
} landscape;

static int load(const char *path, sp_template *t, const sp_configs *space, landscape *L)
{
    FILE *f = fopen(path, "r");
    L->space = space;
    L->ms = malloc((size_t)(space->n > 0 ? space->n : 1) * sizeof *L->ms);
    if (!f || !L->ms) { if (f) fclose(f); return 0; }
    for (long long i = 0; i < space->n; i++) L->ms[i] = NAN;
    char line[1024];
    int rows = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        char *cfg = strtok(line, "\t"), *outcome = strtok(NULL, "\t"), *ms = strtok(NULL, "\t\n");
        if (!cfg || !outcome || !ms) continue;
        sp_config c;
        if (sp_config_parse(t, cfg, &c) != SPTUNE_OK) continue;
        for (long long i = 0; i < space->n; i++)
            if (memcmp(space->v[i].idx, c.idx, sizeof c.idx[0] * (size_t)c.nparams) == 0) {
                L->ms[i] = strcmp(outcome, "ok") == 0 ? atof(ms) : INFINITY;
                rows++;
                break;
            }
    }
    fclose(f);
    return rows;
}

/* Best time found by strategy kind (descent from `start`, -1: the default) within `evals`. */
static double replay(const landscape *L, const sp_template *t, sp_search_kind kind, unsigned long long seed,
                     long long start, long long evals, double target, long long *reached)
{
    *reached = evals + 1;
    sp_search *s;
    if (sp_search_create(kind, t, L->space, seed, &s) != SPTUNE_OK) return INFINITY;
    if (start >= 0) sp_search_start_at(s, start);
    double best = INFINITY;
    long long i;
    for (long long k = 0; k < evals && sp_search_next(s, &i); k++) {
        double ms = L->ms[i];
        int ok = isfinite(ms);
        if (ok && ms < best) best = ms;
        if (best <= target && *reached > evals) *reached = k + 1;
        sp_search_report(s, i, ok, ok ? ms : 0);
    }
    sp_search_free(s);
    return best;
}

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

/* Hamming distance between two configurations. */
static int distance(const sp_config *a, const sp_config *b)
{
    int d = 0;
    for (int p = 0; p < a->nparams; p++) d += a->idx[p] != b->idx[p];
    return d;
}

/* Switching algorithms: on twell-d2t's H200 space, a landscape shaped like the measurements of
 * docs/journal (the wgmma + TMA persistent producer 0.57 ms, the mma.sync loop 1.26-1.38 ms:
 * each a bowl around its best, 1 % per parameter away). The default is mma.sync with bk = 32 and
 * wgmma needs bk = 64, so no single-parameter move leads from it to any wgmma kernel: descent must
 * still get within 3 % of the best with 5 % of the space. */
static void algorithm_switch(void)
{
    sp_template *t = NULL;
    sp_gpu_profile gpu;
    sp_configs space;
    CHECK_ST(sp_template_load("twell-d2t", &t), SPTUNE_OK);
    CHECK_ST(sp_gpu_profile_named("h200", &gpu), SPTUNE_OK);
    if (!t) return;
    CHECK_ST(sp_space_collect(t, &gpu, NULL, &space), SPTUNE_OK);
    sp_config mma_best, wg_best;
    CHECK_ST(sp_config_parse(t, "mainloop=mma,bm=128,bn=128,bk=32,stages=3,prefetch=none,slots=7", &mma_best), SPTUNE_OK);
    CHECK_ST(sp_config_parse(t, "mainloop=wgmma,bm=128,bn=256,bk=64,stages=3,wgs=2,load=tma,epi=overlap,slots=15", &wg_best),
             SPTUNE_OK);
    landscape L = {&space, malloc((size_t)space.n * sizeof(double))};
    int wg_param = 0;
    while (strcmp(sp_template_param(t, wg_param)->name, "mainloop") != 0) wg_param++;
    for (long long i = 0; L.ms && i < space.n; i++) {
        int wg = strcmp(sp_template_param(t, wg_param)->values[space.v[i].idx[wg_param]].text, "wgmma") == 0;
        L.ms[i] = wg ? 0.566 * (1 + 0.01 * distance(&space.v[i], &wg_best))
                     : 1.26 * (1 + 0.01 * distance(&space.v[i], &mma_best));
    }
    long long evals = space.n / 20, need[20];
    int within = 0;
    for (unsigned long long seed = 1; L.ms && seed <= 20; seed++)
        within += replay(&L, t, SP_SEARCH_DESCENT, seed, -1, evals, 0.566 * 1.03, &need[seed - 1]) <= 0.566 * 1.03;
    qsort(need, 20, sizeof need[0], cmp_ll);
    printf("  twell-d2t, %lld configurations: descent from the (mma.sync) default within 3 %% of the wgmma best in "
           "%d of 20 seeds; evaluations: median %lld of %lld allowed\n", space.n, within, need[10], evals);
    CHECK_MSG(within == 20, "descent across main loops: %d of 20", within);
    free(L.ms);
    sp_configs_free(&space);
    sp_template_free(t);
}

int main(void)
{
    algorithm_switch();
    const char *path = getenv("SPTUNE_SEARCH_DATA");
    sp_template *t = NULL;
    sp_gpu_profile gpu;
    sp_configs space;
    CHECK(path != NULL);
    CHECK_ST(sp_template_load("gemm", &t), SPTUNE_OK);
    CHECK_ST(sp_gpu_profile_named("h200", &gpu), SPTUNE_OK);
    if (!t || !path) return sp_test_done("test_search_replay");
    CHECK_ST(sp_space_collect(t, &gpu, NULL, &space), SPTUNE_OK);
    /* the data was measured on the mma.sync loop's space, before gemm had the wgmma one: that part */
    long long kept = 0;
    for (long long i = 0; i < space.n; i++)
        if (strcmp(sp_config_text(t, &space.v[i], "mainloop"), "mma") == 0) space.v[kept++] = space.v[i];
    space.n = kept;
    landscape L = {&space, NULL};
    int rows = load(path, t, &space, &L);
    /* The data must cover that space as the template has it now; a template change that makes it
     * stale is caught here (measure again: db/data/README.md says how). */
    CHECK_MSG(rows == space.n, "%d recorded rows for %lld configurations in %s", rows, space.n, path);
    double best = INFINITY;
    long long near = 0;
    for (long long i = 0; i < space.n; i++) if (L.ms[i] < best) best = L.ms[i];
    for (long long i = 0; i < space.n; i++) near += L.ms[i] <= best * 1.03;
    long long evals = space.n / 4;
    printf("  %lld configurations, best %.4f ms, %lld within 3 %%; budget %lld evaluations (25 %%)\n", space.n, best,
           near, evals);

    enum { SEEDS = 100 };
    const struct { const char *name; sp_search_kind kind; int random_start; } runs[] = {
        {"descent from the default", SP_SEARCH_DESCENT, 0},
        {"descent from random starts", SP_SEARCH_DESCENT, 1},
        {"random", SP_SEARCH_RANDOM, 0},
    };
    int within[3] = {0, 0, 0};
    for (int r = 0; r < 3; r++) {
        double worst = 0;
        long long need[SEEDS];
        for (unsigned long long seed = 1; seed <= SEEDS; seed++) {
            long long start = runs[r].random_start ? (long long)((seed * 0x9e3779b97f4a7c15ull >> 11) % (unsigned long long)space.n) : -1;
            double got = replay(&L, t, runs[r].kind, seed, start, evals, best * 1.03, &need[seed - 1]);
            within[r] += got <= best * 1.03;
            if (got / best > worst) worst = got / best;
        }
        qsort(need, SEEDS, sizeof need[0], cmp_ll);
        printf("  %-28s within 3 %% in %3d of %d seeds; worst %.3fx the best; evaluations to get there: "
               "median %lld, 90th percentile %lld\n", runs[r].name, within[r], SEEDS, worst, need[SEEDS / 2],
               need[SEEDS * 9 / 10]);
    }
    /* The claim of docs/journal: descent reaches 3 % with a quarter of the evaluations,
     * whatever it starts from; random sampling does not, on this needle-shaped landscape. */
    CHECK_MSG(within[0] == SEEDS, "descent from the default: %d of %d", within[0], SEEDS);
    CHECK_MSG(within[1] >= SEEDS * 95 / 100, "descent from random starts: %d of %d", within[1], SEEDS);
    free(L.ms);
    sp_configs_free(&space);
    sp_template_free(t);
    return sp_test_done("test_search_replay");
}
