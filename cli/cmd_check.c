/* Commands that measure on a GPU: check (verify and time variants of one problem) and the main
 * job (the default workload on every GPU found). */
#include "cli.h"
#include "sp_cache.h"
#include "sp_eval.h"
#include "sp_status.h"
#include "sp_workload.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct problem_summary {
    const char *op;
    int bench;          /* index of the GPU it ran on */
    char problem[128];
    char best[512];
    double best_ms, base_ms, best_err, flops;
    int ok, failed[SP_OUTCOME__COUNT];
} problem_summary;

/* Measures configurations cs of t on one problem; records each in db (may be NULL). */
static int measure_problem(const char *cmd, sp_bench *b, sp_template *t, const sp_problem *p,
                           sp_configs *cs, sp_db *db, sp_cache *cache, int verbose, problem_summary *sum)
{
    sp_case kase;
    sptune_status st;
    memset(sum, 0, sizeof *sum);
    sum->best_ms = INFINITY;
    char *pk = sp_problem_format(p);
    snprintf(sum->problem, sizeof sum->problem, "%s", pk ? pk : "?");
    free(pk);
    if ((st = sp_case_create(b, sp_template_name(t), p, &kase)) != SPTUNE_OK) return cli_error(cmd, st);
    sum->flops = sp_case_flops(&kase);
    sp_timing base = {0};
    if ((st = sp_case_time_baseline(&kase, &base)) != SPTUNE_OK) {
        sp_case_destroy(&kase);
        return cli_error(cmd, st);
    }
    sum->base_ms = base.median_ms;
    if (verbose)
        printf("%s %s on %s: baseline %s %.4f ms (%.1f TFLOP/s)\n", sp_template_name(t), sum->problem,
               b->gpu.info.name, kase.ops->baseline_name, base.median_ms, sum->flops / base.median_ms * 1e-9);
    sp_env env;
    sp_eval_env(b, &env);
    int rc = CLI_OK;
    for (long long i = 0; i < cs->n; i++) {
        char *text = sp_config_format(t, &cs->v[i]);
        sp_eval e;
        if ((st = sp_eval_variant(&kase, t, &cs->v[i], cache, &e)) != SPTUNE_OK) {
            free(text);
            rc = cli_error(cmd, st);
            break;
        }
        e.timing.baseline_ms = base.median_ms;
        if (e.outcome == SP_OUTCOME_OK) {
            sum->ok++;
            if (e.timing.median_ms < sum->best_ms) {
                sum->best_ms = e.timing.median_ms;
                sum->best_err = e.timing.rel_error;
                snprintf(sum->best, sizeof sum->best, "%s", text ? text : "?");
            }
        } else {
            sum->failed[e.outcome]++;
        }
        if (verbose) {
            if (e.outcome == SP_OUTCOME_OK)
                printf("  %3lld/%lld ok   %8.4f ms  %6.1f TFLOP/s  %5.2fx  err %.1e  regs %3d  %s\n", i + 1, cs->n,
                       e.timing.median_ms, sum->flops / e.timing.median_ms * 1e-9, base.median_ms / e.timing.median_ms,
                       e.timing.rel_error, e.res.registers, text ? text : "?");
            else
                printf("  %3lld/%lld %s  %s\n      %s\n", i + 1, cs->n, sp_outcome_name(e.outcome), text ? text : "?", e.detail);
            fflush(stdout);
        }
        if (db && text) {
            sp_result r = {
                .env = &env, .template_name = sp_template_name(t), .template_hash = sp_template_hash(t),
                .problem_key = sum->problem, .config = text, .outcome = e.outcome,
                .detail = e.outcome == SP_OUTCOME_OK ? NULL : e.detail, .timing = e.timing,
                .registers = e.res.registers, .smem_bytes = e.res.smem_static + (int)e.smem_dynamic,
                .spill_bytes = e.res.spill_stores + e.res.spill_loads,
            };
            if (e.outcome != SP_OUTCOME_OK) r.timing.method = b->method;
            if ((st = sp_db_record(db, &r)) != SPTUNE_OK) {
                free(text);
                rc = cli_error(cmd, st);
                break;
            }
        }
        free(text);
        if (e.sticky) {
            fprintf(stderr, "sptune %s: the CUDA context is unusable after this failure; stopping this process "
                            "(results so far are recorded)\n", cmd);
            rc = CLI_FAIL;
            break;
        }
    }
    sp_case_destroy(&kase);
    return rc;
}

