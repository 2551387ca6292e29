/* Measurement workers: a candidate that crashes its process or hangs is recorded (launch_failed,
 * timed_out) and tuning goes on with a fresh worker; a failing initialisation is an error, not a
 * candidate's outcome. Simulated: no GPU. */
#include "sp_space.h"
#include "sp_status.h"
#include "sp_test.h"
#include "sp_worker.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct task_state { int init_calls; int fail_init; } task_state;

/* The configuration's kind from its indices: 0 fine, 1 crashes, 2 hangs, 3 context lost. */
static int kind(const sp_config *c)
{
    unsigned h = 7;
    for (int i = 0; i < c->nparams; i++) h = h * 31 + (unsigned)c->idx[i];
    return h % 11 == 0 ? 1 : h % 13 == 0 ? 2 : h % 17 == 0 ? 3 : 0;
}

static sptune_status task_init(void *ud)
{
    task_state *s = ud;
    s->init_calls++; /* in the child: the parent's copy never changes */
    return s->fail_init ? sp_fail(SPTUNE_ERR_NO_GPU, "simulated: no device in the worker") : SPTUNE_OK;
}

static sptune_status task_eval(void *ud, const sp_config *c, sp_eval *e)
{
    (void)ud;
    memset(e, 0, sizeof *e);
    switch (kind(c)) {
    case 1: abort();
    case 2: for (;;) pause();
    case 3:
        e->outcome = SP_OUTCOME_LAUNCH_FAILED;
        e->sticky = 1;
        snprintf(e->detail, sizeof e->detail, "simulated illegal address");
        return SPTUNE_OK;
    default: break;
    }
    e->outcome = SP_OUTCOME_OK;
    e->timing.runs = 5;
    e->timing.median_ms = e->timing.min_ms = e->timing.max_ms = e->timing.p10_ms = e->timing.p90_ms = 1.0 + c->idx[0];
    e->timing.method = "simulated in a worker";
    e->timing.baseline_ms = -1;
    e->timing.rel_error = 1e-3;
    return SPTUNE_OK;
}

static sptune_status task_baseline(void *ud, sp_eval *e)
{
    (void)ud;
    memset(e, 0, sizeof *e);
    e->outcome = SP_OUTCOME_OK;
    e->timing.median_ms = e->timing.baseline_ms = 0.5;
    e->timing.method = "simulated baseline";
    return SPTUNE_OK;
}

