/* The tuning loop through a simulated measurement backend (no GPU): strategies, budget, resume,
 * and a kill -9 at random points followed by a resume that measures nothing twice. The
 * landscape is a deterministic function of the gemm template's parameters with interactions
 * and a few failing configurations, so the best is known by brute force. */
#include "sp_db.h"
#include "sp_space.h"
#include "sp_status.h"
#include "sp_test.h"
#include "sp_tune.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct sim {
    const sp_template *t;
    long long calls;
    int sleep_us;
    int energy;   /* report joules per call too (a power that grows with the pipeline depth) */
} sim;

static long long param(const sim *s, const sp_config *c, const char *name)
{
    for (int i = 0; i < sp_template_nparams(s->t); i++) {
        const sp_param *p = sp_template_param(s->t, i);
        if (strcmp(p->name, name) == 0) return p->values[c->idx[i]].kind == SP_VAL_INT ? p->values[c->idx[i]].i : c->idx[i];
    }
    return 0;
}

static unsigned long long hash(const sp_config *c)
{
    unsigned long long h = 1469598103934665603ull;
    for (int i = 0; i < c->nparams; i++) h = (h ^ (unsigned long long)c->idx[i]) * 1099511628211ull;
    return h;
}

/* A landscape with the shape of real ones: a preferred tile size, warp tiles that interact
 * with it, pipeline depth with diminishing returns, a 2 % noise floor, some failures. */
static double sim_time(const sim *s, const sp_config *c, int *fails)
{
    double bm = (double)param(s, c, "bm"), bn = (double)param(s, c, "bn"), wm = (double)param(s, c, "wm");
    double wn = (double)param(s, c, "wn"), st = (double)param(s, c, "stages"), bk = (double)param(s, c, "bk");
    double t = 1.0;
    t *= 1 + 0.3 * fabs(log2(bm / 128)) + 0.25 * fabs(log2(bn / 128));
    t *= 1 + 0.2 * fabs(log2((wm * wn) / 4096.0)) + (bm / wm * bn / wn > 4 ? 0.1 : 0);
    t *= 1 + 0.3 / st + (bk == 64 ? 0.05 : 0);
    t *= 1 + 0.02 * (double)(hash(c) % 1000) / 1000.0;
    *fails = hash(c) % 41 == 0;
    return t;
}

/* Deeper pipelines draw more power: the least energy is not the least time. */
static double sim_joules(const sim *s, const sp_config *c, double ms)
{
    return ms * (0.5 + 0.1 * (double)param(s, c, "stages")) * 1e-3;
}

static sptune_status sim_eval(void *ud, const sp_config *c, sp_eval *e)
{
    sim *s = ud;
    int fails;
    memset(e, 0, sizeof *e);
    s->calls++;
    if (s->sleep_us) usleep((useconds_t)s->sleep_us);
    double ms = sim_time(s, c, &fails);
    e->timing.baseline_ms = -1;
    e->timing.rel_error = 1e-3;
    if (fails) {
        e->outcome = SP_OUTCOME_WRONG_RESULT;
        snprintf(e->detail, sizeof e->detail, "simulated wrong result");
        return SPTUNE_OK;
    }
    e->outcome = SP_OUTCOME_OK;
    e->timing.runs = 10;
    e->timing.median_ms = e->timing.min_ms = e->timing.max_ms = e->timing.p10_ms = e->timing.p90_ms = ms;
    e->timing.method = "simulated";
    if (s->energy) e->timing.energy_j = sim_joules(s, c, ms);
    e->res.registers = 128;
    return SPTUNE_OK;
}

typedef struct progress_log { long long calls, bad; double last_eta; int by_budget; } progress_log;

static void on_progress(const sp_tune_progress *pr, void *ud)
{
    progress_log *l = ud;
    l->calls++;
    /* done counts up one at a time, never past the space; the ETA is never negative */
    if (pr->done != l->calls || pr->done > pr->total || !(pr->eta_s >= 0) || pr->measured + pr->resumed != pr->done)
        l->bad++;
    l->last_eta = pr->eta_s;
    l->by_budget = pr->eta_by_budget;
}

static sp_env env = {"Simulated GPU", "h100", 9, 0, 132, "13.0", "13.0", "0.1.0"};