static void print_summary(const sp_bench *b, const problem_summary *s)
{
    const char *op = s->op;
    int failed = 0;
    for (int o = 0; o < SP_OUTCOME__COUNT; o++) failed += s->failed[o];
    if (s->ok == 0) {
        printf("%-6s %-8s %-24s no variant passed (%d failed)\n", b->gpu.info.profile, op, s->problem, failed);
        return;
    }
    printf("%-6s %-8s %-24s %9.4f %9.4f %7.2fx %7.1f %7.1e %3d/%-3d %s\n", b->gpu.info.profile, op, s->problem,
           s->best_ms, s->base_ms, s->base_ms / s->best_ms, s->flops / s->best_ms * 1e-9, s->best_err,
           failed, s->ok + failed, s->best);
    for (int o = 1; o < SP_OUTCOME__COUNT; o++)
        if (s->failed[o]) printf("%-6s   %d %s\n", "", s->failed[o], sp_outcome_name((sp_outcome)o));
}

/* Every variant measured passed, and there was at least one. */
static int summary_passed(const problem_summary *s)
{
    for (int o = 0; o < SP_OUTCOME__COUNT; o++)
        if (s->failed[o]) return 0;
    return s->ok > 0;
}

static void print_header(void)
{
    printf("%-6s %-8s %-24s %9s %9s %8s %7s %7s %7s %s\n", "gpu", "op", "problem", "best ms", "cuBLAS",
           "speedup", "TFLOP/s", "err", "failed", "best configuration");
}

int cli_open_db(cli_cmd *cmd, sp_db **db)
{
    char path[4096];
    const char *p = cli_get(cmd, "db");
    sptune_status st;
    *db = NULL;
    if (cli_get(cmd, "no-db")) return CLI_OK;
    if (!p) {
        if ((st = sptune_default_db_path(path, sizeof path)) != SPTUNE_OK) return cli_error(cmd->name, st);
        p = path;
    }
    if ((st = sp_db_open(p, 1, db)) != SPTUNE_OK) return cli_error(cmd->name, st);
    return CLI_OK;
}

int cli_open_bench(cli_cmd *cmd, int ordinal, sp_bench *b)
{
    sp_bench_opts o;
    sp_bench_opts_default(&o);
    long long runs = cli_int(cmd, "runs", 0);
    if (runs < 0) return CLI_USAGE;
    if (runs > 0) o.min_runs = o.max_runs = (int)runs;
    sptune_status st = sp_bench_open(ordinal, &o, b);
    return st == SPTUNE_OK ? CLI_OK : cli_error(cmd->name, st);
}

int cmd_check(cli_cmd *cmd, int npos, char **pos)
{
    sp_gpu_profile gpu;
    sp_template *t = NULL;
    sp_problem prob;
    int ordinal, rc;
    (void)npos;
    /* Options first, so that a usage error reads as one with or without the GPU. */
    long long sample = cli_int(cmd, "sample", 16), seed = cli_int(cmd, "seed", 1), runs = cli_int(cmd, "runs", 0);
    if (sample < 0 || seed < 0 || runs < 0) return CLI_USAGE;
    if (sample == 0) return cli_usage_error(cmd->name, "--sample wants at least 1");
    if (runs > 100000) return cli_usage_error(cmd->name, "--runs %lld is more than 100000", runs);
    if (cli_get(cmd, "config") && (cli_get(cmd, "sample") || cli_get(cmd, "all")))
        return cli_usage_error(cmd->name, "choose one of --config, --sample N, --all");
    const char *shape = cli_get(cmd, "shape");
    if (!shape) return cli_usage_error(cmd->name, "--shape is required (e.g. M=4096,N=4096,K=4096)");
    if ((rc = cli_gpu_target(cmd->name, cli_get(cmd, "gpu"), &gpu, &ordinal))) return rc;
    if ((rc = cli_load_template(cmd->name, pos[0], &t))) return rc;
    sp_configs cs = {0};
    sp_db *db = NULL;
    sp_cache *cache = NULL;
    sp_bench b = {0};
    sptune_status st;
    if ((st = sp_problem_parse(t, shape, &prob)) != SPTUNE_OK) { rc = cli_error(cmd->name, st); goto out; }
    if (cli_get(cmd, "config")) {
        sp_config c;
        if ((rc = cli_pick_config(cmd, t, &gpu, &prob, &c))) goto out;
        if ((st = sp_configs_one(&cs, &c)) != SPTUNE_OK) { rc = cli_error(cmd->name, st); goto out; }
    } else {
        if ((rc = cli_collect_space(cmd->name, t, &gpu, &prob, &cs))) goto out;
        if (!cli_get(cmd, "all")) sp_space_sample(&cs, t, sample, (unsigned long long)seed);
    }
    if (ordinal < 0) {
        fprintf(stderr, "sptune %s: no %s GPU on this machine; without it only 'sptune compile %s --gpu %s' runs\n",
                cmd->name, gpu.info.profile, pos[0], gpu.info.profile);
        rc = CLI_NO_GPU;
        goto out;
    }
    if ((rc = cli_open_db(cmd, &db))) goto out;
    if ((st = sp_cache_open(cli_get(cmd, "cache-dir"), &cache)) != SPTUNE_OK) { rc = cli_error(cmd->name, st); goto out; }
    if ((rc = cli_open_bench(cmd, ordinal, &b))) goto out;
    problem_summary sum;
    rc = measure_problem(cmd->name, &b, t, &prob, &cs, db, cache, 1, &sum);
    printf("\n");
    print_header();
    sum.op = sp_template_name(t);
    print_summary(&b, &sum);
    if (rc == CLI_OK && !summary_passed(&sum)) rc = CLI_FAIL;
out:
    sp_bench_close(&b);
    sp_cache_close(cache);
    sp_db_close(db);
    sp_configs_free(&cs);
    sp_template_free(t);
    return rc;
}

