/* sptune check: verify and time variants of one problem against the baseline, each reported. */
#include "cli.h"
#include "sp_cache.h"
#include "sp_eval.h"
#include "sp_status.h"
#include "sp_str.h"
#include "sp_tune.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The watchdog: a kernel that never ends would block this process for good (variants run here, not in tune's
 * worker), so each step runs under an alarm whose handler says which step and exits; what was recorded before it
 * stays (each result is committed as it is measured). */
#define CHECK_TIMED_OUT 4
static char watchdog_msg[1024];
static size_t watchdog_len;

static void watchdog_fire(int sig)
{
    (void)sig;
    if (write(STDERR_FILENO, watchdog_msg, watchdog_len) < 0) { /* nothing more can be said */ }
    _exit(CHECK_TIMED_OUT);
}

static void watchdog_arm(unsigned seconds, const char *cmd, const char *problem, const char *what)
{
    snprintf(watchdog_msg, sizeof watchdog_msg, "\nsptune %s: %s at %s gave no result within %u s (a kernel that "
             "never ends?): stopped; the results before it are recorded (--timeout sets the limit; sptune tune "
             "measures in a worker it replaces)\n", cmd, what, problem, seconds);
    watchdog_len = strlen(watchdog_msg);
    fflush(stdout);   /* what was printed before the step survives the handler's _exit */
    alarm(seconds);
}

static void watchdog_disarm(void) { alarm(0); }

typedef struct problem_summary {
    const char *op;
    char problem[128];
    char best[512];
    double best_ms, base_ms, best_err, flops, best_bytes;
    double best_energy_j, base_energy_j; /* joules per call; <= 0 not measured */
    int ok, failed[SP_OUTCOME__COUNT];
} problem_summary;