static void test_budget_parse(void)
{
    sp_tune_budget b;
    CHECK(sp_budget_parse("15m", &b) && b.seconds == 900 && b.evals == 0);
    CHECK(sp_budget_parse("90s", &b) && b.seconds == 90);
    CHECK(sp_budget_parse("2h", &b) && b.seconds == 7200);
    CHECK(sp_budget_parse("300evals", &b) && b.evals == 300 && b.seconds == 0);
    CHECK(sp_budget_parse("none", &b) && b.evals == 0 && b.seconds == 0);
    CHECK(!sp_budget_parse("15", &b));
    CHECK(!sp_budget_parse("-3m", &b));
    CHECK(!sp_budget_parse("2.5evals", &b));
    CHECK(!sp_budget_parse("10 parsecs", &b));
}

/* --objective energy and edp: the search ranks by them (brute force knows the answer), and a resumed
 * result recorded without energy is measured again rather than taken as failed. */
static void test_objectives(sp_template *t, const sp_problem *p, const sp_configs *space, const char *dir)
{
    sim s = {t, 0, 0, 1};
    double best[3] = {INFINITY, INFINITY, INFINITY};
    long long nfail = 0;
    for (long long i = 0; i < space->n; i++) {
        int fails;
        double ms = sim_time(&s, &space->v[i], &fails), j = sim_joules(&s, &space->v[i], ms);
        nfail += fails;
        for (int k = 0; k < 3 && !fails; k++) {
            double v = sp_objective_score((sp_objective)k, ms, j);
            if (v < best[k]) best[k] = v;
        }
    }
    CHECK(best[1] < INFINITY && sp_objective_score(SP_OBJECTIVE_ENERGY, 1.0, 0) == INFINITY);
    sp_tune_backend be = {&s, sim_eval};
    sp_tune_opts o;
    sp_tune_result r;
    for (int k = 0; k < 3; k++) {
        sp_tune_opts_default(&o);
        o.strategy = SP_SEARCH_EXHAUSTIVE;
        o.objective = (sp_objective)k;
        CHECK_ST(sp_tune_run(t, p, space, &be, &o, &r), SPTUNE_OK);
        CHECK_MSG(r.best_score == best[k] && r.best_energy_j > 0, "objective %s: %g, want %g",
                  sp_objective_name((sp_objective)k), r.best_score, best[k]);
    }
    sp_objective ob;
    CHECK(sp_objective_parse("edp", &ob) && ob == SP_OBJECTIVE_EDP && !sp_objective_parse("power", &ob));
    /* recorded by a run that measured no energy, then resumed for energy */
    char path[1200];
    snprintf(path, sizeof path, "%s/objective.db", dir);
    remove(path);
    sp_db *db = NULL;
    CHECK_ST(sp_db_open(path, 1, &db), SPTUNE_OK);
    if (!db) return;
    s.energy = 0;
    sp_tune_opts_default(&o);
    o.strategy = SP_SEARCH_EXHAUSTIVE;
    o.db = db;
    o.env = &env;
    CHECK_ST(sp_tune_run(t, p, space, &be, &o, &r), SPTUNE_OK);
    s.energy = 1;
    o.objective = SP_OBJECTIVE_ENERGY;
    CHECK_ST(sp_tune_run(t, p, space, &be, &o, &r), SPTUNE_OK);
    CHECK_MSG(r.measured == space->n - nfail && r.resumed == nfail && r.best_score == best[1],
              "resumed for energy: %lld measured, %lld resumed, best %g", r.measured, r.resumed, r.best_score);
    /* and a third run takes everything from the database */
    CHECK_ST(sp_tune_run(t, p, space, &be, &o, &r), SPTUNE_OK);
    CHECK(r.measured == 0 && r.resumed == space->n && r.best_score == best[1]);
    sp_db_close(db);
}

