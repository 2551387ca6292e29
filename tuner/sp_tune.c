#include "sp_tune.h"
#include "sp_clock.h"
#include "sp_status.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int sp_budget_parse(const char *text, sp_tune_budget *b)
{
    memset(b, 0, sizeof *b);
    if (!text || !*text || strcmp(text, "none") == 0) return 1;
    char *end;
    double v = strtod(text, &end);
    if (end == text || !(v > 0) || !isfinite(v)) return 0;
    if (strcmp(end, "s") == 0) b->seconds = v;
    else if (strcmp(end, "m") == 0 || strcmp(end, "min") == 0) b->seconds = v * 60;
    else if (strcmp(end, "h") == 0) b->seconds = v * 3600;
    else if ((strcmp(end, "evals") == 0 || strcmp(end, "e") == 0) && v == floor(v) && v < 1e15) b->evals = (long long)v;
    else return 0;
    return 1;
}

void sp_tune_opts_default(sp_tune_opts *o)
{
    memset(o, 0, sizeof *o);
    o->strategy = SP_SEARCH_DESCENT;
    o->seed = 1;
    o->first = -1;
    o->resume = 1;
    o->baseline_ms = -1;
}

static const char *const objective_names[] = {"time", "energy", "edp"};   /* in sp_objective's order */

int sp_objective_parse(const char *text, sp_objective *out)
{
    for (int i = 0; i < 3; i++)
        if (text && strcmp(text, objective_names[i]) == 0) { *out = (sp_objective)i; return 1; }
    return 0;
}

const char *sp_objective_name(sp_objective o)
{
    return (unsigned)o < 3 ? objective_names[o] : "time";
}

double sp_objective_score(sp_objective o, double ms, double energy_j)
{
    if (o == SP_OBJECTIVE_TIME) return ms;
    if (!(energy_j > 0) || !isfinite(ms)) return INFINITY;
    return o == SP_OBJECTIVE_ENERGY ? energy_j : energy_j * ms;
}

sptune_status sp_tune_record(sp_db *db, const sp_env *env, sp_template *t, const char *problem_key,
                             const char *config, const sp_eval *e, double baseline_ms, const char *method)
{
    sp_result r = {
        .env = env, .template_name = sp_template_name(t), .template_hash = sp_template_hash(t),
        .problem_key = problem_key, .config = config, .outcome = e->outcome,
        .detail = e->outcome == SP_OUTCOME_OK ? NULL : e->detail, .timing = e->timing,
        .registers = e->res.registers, .smem_bytes = e->res.smem_static + (int)e->smem_dynamic,
        .spill_bytes = e->res.spill_stores + e->res.spill_loads,
    };
    r.timing.baseline_ms = baseline_ms;
    if (e->outcome != SP_OUTCOME_OK && !r.timing.method) r.timing.method = method;
    return sp_db_record(db, &r);
}

/* Insertion into the short list of the best by the objective, which also gives the best. */
static void keep_top(sp_tune_result *r, long long index, double score, double ms, double energy_j)
{
    for (int i = 0; i < r->ntop; i++)
        if (r->top[i] == index) return;   /* the served configuration, proposed again by the search */
    if (r->ntop == SP_TUNE_TOP && score >= r->top_score[SP_TUNE_TOP - 1]) return;
    int i = r->ntop < SP_TUNE_TOP ? r->ntop++ : SP_TUNE_TOP - 1;
    for (; i > 0 && r->top_score[i - 1] > score; i--) {
        r->top[i] = r->top[i - 1];
        r->top_ms[i] = r->top_ms[i - 1];
        r->top_energy_j[i] = r->top_energy_j[i - 1];
        r->top_score[i] = r->top_score[i - 1];
    }
    r->top[i] = index;
    r->top_ms[i] = ms;
    r->top_energy_j[i] = energy_j;
    r->top_score[i] = score;
    r->best_index = r->top[0];
    r->best_ms = r->top_ms[0];
    r->best_energy_j = r->top_energy_j[0];
    r->best_score = r->top_score[0];
}

