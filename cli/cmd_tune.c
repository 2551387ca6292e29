/* sptune tune: search one problem's space on a GPU within a budget, resumably. */
#include "cli.h"
#include "sp_cache.h"
#include "sp_clock.h"
#include "sp_eval.h"
#include "sp_measure.h"
#include "sp_prebuild.h"
#include "sp_status.h"
#include "sp_tune.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct gpu_backend {
    sp_worker *worker;
    double baseline_ms, baseline_energy_j;
} gpu_backend;

/* Through the measurement worker: a faulting or hanging variant is an outcome, and the worker
 * that took it is replaced before the next one. */
static sptune_status gpu_evaluate(void *ud, const sp_config *c, sp_eval *out)
{
    gpu_backend *g = ud;
    sptune_status st = sp_worker_evaluate(g->worker, c, out);
    if (st == SPTUNE_OK) {
        out->timing.baseline_ms = g->baseline_ms;
        out->timing.baseline_energy_j = g->baseline_energy_j;
    }
    return st;
}

typedef struct progress_state { int tty, quiet; double last_print; sp_prebuild *pb; } progress_state;

/* Each measurement's progress: the builders hinted with the best so far, then the progress line (unless quiet). */
static void on_progress(const sp_tune_progress *p, void *ud)
{
    progress_state *ps = ud;
    sp_prebuild_hint(ps->pb, p->best_index);   /* the builders go on around the best so far */
    if (ps->quiet) return;
    double frac = p->total ? (double)p->done / (double)p->total : 1;
    char best[96] = "-";
    if (isfinite(p->best_ms))
        snprintf(best, sizeof best, "%.4f ms (%.2fx cuBLAS)", p->best_ms,
                 p->baseline_ms > 0 ? p->baseline_ms / p->best_ms : 0);
    if (isfinite(p->best_ms) && p->best_energy_j > 0)
        snprintf(best + strlen(best), sizeof best - strlen(best), " %.4g J", p->best_energy_j);
    const double rate = p->elapsed_s > 0 ? 60.0 * (double)p->measured / p->elapsed_s : 0;   /* measured a minute */
    /* the builders' count ahead of measurement (the kernels the worker finds in the cache) */
    long long planned, built, bfail;
    sp_prebuild_counts(ps->pb, &planned, &built, &bfail);
    char ahead[96] = "";
    if (planned > 0 && bfail)
        snprintf(ahead, sizeof ahead, "%lld compiled ahead (%lld of them failed)", built + bfail, bfail);
    else if (planned > 0)
        snprintf(ahead, sizeof ahead, "%lld compiled ahead", built);
    if (ps->tty) {
        char bar[31];
        int fill = (int)(frac * 30);
        for (int i = 0; i < 30; i++) bar[i] = i < fill ? '#' : '.';
        bar[30] = 0;
        fprintf(stderr, "\r[%s] %lld/%lld drawn%s%s, %lld measured (%.0f a minute), %lld failed  best %s  %.0fs elapsed, "
                "ETA %.0fs (%s)   ", bar, p->done, p->total, *ahead ? ", " : "", ahead, p->measured, rate, p->failed, best,
                p->elapsed_s, p->eta_s, p->eta_by_budget ? "end of the budget" : "end of the space");
    } else if (p->elapsed_s - ps->last_print >= 10 || p->done == p->total) {
        ps->last_print = p->elapsed_s;
        fprintf(stderr, "%lld/%lld drawn%s%s, %lld measured (%.0f a minute), %lld resumed, %lld failed; best %s, %.0fs "
                "elapsed, ETA %.0fs\n", p->done, p->total, *ahead ? ", " : "", ahead, p->measured, rate, p->resumed,
                p->failed, best, p->elapsed_s, p->eta_s);
    }
}