int main(void)
{
    sp_template *t = NULL;
    sp_gpu_profile gpu;
    sp_problem p;
    sp_configs space;
    CHECK_ST(sp_template_load("gemm", &t), SPTUNE_OK);
    CHECK_ST(sp_gpu_profile_named("h100", &gpu), SPTUNE_OK);
    if (!t) return sp_test_done("test_tune");
    CHECK_ST(sp_problem_parse(t, "M=4096,N=4096,K=4096", &p), SPTUNE_OK);
    CHECK_ST(sp_space_collect(t, &gpu, &p, &space), SPTUNE_OK);
    test_budget_parse();

    /* Brute force. */
    double best = INFINITY;
    long long nfail = 0;
    sim s = {t, 0, 0, 0};
    for (long long i = 0; i < space.n; i++) {
        int fails;
        double ms = sim_time(&s, &space.v[i], &fails);
        nfail += fails;
        if (!fails && ms < best) best = ms;
    }
    sp_tune_backend be = {&s, sim_eval};
    sp_tune_opts o;
    sp_tune_result r;

    /* Exhaustive and random: everything once, the true best. */
    for (int k = 0; k < 2; k++) {
        sp_tune_opts_default(&o);
        o.strategy = k ? SP_SEARCH_RANDOM : SP_SEARCH_EXHAUSTIVE;
        s.calls = 0;
        CHECK_ST(sp_tune_run(t, &p, &space, &be, &o, &r), SPTUNE_OK);
        CHECK_EQ(r.measured, space.n);
        CHECK_EQ(s.calls, space.n);
        CHECK_EQ(r.failed[SP_OUTCOME_WRONG_RESULT], nfail);
        CHECK_MSG(r.best_ms == best, "best %g ms, want %g", r.best_ms, best); /* the same double: no tolerance */
        CHECK(!r.stopped_by_budget);
        CHECK(r.ntop == SP_TUNE_TOP && r.top_ms[0] == best && r.top_ms[0] <= r.top_ms[1] && r.top_ms[1] <= r.top_ms[2]);
    }

    /* Descent: within 3 % of the best with a quarter of the evaluations, for several seeds. */
    for (unsigned long long seed = 1; seed <= 5; seed++) {
        sp_tune_opts_default(&o);
        o.strategy = SP_SEARCH_DESCENT;
        o.seed = seed;
        o.budget.evals = space.n / 4;
        s.calls = 0;
        CHECK_ST(sp_tune_run(t, &p, &space, &be, &o, &r), SPTUNE_OK);
        CHECK(r.measured == space.n / 4 && r.stopped_by_budget);
        CHECK_MSG(r.best_ms <= best * 1.03, "seed %llu: descent best %.4f vs %.4f after %lld of %lld", seed,
                  r.best_ms, best, r.measured, space.n);
        printf("  descent seed %llu: %.4f vs best %.4f (+%.2f %%) with %lld of %lld evaluations\n", seed, r.best_ms,
               best, 100 * (r.best_ms / best - 1), r.measured, space.n);
    }
    /* Starting from the served configuration (the best one here): with a budget of one evaluation, every
     * strategy measures it, so the result is never worse than what was served; an exhaustive run
     * measures every configuration once (the served one is not measured again when proposed). */
    long long best_index = -1;
    for (long long i = 0; i < space.n && best_index < 0; i++) {
        int fails;
        if (sim_time(&s, &space.v[i], &fails) == best && !fails) best_index = i;
    }
    for (int k = 0; k < 3; k++) {
        sp_tune_opts_default(&o);
        o.strategy = k == 0 ? SP_SEARCH_EXHAUSTIVE : k == 1 ? SP_SEARCH_RANDOM : SP_SEARCH_DESCENT;
        o.first = best_index;
        o.budget.evals = 1;
        CHECK_ST(sp_tune_run(t, &p, &space, &be, &o, &r), SPTUNE_OK);
        CHECK_MSG(r.measured == 1 && r.best_index == best_index && r.best_ms == best, "strategy %d: %lld, %.4f", k,
                  r.best_index, r.best_ms);
    }
    sp_tune_opts_default(&o);
    o.strategy = SP_SEARCH_EXHAUSTIVE;
    o.first = best_index;
    CHECK_ST(sp_tune_run(t, &p, &space, &be, &o, &r), SPTUNE_OK);
    CHECK(r.measured == space.n && r.best_ms == best && r.top[0] == best_index && r.top[1] != best_index);

    /* Descent without a budget still proposes everything exactly once; progress comes after each
     * proposal and its ETA reaches zero at the end of the space. */
    sp_tune_opts_default(&o);
    s.calls = 0;
    progress_log pl = {0, 0, -1, 0};
    o.progress = on_progress;
    o.progress_ud = &pl;
    CHECK_ST(sp_tune_run(t, &p, &space, &be, &o, &r), SPTUNE_OK);
    CHECK(r.measured == space.n && s.calls == space.n && r.best_ms == best);
    CHECK(pl.calls == space.n && pl.bad == 0 && pl.last_eta == 0 && !pl.by_budget);
    /* With a budget of evaluations, the ETA is the budget's. */
    sp_tune_opts_default(&o);
    o.budget.evals = 10;
    pl = (progress_log){0, 0, -1, 0};
    o.progress = on_progress;
    o.progress_ud = &pl;
    CHECK_ST(sp_tune_run(t, &p, &space, &be, &o, &r), SPTUNE_OK);
    CHECK(r.measured == 10 && pl.calls == 10 && pl.bad == 0 && pl.by_budget && pl.last_eta == 0);

    /* Budget and resume through the database. */
    const char *dir = sp_test_tmpdir("test_tune");
    char path[1200];
    snprintf(path, sizeof path, "%s/tune.db", dir);
    sp_db *db = NULL;
    CHECK_ST(sp_db_open(path, 1, &db), SPTUNE_OK);
    sp_tune_opts_default(&o);
    o.db = db;
    o.env = &env;
    o.budget.evals = 20;
    s.calls = 0;
    CHECK_ST(sp_tune_run(t, &p, &space, &be, &o, &r), SPTUNE_OK);
    CHECK(r.measured == 20 && r.resumed == 0 && r.stopped_by_budget);
    long long rows = 0;
    CHECK_ST(sp_db_count(db, &rows), SPTUNE_OK);
    CHECK_EQ(rows, 20);
    s.calls = 0;
    CHECK_ST(sp_tune_run(t, &p, &space, &be, &o, &r), SPTUNE_OK);
    CHECK_MSG(r.resumed == 20 && r.measured == 20 && s.calls == 20, "resumed %lld measured %lld calls %lld",
              r.resumed, r.measured, s.calls);
    CHECK_ST(sp_db_count(db, &rows), SPTUNE_OK);
    CHECK_EQ(rows, 40);
    sp_db_close(db);

    /* kill -9 at random points, then resume: every configuration recorded once, none measured
     * twice (the calls of all runs add up to the space). */
    srand((unsigned)time(NULL));
    snprintf(path, sizeof path, "%s/killed.db", dir);
    long long before = 0;
    for (int round = 0; round < 3; round++) {
        pid_t pid = fork();
        if (pid == 0) {
            sp_db *cdb = NULL;
            if (sp_db_open(path, 1, &cdb) != SPTUNE_OK) _exit(2);
            sim cs = {t, 0, 300, 0};
            sp_tune_backend cbe = {&cs, sim_eval};
            sp_tune_opts co;
            sp_tune_opts_default(&co);
            co.strategy = SP_SEARCH_EXHAUSTIVE;
            co.db = cdb;
            co.env = &env;
            sp_tune_result cr;
            sp_tune_run(t, &p, &space, &cbe, &co, &cr);
            _exit(0);
        }
        usleep((useconds_t)(30000 + rand() % 120000));
        kill(pid, SIGKILL);
        int wst;
        waitpid(pid, &wst, 0);
        CHECK_ST(sp_db_open(path, 1, &db), SPTUNE_OK);
        long long now = 0;
        CHECK_ST(sp_db_count(db, &now), SPTUNE_OK);
        sp_db_close(db);
        CHECK_MSG(now >= before, "round %d: %lld rows after the kill, %lld before", round, now, before);
        printf("  kill -9 round %d: %lld of %lld recorded\n", round, now, space.n);
        before = now;
    }
    CHECK_ST(sp_db_open(path, 1, &db), SPTUNE_OK);
    sp_tune_opts_default(&o);
    o.strategy = SP_SEARCH_EXHAUSTIVE;
    o.db = db;
    o.env = &env;
    s.calls = 0;
    s.sleep_us = 0;
    CHECK_ST(sp_tune_run(t, &p, &space, &be, &o, &r), SPTUNE_OK);
    CHECK_MSG(s.calls == space.n - before, "resume measured %lld, expected %lld", s.calls, space.n - before);
    CHECK(r.resumed == before && r.best_ms == best);
    CHECK_ST(sp_db_count(db, &rows), SPTUNE_OK);
    CHECK_EQ(rows, space.n);
    sp_db_close(db);

    test_objectives(t, &p, &space, dir);
    sp_configs_free(&space);
    sp_template_free(t);
    return sp_test_done("test_tune");
}
