/* The main job: the workload (built-in or --workload, optionally one --shard of it) tuned on
 * every GPU found, or, for a named target that is absent, generated and compiled only. */
#include "cli.h"
#include "sp_clock.h"
#include "sp_cache.h"
#include "sp_eval.h"
#include "sp_prebuild.h"
#include "sp_status.h"
#include "sp_workload.h"
#include "sp_variant.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define FIXED_S 10.0   /* a problem's visit (setup and one measurement) before one was timed: twell-ffn's ~10 s */
#define DEFAULT_CAP_S (14 * 60.0)   /* without --budget, the whole run's wall clock: the README promises 15 minutes */

/* What the options ask of each problem, parsed once: --sample new measurements (or a share of
 * --budget), the search's strategy and seed. */
typedef struct auto_plan {
    long long sample;
    sp_tune_budget total;
    int capped;           /* no --budget: --sample a problem, the whole run also within DEFAULT_CAP_S */
    sp_tune_opts o;
} auto_plan;

static int run_workload(cli_cmd *cmd, const sp_workload *wl, int n, const int *ordinals, const sp_gpu_profile *gpu,
                        const cli_gpu_run *run, const auto_plan *plan);
static int tune_on_gpu(cli_cmd *cmd, const sp_workload *wl, int d, int n, int ordinal, const sp_gpu_profile *gpu,
                       const cli_gpu_run *base, sp_cache *cache, const auto_plan *plan);

/* --workload (or the built-in list), then its --shard; the exit code of a failure (nothing to free then). */
static int load_workload(cli_cmd *cmd, sp_workload *wl)
{
    sptune_status st;
    const char *wfile = cli_get(cmd, "workload"), *shard = cli_get(cmd, "shard");
    if ((st = wfile ? sp_workload_load(wfile, wl) : sp_workload_default(wl)) != SPTUNE_OK)
        return cli_input_error("", st);
    if (shard && (st = sp_workload_shard(wl, shard)) != SPTUNE_OK) {
        sp_workload_free(wl);
        return cli_error("", st);
    }
    return CLI_OK;
}

/* The workload (and --shard of it) that a run would tune, one "OP PROBLEM" line each, every problem
 * checked against its template; no GPU needed (a cluster job's plan, or a check of the shards). */
static int dry_run(cli_cmd *cmd)
{
    sp_workload wl;
    sptune_status st;
    int rc = load_workload(cmd, &wl);
    if (rc != CLI_OK) return rc;
    for (int k = 0; k < wl.n && rc == CLI_OK; k++) {
        sp_template *t;
        sp_problem p;
        if ((rc = cli_load_template("", wl.items[k].op, &t))) break;
        st = sp_problem_parse(t, wl.items[k].problem, &p);
        sp_template_free(t);
        if (st != SPTUNE_OK) rc = cli_usage_error("", "workload item %d (%s %s): %s", k + 1, wl.items[k].op,
                                                  wl.items[k].problem, sptune_last_error());
        else printf("%s %s\n", wl.items[k].op, wl.items[k].problem);
    }
    sp_workload_free(&wl);
    return rc;
}