static int run_workload(cli_cmd *cmd, const sp_workload *wl, int n, const int *ordinals, const sp_gpu_profile *gpu,
                        long long sample, long long seed);

/* The main job: every op of the default workload on every GPU found (or the one named). */
int cmd_auto(cli_cmd *cmd, int npos, char **pos)
{
    const char *g = cli_get(cmd, "gpu");
    int count = 0, rc = CLI_OK;
    sptune_status st;
    (void)npos; (void)pos;
    int ordinals[64], n = 0;
    long long sample = cli_int(cmd, "sample", 12), seed = cli_int(cmd, "seed", 1), runs = cli_int(cmd, "runs", 0);
    if (sample < 0 || seed < 0 || runs < 0) return CLI_USAGE;
    if (sample == 0) return cli_usage_error("", "--sample wants at least 1");
    if (runs > 100000) return cli_usage_error("", "--runs %lld is more than 100000", runs);
    sp_tune_budget budget;
    sp_search_kind kind;
    if (!sp_budget_parse(cli_get(cmd, "budget"), &budget))
        return cli_usage_error("", "bad --budget '%s' (examples: 15m, 90s, 2h, 300evals)", cli_get(cmd, "budget"));
    if (cli_get(cmd, "strategy") && !sp_search_parse(cli_get(cmd, "strategy"), &kind))
        return cli_usage_error("", "unknown strategy '%s' (exhaustive, random, descent)", cli_get(cmd, "strategy"));
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
        if ((rc = cli_gpu_target("", g, &named, &ordinal))) return rc;
        if (ordinal >= 0) ordinals[n++] = ordinal;
    }
    sp_workload wl;
    const char *wfile = cli_get(cmd, "workload"), *shard = cli_get(cmd, "shard");
    if ((st = wfile ? sp_workload_load(wfile, &wl) : sp_workload_default(&wl)) != SPTUNE_OK) return cli_error("", st);
    if (shard && (st = sp_workload_shard(&wl, shard)) != SPTUNE_OK) {
        sp_workload_free(&wl);
        return cli_error("", st);
    }
    rc = run_workload(cmd, &wl, n, ordinals, &named, sample, seed);
    sp_workload_free(&wl);
    return rc;
}