/* The few fastest, timed again in alternating order over several rounds: one-run winners flip. */
static sptune_status remeasure_top(gpu_backend *g, sp_template *t, const sp_problem *p, const char *method_of_bench,
                                   const sp_configs *space, sp_tune_result *r, sp_db *db, const sp_env *env,
                                   double *winner_ms, long long *winner, double *winner_energy_j)
{
    enum { ROUNDS = 3 };
    double ms[SP_TUNE_TOP][ROUNDS], joules[SP_TUNE_TOP];
    sp_eval last[SP_TUNE_TOP];
    /* the energy of the last round that measured one, else the search's (the worker measures it only for a
     * variant about as fast as the fastest it has timed) */
    for (int i = 0; i < r->ntop; i++) joules[i] = r->top_energy_j[i];
    for (int round = 0; round < ROUNDS; round++)
        for (int i = 0; i < r->ntop; i++) {
            sptune_status st = gpu_evaluate(g, &space->v[r->top[i]], &last[i]);
            if (st != SPTUNE_OK) return st;
            ms[i][round] = last[i].outcome == SP_OUTCOME_OK ? last[i].timing.median_ms : INFINITY;
            if (last[i].outcome == SP_OUTCOME_OK && last[i].timing.energy_j > 0) joules[i] = last[i].timing.energy_j;
        }
    *winner = -1;
    *winner_ms = INFINITY;
    char *key = db ? sp_problem_format(p) : NULL;
    for (int i = 0; i < r->ntop; i++) {
        double a = ms[i][0], b = ms[i][1], c = ms[i][2]; /* median of three */
        double med = a > b ? (b > c ? b : (a > c ? c : a)) : (a > c ? a : (b > c ? c : b));
        if (!isfinite(med)) continue;
        if (db) {
            /* the re-measured median replaces the search's figure, saying how it was taken */
            sp_eval ev = last[i];
            char method[256];
            snprintf(method, sizeof method, "%s;paired-remeasure=%d rounds over the top %d", method_of_bench,
                     ROUNDS, r->ntop);
            ev.outcome = SP_OUTCOME_OK;
            ev.timing.method = method;
            ev.timing.median_ms = med;
            ev.timing.energy_j = joules[i];
            if (ev.timing.min_ms > med) ev.timing.min_ms = med;
            if (ev.timing.max_ms < med) ev.timing.max_ms = med;
            char *text = sp_config_format(t, &space->v[r->top[i]]);
            sptune_status st = text && key ? sp_tune_record(db, env, t, key, text, &ev, g->baseline_ms, NULL)
                                           : sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
            free(text);
            if (st != SPTUNE_OK) { free(key); return st; }
        }
        if (med < *winner_ms) {
            *winner_ms = med;
            *winner = r->top[i];
            *winner_energy_j = joules[i];
        }
    }
    free(key);
    return SPTUNE_OK;
}

/* The configuration the runtime API serves now for this problem (the user's results, the shipped ones,
 * the nearest, the default) into *c, and why it is served (malloc'd, may be NULL); 0 when nothing can be got. */
static int served_config(sp_template *t, const cli_gpu_run *g, const char *key, sp_db *db, sp_cache *cache,
                         sp_config *c, char **why)
{
    sptune_kernel_request req = {.op = sp_template_name(t), .problem = key, .gpu = g->gpu.info.profile,
                                 .db_path = db ? sp_db_path(db) : "", .cache_dir = cache ? sp_cache_dir(cache) : ""};
    sptune_kernel *k = NULL;
    int got = sptune_kernel_get(&req, &k) == SPTUNE_OK && sp_config_parse(t, sptune_kernel_config(k), c) == SPTUNE_OK;
    if (why) {
        const char *w = NULL;
        if (got) sptune_kernel_origin(k, &w);
        *why = w ? strdup(w) : NULL;
    }
    sptune_kernel_free(k);
    sp_clear_error();
    return got;
}

/* c's index in the space; -1 when it is not in it. */
static long long index_in(const sp_configs *space, const sp_config *c)
{
    for (long long i = 0; i < space->n; i++)
        if (sp_config_cmp(&space->v[i], c) == 0) return i;
    return -1;
}