/* The main job: every op of the default workload on every GPU found (or the one named). */
int cmd_auto(cli_cmd *cmd, int npos, char **pos)
{
    const char *g = cli_get(cmd, "gpu");
    int count = 0, rc = CLI_OK;
    sptune_status st;
    (void)npos; (void)pos;
    int ordinals[64], n = 0;
    auto_plan plan;
    sp_tune_opts_default(&plan.o);
    long long seed = cli_int(cmd, "seed", 1);
    plan.sample = cli_int(cmd, "sample", 12);
    if (plan.sample < 0 || seed < 0) return CLI_USAGE;
    if (plan.sample == 0) return cli_usage_error("", "--sample wants at least 1");
    plan.o.seed = (unsigned long long)seed;
    if (!sp_budget_parse(cli_get(cmd, "budget"), &plan.total))
        return cli_usage_error("", "bad --budget '%s' (examples: 15m, 90s, 2h, 300evals)", cli_get(cmd, "budget"));
    plan.capped = !(plan.total.seconds > 0) && !(plan.total.evals > 0);
    if (plan.capped) plan.total.seconds = DEFAULT_CAP_S;
    if (cli_get(cmd, "strategy") && !sp_search_parse(cli_get(cmd, "strategy"), &plan.o.strategy))
        return cli_usage_error("", "unknown strategy '%s' (exhaustive, random, descent)", cli_get(cmd, "strategy"));
    if (cli_get(cmd, "objective") && !sp_objective_parse(cli_get(cmd, "objective"), &plan.o.objective))
        return cli_usage_error("", "unknown objective '%s' (time, energy, edp)", cli_get(cmd, "objective"));
    cli_gpu_run run; /* --runs, --timeout, --jobs */
    if ((rc = cli_gpu_run_opts(cmd, &run))) return rc;
    if (cli_get(cmd, "dry-run")) return dry_run(cmd);
    if (!g) g = "auto";
    if (strcmp(g, "auto") == 0 || strcmp(g, "all") == 0) {
        if ((st = sptune_gpu_count(&count)) != SPTUNE_OK) {
            fprintf(stderr, "sptune: no GPU to tune: %s. Without one, name a target to generate and compile "
                            "its kernels: sptune --gpu h100 (or h200, rtx-pro-6000, sm_XX)\n", sptune_last_error());
            return CLI_NO_GPU;
        }
        for (int i = 0; i < count && n < 64; i++) ordinals[n++] = i;
    }
    sp_gpu_profile named;
    int ordinal = -1;
    if (n == 0) {
        if ((rc = cli_gpu_target("", g, 0, &named, &ordinal))) return rc;
        if (ordinal >= 0) ordinals[n++] = ordinal;
    }
    sp_workload wl;
    if ((rc = load_workload(cmd, &wl)) != CLI_OK) return rc;
    rc = run_workload(cmd, &wl, n, ordinals, &named, &run, &plan);
    sp_workload_free(&wl);
    return rc;
}