/* Measures configurations cs of t on one problem; records each in db (may be NULL). */
static int measure_problem(const char *cmd, sp_bench *b, sp_template *t, const sp_problem *p,
                           sp_configs *cs, sp_db *db, sp_cache *cache, unsigned timeout, problem_summary *sum)
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
    watchdog_arm(timeout, cmd, sum->problem, "the baseline");
    st = sp_case_time_baseline(&kase, &base);
    watchdog_disarm();
    if (st != SPTUNE_OK) {
        sp_case_destroy(&kase);
        return cli_error(cmd, st);
    }
    sum->base_ms = base.median_ms;
    sum->base_energy_j = base.energy_j;
    char bj[32];
    cli_joules(base.energy_j, bj, sizeof bj);
    printf("%s %s on %s: baseline %s %.4f ms (%.1f TFLOP/s), %s J per call%s%s\n", sp_template_name(t), sum->problem,
           b->gpu.info.name, kase.ops->baseline_name, base.median_ms, sum->flops / base.median_ms * 1e-9, bj,
           b->nvml ? "" : ": ", b->nvml ? "" : b->energy_why);
    sp_env env;
    sp_eval_env(&b->gpu, &env);
    int rc = CLI_OK;
    for (long long i = 0; i < cs->n; i++) {
        char *text = sp_config_format(t, &cs->v[i]);
        sp_eval e;
        watchdog_arm(timeout, cmd, sum->problem, text ? text : "a variant");
        st = sp_eval_variant(&kase, t, &cs->v[i], cache, &e);
        watchdog_disarm();
        if (st != SPTUNE_OK) {
            free(text);
            rc = cli_error(cmd, st);
            break;
        }
        e.timing.baseline_ms = base.median_ms;
        e.timing.baseline_energy_j = base.energy_j;
        if (e.outcome == SP_OUTCOME_OK) {
            sum->ok++;
            if (e.timing.median_ms < sum->best_ms) {
                sum->best_ms = e.timing.median_ms;
                sum->best_energy_j = e.timing.energy_j;
                sum->best_err = e.timing.rel_error;
                sum->best_bytes = sp_case_bytes(&kase);
                snprintf(sum->best, sizeof sum->best, "%s", text ? text : "?");
            }
        } else {
            sum->failed[e.outcome]++;
        }
        double bytes = sp_case_bytes(&kase);
        char gbs[32] = "";
        if (bytes > 0) snprintf(gbs, sizeof gbs, "%6.0f GB/s  ", bytes / e.timing.median_ms * 1e-6);
        char ej[32];
        cli_joules(e.timing.energy_j, ej, sizeof ej);
        if (e.outcome == SP_OUTCOME_OK)
            printf("  %3lld/%lld ok   %8.4f ms  %6.1f TFLOP/s  %s%5.2fx  %s J  err %.1e  regs %3d  %s\n", i + 1,
                   cs->n, e.timing.median_ms, sum->flops / e.timing.median_ms * 1e-9, gbs,
                   base.median_ms / e.timing.median_ms, ej, e.timing.rel_error, e.res.registers, text ? text : "?");
        else
            printf("  %3lld/%lld %s  %s\n      %s\n", i + 1, cs->n, sp_outcome_name(e.outcome), text ? text : "?", e.detail);
        fflush(stdout);
        if (db && text && (st = sp_tune_record(db, &env, t, sum->problem, text, &e, base.median_ms, b->method)) != SPTUNE_OK) {
            free(text);
            rc = cli_error(cmd, st);
            break;
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
    char gbs[32] = "-";
    if (s->best_bytes > 0) snprintf(gbs, sizeof gbs, "%.0f", s->best_bytes / s->best_ms * 1e-6);
    char j[2][32];
    cli_joules(s->best_energy_j, j[0], sizeof j[0]);
    cli_joules(s->base_energy_j, j[1], sizeof j[1]);
    printf("%-6s %-8s %-24s %9.4f %9.4f %7.2fx %7.1f %6s %9s %9s %7.1e %3d/%-3d %s\n", b->gpu.info.profile, op,
           s->problem, s->best_ms, s->base_ms, s->base_ms / s->best_ms, s->flops / s->best_ms * 1e-9, gbs, j[0], j[1],
           s->best_err, failed, s->ok + failed, s->best);
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
    printf("%-6s %-8s %-24s %9s %9s %8s %7s %6s %9s %9s %7s %7s %s\n", "gpu", "op", "problem", "best ms", "cuBLAS",
           "speedup", "TFLOP/s", "GB/s", "J/call", "cuBLAS J", "err", "failed", "best configuration");
}

/* The configurations --config lists (';'-separated) that are valid for problem p; those that are not
 * are said and skipped. A list where none is valid is a usage error. */
static int listed_configs(cli_cmd *cmd, sp_template *t, const sp_gpu_profile *gpu, const sp_problem *p,
                          const char *shape, sp_configs *cs)
{
    char *list = sp_strdup(cli_get(cmd, "config"));
    if (!list) return cli_error(cmd->name, sp_fail(SPTUNE_ERR_NOMEM, "out of memory"));
    int rc = CLI_OK;
    char *save = NULL;
    for (char *text = strtok_r(list, ";", &save); text && rc == CLI_OK; text = strtok_r(NULL, ";", &save)) {
        sp_config c;
        int ok = 0;
        char *why = NULL;
        sptune_status st = sp_config_parse(t, text, &c);
        if (st == SPTUNE_OK) st = sp_template_check(t, &c, gpu, p, &ok, &why);
        if (st != SPTUNE_OK) rc = cli_error(cmd->name, st);
        else if (!ok) fprintf(stderr, "sptune %s: %s is not valid for %s on %s (skipped): %s\n", cmd->name, text, shape,
                              gpu->info.profile, why ? why : "constraint failed");
        else if (sp_configs_push(cs, &c)) rc = cli_error(cmd->name, sp_fail(SPTUNE_ERR_NOMEM, "out of memory"));
        free(why);
    }
    free(list);
    if (rc == CLI_OK && cs->n == 0)
        rc = cli_usage_error(cmd->name, "no configuration of --config is valid for %s", shape);
    return rc;
}

int cmd_check(cli_cmd *cmd, int npos, char **pos)
{
    sp_gpu_profile gpu;
    sp_template *t = NULL;
    int ordinal, rc;
    (void)npos;
    /* Options first, so that a usage error reads as one with or without the GPU. */
    long long sample = cli_int(cmd, "sample", 16), seed = cli_int(cmd, "seed", 1), runs = cli_int(cmd, "runs", 0);
    long long timeout = cli_int(cmd, "timeout", 120);
    if (sample < 0 || seed < 0 || runs < 0 || timeout < 0) return CLI_USAGE;
    if (timeout < 1 || timeout > 86400) return cli_usage_error(cmd->name, "--timeout wants 1 to 86400 seconds");
    if (sample == 0) return cli_usage_error(cmd->name, "--sample wants at least 1");
    if (runs > 100000) return cli_usage_error(cmd->name, "--runs %lld is more than 100000", runs);
    if (cli_get(cmd, "config") && (cli_get(cmd, "sample") || cli_get(cmd, "all")))
        return cli_usage_error(cmd->name, "choose one of --config, --sample N, --all");
    const char *shapes = cli_get(cmd, "shape");
    if (!shapes) return cli_usage_error(cmd->name, "--shape is required (e.g. M=4096,N=4096,K=4096)");
    struct sigaction sa;   /* the watchdog's handler, armed for each step */
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = watchdog_fire;
    sigaction(SIGALRM, &sa, NULL);
    if ((rc = cli_gpu_target(cmd->name, cli_get(cmd, "gpu"), 1, &gpu, &ordinal))) return rc;
    if ((rc = cli_load_template(cmd->name, pos[0], &t))) return rc;
    sp_db *db = NULL;
    sp_cache *cache = NULL;
    sp_bench b = {0};
    sptune_status st;
    char *list = sp_strdup(shapes), *save = NULL;
    problem_summary *sums = NULL;
    int nsum = 0, opened = 0;
    if (!list) { rc = cli_error(cmd->name, sp_fail(SPTUNE_ERR_NOMEM, "out of memory")); goto out; }
    /* several problems, ';'-separated, measured one after the other in this process */
    for (char *shape = strtok_r(list, ";", &save); shape && rc == CLI_OK; shape = strtok_r(NULL, ";", &save)) {
        sp_problem prob;
        sp_configs cs = {0};
        if ((st = sp_problem_parse(t, shape, &prob)) != SPTUNE_OK) { rc = cli_error(cmd->name, st); break; }
        if (cli_get(cmd, "config")) {
            rc = listed_configs(cmd, t, &gpu, &prob, shape, &cs);
        } else if (cli_get(cmd, "all")) {
            rc = cli_collect_space(cmd->name, t, &gpu, &prob, &cs);
        } else {
            rc = cli_draw_space(cmd->name, t, &gpu, &prob, sample, (unsigned long long)seed, &cs);
        }
        if (rc == CLI_OK && !opened && (rc = cli_open_measurement(cmd, pos[0], &gpu, ordinal, &db, &cache, &b)) == CLI_OK)
            opened = 1;
        problem_summary *grown = rc == CLI_OK ? realloc(sums, (size_t)(nsum + 1) * sizeof *sums) : NULL;
        if (rc == CLI_OK && !grown) rc = cli_error(cmd->name, sp_fail(SPTUNE_ERR_NOMEM, "out of memory"));
        if (rc == CLI_OK) {
            sums = grown;
            rc = measure_problem(cmd->name, &b, t, &prob, &cs, db, cache, (unsigned)timeout, &sums[nsum]);
            sums[nsum++].op = sp_template_name(t);
        }
        sp_configs_free(&cs);
    }
    if (nsum > 0) {
        printf("\n");
        print_header();
        for (int i = 0; i < nsum; i++) {
            print_summary(&b, &sums[i]);
            if (rc == CLI_OK && !summary_passed(&sums[i])) rc = CLI_FAIL;
        }
    }
out:
    free(sums);
    free(list);
    sp_bench_close(&b);
    sp_cache_close(cache);
    sp_db_close(db);
    sp_template_free(t);
    return rc;
}