/* The main job over workload wl: on the GPUs ordinals[0..n), or compile-only for `named`. */
static int run_workload(cli_cmd *cmd, const sp_workload *wl, int n, const int *ordinals, const sp_gpu_profile *gpu,
                        long long sample, long long seed)
{
    sptune_status st;
    int rc = CLI_OK;
    sp_gpu_profile named = *gpu;
    sp_cache *cache = NULL;
    sp_db *db = NULL;
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
            if ((rc = cli_collect_space("", t, &named, NULL, &cs)) == CLI_OK) {
                sp_space_sample(&cs, t, sample, (unsigned long long)seed);
                int bad = 0;
                for (long long i = 0; i < cs.n; i++) {
                    sp_kernel_src src;
                    sp_cubin cub = {0};
                    if ((st = sp_template_emit(t, &cs.v[i], &named, NULL, &src)) != SPTUNE_OK) { bad++; continue; }
                    if (sp_kernel_build(cache, src.source, src.kernel, named.info.arch, (const char *const *)src.options,
                                        src.noptions, &cub) != SPTUNE_OK) {
                        bad++;
                        fprintf(stderr, "%s\n", sptune_last_error());
                    }
                    sp_cubin_free(&cub);
                    sp_kernel_src_free(&src);
                }
                printf("%-12s %lld variants compiled for %s, %d failed\n", w->op, cs.n - bad, named.info.arch, bad);
                if (bad) rc = CLI_FAIL;
                sp_configs_free(&cs);
            }
            sp_template_free(t);
        }
        sp_cache_close(cache);
        return rc;
    }
    if ((rc = cli_open_db(cmd, &db))) { sp_cache_close(cache); return rc; }
    /* The budget: --budget shared out over the problems (time left over flows to the ones after),
     * else --sample new measurements per problem. Results already recorded cost nothing. */
    sp_tune_budget total;
    sp_tune_opts o;
    sp_tune_opts_default(&o);
    o.seed = (unsigned long long)seed;
    sp_budget_parse(cli_get(cmd, "budget"), &total); /* validated by cmd_auto */
    const char *strategy = cli_get(cmd, "strategy");
    if (strategy) sp_search_parse(strategy, &o.strategy);
    int jobs = n * wl->n, done = 0;
    cli_tuned *tuned = calloc((size_t)(jobs > 0 ? jobs : 1), sizeof *tuned);
    int *bench_of = calloc((size_t)(jobs > 0 ? jobs : 1), sizeof *bench_of);
    const sp_workload_item **item_of = calloc((size_t)(jobs > 0 ? jobs : 1), sizeof *item_of);
    sp_bench benches[64];
    memset(benches, 0, sizeof benches);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int d = 0; d < n && rc == CLI_OK && tuned && bench_of && item_of; d++) {
        sp_bench *b = &benches[d];
        if ((rc = cli_open_bench(cmd, ordinals[d], b))) break;
        for (int k = 0; k < wl->n && rc == CLI_OK; k++) {
            const sp_workload_item *w = &wl->items[k];
            sp_template *t;
            sp_problem p;
            if ((rc = cli_load_template("", w->op, &t))) break;
            o.budget.seconds = 0;
            o.budget.evals = total.seconds > 0 || total.evals > 0 ? 0 : sample;
            if (total.evals > 0) o.budget.evals = total.evals / jobs > 0 ? total.evals / jobs : 1;
            if (total.seconds > 0) {
                struct timespec now;
                clock_gettime(CLOCK_MONOTONIC, &now);
                double left = total.seconds - ((double)(now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) * 1e-9);
                o.budget.seconds = left > 0 ? left / (jobs - done) : 1e-3;
            }
            printf("[%s] %s %s (%s)\n", b->gpu.info.profile, w->op, w->problem, w->why);
            fflush(stdout);
            if ((st = sp_problem_parse(t, w->problem, &p)) != SPTUNE_OK) rc = cli_error("", st);
            else rc = cli_tune_problem("", b, t, &p, db, cache, &o, cli_get(cmd, "quiet") != NULL, &tuned[done]);
            bench_of[done] = d;
            item_of[done++] = w;
            sp_template_free(t);
        }
    }
    printf("\n");
    cli_print_tuned_header();
    for (int i = 0; i < done; i++) {
        char label[160];
        snprintf(label, sizeof label, "%s", item_of[i]->problem);
        cli_print_tuned(benches[bench_of[i]].gpu.info.profile, item_of[i]->op, label, &tuned[i]);
        /* a wrong result is a kernel bug; other failures are the tuner's business */
        if (rc == CLI_OK && (tuned[i].best < 0 || tuned[i].r.failed[SP_OUTCOME_WRONG_RESULT])) rc = CLI_FAIL;
        cli_tuned_free(&tuned[i]);
    }
    for (int d = 0; d < n; d++) sp_bench_close(&benches[d]);
    free(tuned);
    free(bench_of);
    free(item_of);
    sp_db_close(db);
    sp_cache_close(cache);
    return rc;
}