/* The main job over workload wl: on the GPUs ordinals[0..n), or compile-only for `named`. */
static int run_workload(cli_cmd *cmd, const sp_workload *wl, int n, const int *ordinals, const sp_gpu_profile *gpu,
                        const cli_gpu_run *run, const auto_plan *plan)
{
    sptune_status st;
    int rc = CLI_OK;
    sp_gpu_profile named = *gpu;
    sp_cache *cache = NULL;
    /* Every item names a known op and a problem it accepts, before anything runs. */
    for (int k = 0; k < wl->n; k++) {
        sp_template *t;
        sp_problem p;
        if ((rc = cli_load_template("", wl->items[k].op, &t))) return rc;
        st = sp_problem_parse(t, wl->items[k].problem, &p);
        sp_template_free(t);
        if (st != SPTUNE_OK) return cli_usage_error("", "workload item %d (%s %s): %s", k + 1, wl->items[k].op,
                                                    wl->items[k].problem, sptune_last_error());
    }
    if ((st = sp_cache_open(cli_get(cmd, "cache-dir"), &cache)) != SPTUNE_OK) return cli_error("", st);
    if (n == 0) {
        /* The target is not here: do what needs no GPU, so the variants are known to build. */
        printf("no %s GPU on this machine: generating and compiling the workload's ops (nothing is timed)\n",
               named.info.profile);
        for (int k = 0; k < wl->n && rc == CLI_OK; k++) {
            const sp_workload_item *w = &wl->items[k];
            int seen = 0;
            for (int j = 0; j < k; j++) seen |= strcmp(wl->items[j].op, w->op) == 0;
            if (seen) continue;
            sp_template *t;
            sp_configs cs;
            if ((rc = cli_load_template("", w->op, &t))) break;
            if ((rc = cli_draw_space("", t, &named, NULL, plan->sample, plan->o.seed, &cs)) == CLI_OK) {
                /* Built in parallel first; the loop below then reports each from the cache. */
                sp_prebuild *pb = NULL;
                if (run->jobs > 1 && sp_prebuild_start(t, &named, NULL, &cs, SP_SEARCH_EXHAUSTIVE, 1, 0, cache,
                                                       run->jobs, &pb) == SPTUNE_OK)
                    sp_prebuild_wait(pb);
                int bad = 0;
                for (long long i = 0; i < cs.n; i++) {
                    sp_kernel_src src;
                    sp_cubin cub;
                    if (sp_variant_build(t, &cs.v[i], &named, NULL, cache, &src, &cub) == SPTUNE_OK) {
                        sp_kernel_src_free(&src);
                    } else {
                        bad++;
                        fprintf(stderr, "%s\n", sptune_last_error());
                    }
                    sp_cubin_free(&cub);
                }
                printf("%-14s %lld variants compiled for %s, %d failed\n", w->op, cs.n - bad, named.info.arch, bad);
                if (bad) rc = CLI_FAIL;
                sp_configs_free(&cs);
            }
            sp_template_free(t);
        }
        sp_cache_close(cache);
        return rc;
    }
    /* One coordinator per GPU, each with its own measurement worker, over every n-th problem,
     * all into the same database (SQLite serialises the writers). The coordinators are forked
     * after this process initialised the driver, so they must not call it: what they need from
     * it (the GPUs' profiles, the driver version) is read here, and their workers are fresh
     * programs. */
    sp_gpu_profile *profiles = calloc((size_t)n, sizeof *profiles);
    char driver[32];
    if (!profiles) rc = cli_error("", sp_fail(SPTUNE_ERR_NOMEM, "out of memory"));
    for (int d = 0; d < n && rc == CLI_OK; d++)
        if ((st = sp_gpu_profile_device(ordinals[d], &profiles[d])) != SPTUNE_OK) rc = cli_error("", st);
    if (rc == CLI_OK) sptune_driver_version(driver, sizeof driver);
    if (rc == CLI_OK && n == 1) {
        rc = tune_on_gpu(cmd, wl, 0, 1, ordinals[0], &profiles[0], run, cache, plan);
    } else if (rc == CLI_OK) {
        pid_t pids[64];
        int started = 0;
        fflush(NULL);
        for (int d = 0; d < n; d++) {
            pid_t pid = fork();
            if (pid < 0) { rc = cli_error("", sp_fail(SPTUNE_ERR_IO, "fork: %s", strerror(errno))); break; }
            if (pid == 0) {
                int crc = tune_on_gpu(cmd, wl, d, n, ordinals[d], &profiles[d], run, cache, plan);
                fflush(NULL);
                _exit(crc);
            }
            pids[started++] = pid;
        }
        for (int d = 0; d < started; d++) {
            int status = 0;
            while (waitpid(pids[d], &status, 0) < 0 && errno == EINTR) {}
            int crc = WIFEXITED(status) ? WEXITSTATUS(status) : CLI_FAIL;
            if (crc != CLI_OK && rc == CLI_OK) rc = crc;
        }
    }
    free(profiles);
    sp_cache_close(cache);
    return rc;
}

/* Problems d, d+n, d+2n, ... of wl tuned on device `ordinal`, then their table. The database is
 * opened here: with several GPUs this runs in a forked process per GPU. */