/* The configurations a tuning run searches: the whole space where it can be listed in seconds; else the candidates
 * around the served configuration and the default, and configurations drawn from random subtrees (twell-ffn's
 * space has 3 M valid configurations in 1.8e10 combinations: listing it took minutes before anything was measured). */
static sptune_status search_space(sp_template *t, const cli_gpu_run *g, const sp_problem *p, const sp_config *served,
                                  unsigned long long seed, int quiet, sp_configs *out)
{
    if (sp_space_raw(t) <= SP_SPACE_LIST_MAX) return sp_space_collect(t, &g->gpu, p, out);
    sp_config seeds[2];
    int n = 0;
    if (served) seeds[n++] = *served;
    if (sp_config_default_for(t, &g->gpu, p, &seeds[n]) == SPTUNE_OK) n++;
    sp_clear_error();
    const double t0 = sp_now_s();
    sptune_status st = sp_space_candidates(t, &g->gpu, p, seeds, n, 3.0, seed, out);
    if (st == SPTUNE_OK && !quiet)
        fprintf(stderr, "%s: %.3g combinations, too many to list: searching %lld candidates (the configuration served "
                "now and the default, every valid one a parameter or two from them, and one from each of the random "
                "subtrees walked for 3 s), found in %.1f s\n", sp_template_name(t), sp_space_raw(t), out->n,
                sp_now_s() - t0);
    return st;
}