sptune_status sp_tune_run(sp_template *t, const sp_problem *p, const sp_configs *space,
                          const sp_tune_backend *be, const sp_tune_opts *o, sp_tune_result *r)
{
    if (o->db && !o->env) return sp_fail(SPTUNE_ERR_INVALID, "tuning with a database needs the environment");
    memset(r, 0, sizeof *r);
    r->best_index = -1;
    r->best_ms = r->best_score = INFINITY;
    char *problem_key = sp_problem_format(p);
    if (!problem_key) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    sp_search *s;
    sptune_status st = sp_search_create(o->strategy, t, space, o->seed, &s);
    if (st != SPTUNE_OK) { free(problem_key); return st; }
    const double t0 = sp_now_s();
    sp_tune_progress pr = {.total = space->n, .best_ms = INFINITY, .baseline_ms = o->baseline_ms, .best_index = -1};
    long long index;
    if (o->first >= 0 && o->first < space->n) sp_search_start_at(s, o->first);
    /* the served configuration first (a descent's first proposal is then the same one, resumed) */
    int pending_first = o->first >= 0 && o->first < space->n && o->strategy != SP_SEARCH_DESCENT;
    int first_seen = 0, first_ok = 0;
    double first_score = INFINITY;
    while (pending_first ? (index = o->first, 1) : sp_search_next(s, &index)) {
        const int from_search = !pending_first;
        pending_first = 0;
        if (from_search && first_seen && index == o->first) {   /* measured first already */
            sp_search_report(s, index, first_ok, first_score);
            continue;
        }
        const sp_config *c = &space->v[index];
        char *text = sp_config_format(t, c);
        if (!text) { st = sp_fail(SPTUNE_ERR_NOMEM, "out of memory"); break; }
        int ok = 0, known = 0;
        double ms = INFINITY, joules = -1;
        if (o->db && o->resume) {
            sp_outcome out;
            double med = 0;
            if ((st = sp_db_lookup_energy(o->db, o->env, sp_template_name(t), sp_template_hash(t), problem_key, text,
                                          &known, &out, &med, &joules)) != SPTUNE_OK) {
                free(text);
                break;
            }
            /* a recorded time without the energy the objective needs is measured again */
            if (known && out == SP_OUTCOME_OK && o->objective != SP_OBJECTIVE_TIME && !(joules > 0)) known = 0;
            if (known) {
                ok = out == SP_OUTCOME_OK;
                ms = ok ? med : INFINITY;
                if (!ok) r->failed[out]++;
                r->resumed++;
            }
        }
        if (!known) {
            /* The budget limits new measurements; recorded ones cost nothing. */
            /* a time budget stops before a measurement that would end past it at the pace so far (one
             * twell-ffn variant compiles for ~15 s): the budget bounds the run, not its start */
            const double spent = sp_now_s() - t0, pace = r->measured ? spent / (double)r->measured : 0;
            if ((o->budget.evals > 0 && r->measured >= o->budget.evals) ||
                (o->budget.seconds > 0 && (spent >= o->budget.seconds ||
                                           (r->measured > 0 && spent + pace > o->budget.seconds)))) {
                r->stopped_by_budget = 1;
                free(text);
                break;
            }
            sp_eval e;
            if ((st = be->evaluate(be->ud, c, &e)) != SPTUNE_OK) { free(text); break; }
            r->measured++;
            if (o->db && (st = sp_tune_record(o->db, o->env, t, problem_key, text, &e, o->baseline_ms, o->method)) != SPTUNE_OK) {
                free(text);
                break;
            }
            ok = e.outcome == SP_OUTCOME_OK;
            ms = ok ? e.timing.median_ms : INFINITY;
            joules = ok ? e.timing.energy_j : -1;
            if (!ok) r->failed[e.outcome]++;
        }
        free(text);
        /* the search walks by the objective; a result without the energy it needs counts as failed there */
        const double score = ok ? sp_objective_score(o->objective, ms, joules) : INFINITY;
        const int scored = isfinite(score);
        if (from_search) sp_search_report(s, index, scored, score);
        else { first_seen = 1; first_ok = scored; first_score = score; }
        if (scored) keep_top(r, index, score, ms, joules);
        if (o->progress) {
            pr.done++;
            pr.measured = r->measured;
            pr.resumed = r->resumed;
            pr.failed = 0;
            for (int k = 0; k < SP_OUTCOME__COUNT; k++) pr.failed += r->failed[k];
            pr.best_ms = r->best_ms;
            pr.best_index = r->best_index;
            pr.best_energy_j = r->best_energy_j;
            pr.elapsed_s = sp_now_s() - t0;
            /* What is left: the rest of the space at the pace of the new measurements so far (the
             * recorded ones cost nothing), cut by whichever budget ends first. */
            double per = r->measured ? pr.elapsed_s / (double)r->measured : 0;
            pr.eta_s = per * (double)(pr.total - pr.done);
            pr.eta_by_budget = 0;
            if (o->budget.evals > 0 && per * (double)(o->budget.evals - r->measured) < pr.eta_s) {
                pr.eta_s = per * (double)(o->budget.evals - r->measured);
                pr.eta_by_budget = 1;
            }
            if (o->budget.seconds > 0 && o->budget.seconds - pr.elapsed_s < pr.eta_s) {
                pr.eta_s = o->budget.seconds - pr.elapsed_s;
                pr.eta_by_budget = 1;
            }
            if (pr.eta_s < 0) pr.eta_s = 0;
            o->progress(&pr, o->progress_ud);
        }
    }
    sp_search_free(s);
    free(problem_key);
    return st;
}