static int tune_on_gpu(cli_cmd *cmd, const sp_workload *wl, int d, int n, int ordinal, const sp_gpu_profile *profile,
                       const cli_gpu_run *base, sp_cache *cache, const auto_plan *plan)
{
    sptune_status st;
    int rc;
    sp_db *db = NULL;
    sp_gpu_profile gpu = *profile;
    cli_gpu_run run = *base;
    run.gpu = gpu;
    run.ordinal = ordinal;
    if ((rc = cli_open_db(cmd, &db))) return rc;
    /* The budget: --budget shared out over the problems (time left over flows to the ones after;
     * with several GPUs each has the whole time), else --sample new measurements per problem within DEFAULT_CAP_S.
     * Results already recorded cost nothing. A time budget bounds the whole job's wall clock: each problem's
     * setup (worker, data, baseline, compiling) comes out of it too, and every problem is at least re-verified with
     * the configuration served now (its first measurement), so the problems after the current one keep what the
     * longest such visit has cost so far (FIXED_S before any) and the current one measures in what is left. */
    const sp_tune_budget total = plan->total;
    sp_tune_opts o = plan->o;
    int jobs = 0, done = 0;
    double shares = 0, shares_all = 0, shares_done = 0;   /* this GPU's problems', everyone's, those done */
    for (int k = d; k < wl->n; k += n) { jobs++; shares += wl->items[k].share; }
    for (int k = 0; k < wl->n; k++) shares_all += wl->items[k].share;
    cli_tuned *tuned = calloc((size_t)(jobs > 0 ? jobs : 1), sizeof *tuned);
    const sp_workload_item **item_of = calloc((size_t)(jobs > 0 ? jobs : 1), sizeof *item_of);
    if (!tuned || !item_of) rc = cli_error("", sp_fail(SPTUNE_ERR_NOMEM, "out of memory"));
    int json = cli_get(cmd, "json") != NULL;
    const double t0 = sp_now_s();
    double visit_s = 0;   /* the longest visit so far (setup and one measurement; 0: none yet) */
    for (int k = d; k < wl->n && rc == CLI_OK; k += n) {
        const sp_workload_item *w = &wl->items[k];
        o.budget.seconds = 0;
        o.budget.evals = plan->capped ? plan->sample : 0;
        /* a shared budget goes by the problems' shares (the product first, gemm the least) */
        if (total.evals > 0) {
            long long e = (long long)((double)total.evals * w->share / (shares_all > 0 ? shares_all : 1));
            o.budget.evals = e > 0 ? e : 1;
        }
        const double rest = shares - shares_done;   /* time left over flows to the problems after */
        shares_done += w->share;
        const int after = (jobs - done - 1);          /* this GPU's problems after this one */
        const double left =
            total.seconds > 0 ? total.seconds - (sp_now_s() - t0) - after * (visit_s > 0 ? visit_s : FIXED_S) : 0;
        if (total.seconds > 0) {
            /* the default cap is a bound, not a split: a problem may use whatever the ones after do not need */
            o.budget.seconds = plan->capped ? left : left * w->share / (rest > 0 ? rest : 1);
            /* no time beyond the visit: the served configuration re-verified (or found recorded) and nothing else */
            if (!(o.budget.seconds > 0)) { o.budget.seconds = 0; o.budget.evals = 1; }
        }
        sp_template *t;
        sp_problem p;
        if ((rc = cli_load_template("", w->op, &t))) break;
        if (!json) printf("[%s:%d] %s %s (%s)\n", gpu.info.profile, ordinal, w->op, w->problem, w->why);
        fflush(stdout);
        const double started = sp_now_s();
        if ((st = sp_problem_parse(t, w->problem, &p)) != SPTUNE_OK) rc = cli_error("", st);
        else rc = cli_tune_problem("", &run, t, &p, db, cache, &o, cli_get(cmd, "quiet") != NULL || json, &tuned[done]);
        const double took = sp_now_s() - started;
        if (tuned[done].r.measured <= 1 && took > visit_s) visit_s = took;
        if (!json && !cli_get(cmd, "quiet"))
            printf("[%s:%d] %s: %.0f s (%.0f s of %s%s)\n", gpu.info.profile, ordinal, w->op, took, o.budget.seconds,
                   plan->capped ? "the run's default wall clock left to its --sample" : "measurement budget",
                   o.budget.evals == 1 && o.budget.seconds == 0 && total.seconds > 0 ?
                   ", none left beyond re-verifying what is served" : "");
        item_of[done++] = w;
        sp_template_free(t);
    }
    if (!json) {
        printf("\n");
        cli_print_tuned_header();
    }
    for (int i = 0; i < done; i++) {
        if (json)
            cli_print_tuned_json(gpu.info.profile, item_of[i]->op, item_of[i]->problem, sp_search_name(o.strategy),
                                 &tuned[i]);
        else cli_print_tuned(gpu.info.profile, item_of[i]->op, item_of[i]->problem, &tuned[i]);
        /* a wrong result is a kernel bug; other failures are the tuner's business */
        if (rc == CLI_OK && !tuned[i].skipped && (tuned[i].best < 0 || tuned[i].r.failed[SP_OUTCOME_WRONG_RESULT]))
            rc = CLI_FAIL;
        cli_tuned_free(&tuned[i]);
    }
    fflush(stdout);
    free(tuned);
    free(item_of);
    sp_db_close(db);
    return rc;
}