int cli_tune_problem(const char *cmd, const cli_gpu_run *g, sp_template *t, const sp_problem *p, sp_db *db,
                     sp_cache *cache, const sp_tune_opts *opts, int quiet, cli_tuned *out)
{
    sptune_status st;
    int rc = CLI_OK;
    sp_worker *worker = NULL;
    sp_prebuild *pb = NULL;
    memset(out, 0, sizeof *out);
    out->best = -1;
    out->best_ms = INFINITY;
    char *key = sp_problem_format(p);
    if (!key) return cli_error(cmd, sp_fail(SPTUNE_ERR_NOMEM, "out of memory"));
    /* what is served now, got once: a seed of the candidates, and measured first so that a short run cannot end below
       it */
    sp_config served;
    char *why = NULL;
    const int have_served = !g->from_default && served_config(t, g, key, db, cache, &served, &why);
    if ((st = search_space(t, g, p, have_served ? &served : NULL, opts->seed, quiet, &out->space)) != SPTUNE_OK) {
        free(why);
        free(key);
        return cli_error(cmd, st);
    }
    if (out->space.n == 0) {
        fprintf(stderr, "sptune%s%s: %s has no valid configuration for %s at %s\n", *cmd ? " " : "", cmd,
                sp_template_name(t), g->gpu.info.profile, key);
        free(why);
        free(key);
        return CLI_FAIL;
    }
    /* Builds ahead in parallel, then the worker that verifies and times (and the baseline). */
    if (cache && g->jobs > 0 &&
        (st = sp_prebuild_start(t, &g->gpu, p, &out->space, opts->strategy, opts->seed, opts->budget.evals, cache,
                                g->jobs, &pb)) != SPTUNE_OK) {
        rc = cli_error(cmd, st);
        goto out;
    }
    sp_measure_spec spec;
    memset(&spec, 0, sizeof spec);
    snprintf(spec.op, sizeof spec.op, "%s", sp_template_name(t));
    snprintf(spec.problem, sizeof spec.problem, "%s", key);
    spec.ordinal = g->ordinal;
    spec.runs = g->runs;
    snprintf(spec.cache_dir, sizeof spec.cache_dir, "%s", cache ? sp_cache_dir(cache) : "");
    snprintf(spec.data, sizeof spec.data, "%s", g->data ? g->data : "");
    snprintf(spec.data_names, sizeof spec.data_names, "%s", g->data_names ? g->data_names : "");
    spec.energy_all = opts->objective != SP_OBJECTIVE_TIME;
    sp_eval base;
    if ((st = sp_measure_worker(g->exe, &spec, g->timeout_s, &worker)) != SPTUNE_OK ||
        (st = sp_worker_baseline(worker, &base)) != SPTUNE_OK) {
        rc = cli_error(cmd, st);
        goto out;
    }
    char method[sizeof base.method];
    snprintf(method, sizeof method, "%s", base.method);
    out->baseline_ms = base.timing.median_ms;
    out->baseline_energy_j = base.timing.energy_j;
    out->objective = opts->objective;
    if (opts->objective != SP_OBJECTIVE_TIME && !(base.timing.energy_j > 0)) {
        fprintf(stderr, "sptune%s%s: --objective %s needs the energy per call, which this GPU does not report "
                "through NVML here (%s)\n", *cmd ? " " : "", cmd, sp_objective_name(opts->objective),
                base.method[0] && strstr(base.method, "energy=") ? "the counter did not move" : "no NVML energy counter");
        rc = CLI_FAIL;
        goto out;
    }
    sp_env env;
    sp_eval_env(&g->gpu, &env);
    gpu_backend gb = {worker, out->baseline_ms, out->baseline_energy_j};
    sp_tune_backend be = {&gb, gpu_evaluate};
    progress_state ps = {isatty(2), quiet, -1e9, pb};
    sp_tune_opts o = *opts;
    o.first = have_served ? index_in(&out->space, &served) : -1;
    if (o.first >= 0 && !quiet) fprintf(stderr, "starting from the configuration served now (%s)\n", why ? why : "");
    o.db = db;
    o.env = &env;
    o.baseline_ms = out->baseline_ms;
    o.method = method;
    o.progress = on_progress;
    o.progress_ud = &ps;
    st = sp_tune_run(t, p, &out->space, &be, &o, &out->r);
    if (ps.tty && !ps.quiet) fputc('\n', stderr);
    sp_prebuild_stop(pb); /* what is left is not going to be measured */
    pb = NULL;
    if (st != SPTUNE_OK) { rc = cli_error(cmd, st); goto out; }
    out->best = out->r.best_index;
    out->best_ms = out->r.best_ms;
    out->best_energy_j = out->r.best_energy_j;
    /* paired re-measurement of the time: for the time objective */
    if (opts->objective == SP_OBJECTIVE_TIME && out->r.ntop > 1 &&
        (st = remeasure_top(&gb, t, p, method, &out->space, &out->r, db, &env, &out->best_ms, &out->best,
                            &out->best_energy_j)) != SPTUNE_OK) {
        rc = cli_error(cmd, st);
        goto out;
    }
    if (out->best >= 0) out->best_text = sp_config_format(t, &out->space.v[out->best]);
out:
    sp_prebuild_stop(pb);
    sp_worker_destroy(worker);
    free(why);
    free(key);
    return rc;
}

void cli_tuned_free(cli_tuned *x)
{
    sp_configs_free(&x->space);
    free(x->best_text);
    memset(x, 0, sizeof *x);
}

long long cli_tuned_failed(const cli_tuned *x)
{
    long long failed = 0;
    for (int k = 0; k < SP_OUTCOME__COUNT; k++) failed += x->r.failed[k];
    return failed;
}