int main(int argc, char **argv)
{
    /* Executed as a worker by the exec-mode test below. */
    if (argc == 2 && strcmp(argv[1], "--serve") == 0) {
        task_state ts = {0, 0};
        sp_worker_task task = {&ts, task_init, task_eval, task_baseline, NULL};
        return sp_worker_serve(&task, SP_WORKER_FD_IN, SP_WORKER_FD_OUT);
    }
    sp_template *t = NULL;
    sp_gpu_profile gpu;
    sp_configs space;
    CHECK_ST(sp_template_load("gemm", &t), SPTUNE_OK);
    CHECK_ST(sp_gpu_profile_named("h100", &gpu), SPTUNE_OK);
    if (!t) return sp_test_done("test_worker");
    CHECK_ST(sp_space_collect(t, &gpu, NULL, &space), SPTUNE_OK);
    /* Enough configurations to meet every kind, few enough for the hangs' timeouts. */
    long long want[4] = {0, 0, 0, 0}, n = 0;
    sp_configs pick = {0};
    for (long long i = 0; i < space.n && n < 40; i++) {
        int k = kind(&space.v[i]);
        if (k == 2 && want[2] >= 2) continue;
        if (k == 0 && want[0] >= 20) continue;
        sp_config *v = realloc(pick.v, (size_t)(pick.n + 1) * sizeof *v);
        if (!v) break;
        pick.v = v;
        pick.v[pick.n++] = space.v[i];
        want[k]++;
        n++;
    }
    CHECK(want[1] > 0 && want[2] > 0 && want[3] > 0);

    task_state ts = {0, 0};
    sp_worker_task task = {&ts, task_init, task_eval, task_baseline, NULL};
    sp_worker *w = NULL;
    CHECK_ST(sp_worker_create(&task, 0.3, &w), SPTUNE_OK);
    sp_tune_backend be = sp_worker_backend(w);
    sp_tune_opts o;
    sp_tune_opts_default(&o);
    o.strategy = SP_SEARCH_EXHAUSTIVE;
    sp_problem p;
    CHECK_ST(sp_problem_parse(t, "M=64,N=64,K=64", &p), SPTUNE_OK);
    sp_tune_result r;
    CHECK_ST(sp_tune_run(t, &p, &pick, &be, &o, &r), SPTUNE_OK);
    CHECK_EQ(r.measured, pick.n);
    CHECK_MSG(r.failed[SP_OUTCOME_LAUNCH_FAILED] == want[1] + want[3], "launch_failed %lld, want %lld",
              r.failed[SP_OUTCOME_LAUNCH_FAILED], want[1] + want[3]);
    CHECK_MSG(r.failed[SP_OUTCOME_TIMED_OUT] == want[2], "timed_out %lld, want %lld", r.failed[SP_OUTCOME_TIMED_OUT], want[2]);
    CHECK(r.best_index >= 0);
    CHECK_MSG(sp_worker_restarts(w) == want[1] + want[2] + want[3], "restarts %lld", sp_worker_restarts(w));
    printf("  %lld configurations: %lld ok, %lld crashed, %lld hung, %lld lost their context; %lld worker restarts\n",
           pick.n, want[0], want[1], want[2], want[3], sp_worker_restarts(w));
    /* The crash's outcome says what happened. */
    sp_eval e;
    for (long long i = 0; i < pick.n; i++)
        if (kind(&pick.v[i]) == 1) {
            CHECK_ST(sp_worker_evaluate(w, &pick.v[i], &e), SPTUNE_OK);
            CHECK(e.outcome == SP_OUTCOME_LAUNCH_FAILED && strstr(e.detail, "signal") != NULL);
            break;
        }
    for (long long i = 0; i < pick.n; i++)
        if (kind(&pick.v[i]) == 0) {
            CHECK_ST(sp_worker_evaluate(w, &pick.v[i], &e), SPTUNE_OK);
            CHECK(e.outcome == SP_OUTCOME_OK && e.timing.method && strcmp(e.timing.method, "simulated in a worker") == 0);
            break;
        }
    /* The baseline is served by the same worker. */
    CHECK_ST(sp_worker_baseline(w, &e), SPTUNE_OK);
    CHECK(e.outcome == SP_OUTCOME_OK && e.timing.median_ms == 0.5 && strcmp(e.timing.method, "simulated baseline") == 0);
    sp_worker_destroy(w);

    /* Executed workers (this program again, as the CLI does with `sptune __worker`): the same
     * outcomes, over the fixed descriptors, and a lost worker is executed afresh. */
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    CHECK(len > 0);
    if (len > 0) {
        self[len] = 0;
        char *args[] = {self, "--serve", NULL};
        sp_worker_task exec_task = {NULL, NULL, task_eval, NULL, args};
        CHECK_ST(sp_worker_create(&exec_task, 2.0, &w), SPTUNE_OK);
        CHECK_ST(sp_worker_baseline(w, &e), SPTUNE_OK);
        CHECK(e.timing.median_ms == 0.5);
        int seen[4] = {0, 0, 0, 0};
        for (long long i = 0; i < pick.n; i++) {
            int k = kind(&pick.v[i]);
            if (seen[k] || k == 2) continue; /* one of each; hangs were covered above */
            seen[k] = 1;
            CHECK_ST(sp_worker_evaluate(w, &pick.v[i], &e), SPTUNE_OK);
            CHECK_MSG(e.outcome == (k == 0 ? SP_OUTCOME_OK : SP_OUTCOME_LAUNCH_FAILED), "kind %d: outcome %d (%s)", k,
                      (int)e.outcome, e.detail);
        }
        CHECK(seen[0] && seen[1]);
        CHECK(sp_worker_restarts(w) >= 1);
        sp_worker_destroy(w);
        /* A program that cannot be executed is refused up front. */
        char *missing[] = {"/nonexistent/sptune", "__worker", NULL};
        sp_worker_task gone = {NULL, NULL, task_eval, NULL, missing};
        CHECK_ST(sp_worker_create(&gone, 1.0, &w), SPTUNE_ERR_NOT_FOUND);
    }

    /* A worker that cannot initialise is an error of the run, reported with its message. */
    task_state bad = {0, 1};
    sp_worker_task bad_task = {&bad, task_init, task_eval, NULL, NULL};
    CHECK_ST(sp_worker_create(&bad_task, 1.0, &w), SPTUNE_OK);
    sptune_status st = sp_worker_evaluate(w, &pick.v[0], &e);
    CHECK(st == SPTUNE_ERR_NO_GPU && strstr(sptune_last_error(), "no device in the worker") != NULL);
    sp_worker_destroy(w);

    free(pick.v);
    sp_configs_free(&space);
    sp_template_free(t);
    return sp_test_done("test_worker");
}