int cmd_tune(cli_cmd *cmd, int npos, char **pos)
{
    (void)npos;
    sp_tune_opts o;
    sp_tune_opts_default(&o);
    const char *strategy = cli_get(cmd, "strategy"), *shape = cli_get(cmd, "shape");
    if (strategy && !sp_search_parse(strategy, &o.strategy))
        return cli_usage_error(cmd->name, "unknown strategy '%s' (exhaustive, random, descent)", strategy);
    if (!sp_budget_parse(cli_get(cmd, "budget"), &o.budget))
        return cli_usage_error(cmd->name, "bad --budget '%s' (examples: 15m, 90s, 2h, 300evals)", cli_get(cmd, "budget"));
    long long seed = cli_int(cmd, "seed", 1);
    if (seed < 0) return CLI_USAGE;
    if (cli_get(cmd, "resume") && cli_get(cmd, "no-resume"))
        return cli_usage_error(cmd->name, "--resume and --no-resume contradict each other");
    /* the user's own tensors: the problem measured from them (before any GPU question), then tuned on them */
    char measured[256];
    if (cli_get(cmd, "data") && strcmp(pos[0], "twell-ffn") != 0 && strcmp(pos[0], "slotfill-spmm") != 0)
        return cli_usage_error(cmd->name, "--data tunes twell-ffn on a layer's own tensors, or slotfill-spmm on its "
                               "own weights, not %s", pos[0]);
    if (cli_get(cmd, "data") && !strcmp(pos[0], "twell-ffn") && cli_get(cmd, "tokens"))
        return cli_usage_error(cmd->name, "--data tunes twell-ffn on the batch the file holds: M is its tokens");
    int drc = cli_data_shape(cmd, pos[0], 1, cli_get(cmd, "quiet") || cli_get(cmd, "json"), &shape, measured,
                             sizeof measured);
    if (drc != CLI_OK) return drc;
    if (!shape) return cli_usage_error(cmd->name, "--shape is required (e.g. M=4096,N=4096,K=4096), or --data");
    if (cli_get(cmd, "objective") && !sp_objective_parse(cli_get(cmd, "objective"), &o.objective))
        return cli_usage_error(cmd->name, "unknown objective '%s' (time, energy, edp)", cli_get(cmd, "objective"));
    o.seed = (unsigned long long)seed;
    o.resume = !cli_get(cmd, "no-resume");

    sp_gpu_profile gpu;
    int ordinal, rc;
    cli_gpu_run run;
    if ((rc = cli_gpu_run_opts(cmd, &run))) return rc;
    run.data = cli_get(cmd, "data");
    run.data_names = cli_get(cmd, "tensors");
    const char *start = cli_get(cmd, "start");
    if (start && strcmp(start, "served") != 0 && strcmp(start, "default") != 0)
        return cli_usage_error(cmd->name, "unknown --start '%s' (served, default)", start);
    run.from_default = start && !strcmp(start, "default");
    const char *g = cli_get(cmd, "gpu");
    if ((rc = cli_gpu_target(cmd->name, g ? g : "auto", 1, &gpu, &ordinal))) return rc;
    sp_template *t = NULL;
    if ((rc = cli_load_template(cmd->name, pos[0], &t))) return rc;
    sp_problem prob;
    sp_db *db = NULL;
    sp_cache *cache = NULL;
    cli_tuned tu = {0};
    sptune_status st;
    if ((st = sp_problem_parse(t, shape, &prob)) != SPTUNE_OK) { rc = cli_error(cmd->name, st); goto out; }
    if ((rc = cli_open_measurement(cmd, pos[0], &gpu, ordinal, &db, &cache, NULL))) goto out;
    run.gpu = gpu;
    run.ordinal = ordinal;
    int quiet = cli_get(cmd, "quiet") != NULL || cli_get(cmd, "json") != NULL;
    if ((rc = cli_tune_problem(cmd->name, &run, t, &prob, db, cache, &o, quiet, &tu))) goto out;
    long long failed = cli_tuned_failed(&tu);
    char *key = sp_problem_format(&prob);
    if (cli_get(cmd, "json")) {
        cli_print_tuned_json(gpu.info.profile, pos[0], key ? key : "", sp_search_name(o.strategy), &tu);
    } else {
        cli_print_tuned_header();
        cli_print_tuned(gpu.info.profile, pos[0], key ? key : "?", &tu);
        printf("%lld of %lld configurations (%s): %lld measured, %lld from the database, %lld failed%s\n",
               tu.r.measured + tu.r.resumed, tu.space.n, sp_search_name(o.strategy), tu.r.measured, tu.r.resumed,
               failed, tu.r.stopped_by_budget ? "; stopped by the budget" : "");
    }
    free(key);
    rc = tu.best >= 0 ? CLI_OK : CLI_FAIL;
out:
    cli_tuned_free(&tu);
    sp_cache_close(cache);
    sp_db_close(db);
    sp_template_free(t);
    return rc;
}

void cli_print_tuned_json(const char *gpu, const char *op, const char *problem, const char *strategy,
                          const cli_tuned *tu)
{
    putchar('{');
    cli_json_key("op", 1); cli_json_str(op);
    cli_json_key("problem", 0); cli_json_str(problem);
    cli_json_key("gpu", 0); cli_json_str(gpu);
    cli_json_key("strategy", 0); cli_json_str(strategy);
    printf(",\"space\":%lld,\"measured\":%lld,\"resumed\":%lld,\"failed\":%lld,\"stopped_by_budget\":%s,"
           "\"skipped\":%s", tu->space.n, tu->r.measured, tu->r.resumed, cli_tuned_failed(tu),
           tu->r.stopped_by_budget ? "true" : "false", tu->skipped ? "true" : "false");
    cli_json_key("objective", 0); cli_json_str(sp_objective_name(tu->objective));
    cli_json_key("baseline_ms", 0); cli_json_num(tu->baseline_ms, 6);
    cli_json_key("baseline_joules", 0); cli_json_num(tu->baseline_energy_j > 0 ? tu->baseline_energy_j : NAN, 6);
    cli_json_key("best", 0);
    if (tu->best_text) {
        putchar('{');
        cli_json_key("config", 1); cli_json_str(tu->best_text);
        cli_json_key("median_ms", 0); cli_json_num(tu->best_ms, 6);
        cli_json_key("speedup", 0); cli_json_num(tu->baseline_ms / tu->best_ms, 4);
        cli_json_key("joules", 0); cli_json_num(tu->best_energy_j > 0 ? tu->best_energy_j : NAN, 6);
        putchar('}');
    } else {
        fputs("null", stdout);
    }
    printf(",\"failures\":{");
    for (int k = 1, first = 1; k < SP_OUTCOME__COUNT; k++)
        if (tu->r.failed[k]) {
            printf("%s\"%s\":%lld", first ? "" : ",", sp_outcome_name((sp_outcome)k), tu->r.failed[k]);
            first = 0;
        }
    printf("}}\n");
}

void cli_print_tuned_header(void)
{
    printf("%-6s %-10s %-40s %9s %9s %8s %9s %9s %7s  %s\n", "gpu", "op", "problem", "best ms", "cuBLAS", "speedup",
           "J/call", "cuBLAS J", "failed", "best configuration");
}

void cli_print_tuned(const char *gpu, const char *op, const char *problem, const cli_tuned *x)
{
    long long failed = cli_tuned_failed(x);
    if (x->skipped) {
        printf("%-6s %-10s %-40s not tuned: the budget was spent (the recorded and shipped results serve it)\n", gpu, op,
               problem);
    } else if (!x->best_text) {
        printf("%-6s %-10s %-40s no variant passed (%lld failed)\n", gpu, op, problem, failed);
    } else {
        char j[2][32];
        cli_joules(x->best_energy_j, j[0], sizeof j[0]);
        cli_joules(x->baseline_energy_j, j[1], sizeof j[1]);
        printf("%-6s %-10s %-40s %9.4f %9.4f %7.2fx %9s %9s %3lld/%-3lld  %s\n", gpu, op, problem, x->best_ms,
               x->baseline_ms, x->baseline_ms / x->best_ms, j[0], j[1], failed, x->r.measured + x->r.resumed,
               x->best_text);
    }
    for (int k = 1; k < SP_OUTCOME__COUNT; k++)
        if (x->r.failed[k]) printf("%-6s   %lld %s\n", "", x->r.failed[k], sp_outcome_name((sp_outcome)k));
}
