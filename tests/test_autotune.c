/* Autotuning on the caller's data (sptune_kernel_autotune), what runs without a GPU: the candidates it times are
 * the recorded configurations nearest the problem, distinct, valid for it, taking the fixed parameters, best first
 * with the served one first; nothing recorded, no candidates; what it found recorded in the user's database as a
 * result on the caller's own tensors (gen=2) and served from then on, over the shipped results (nothing recorded
 * with no database, or for an op whose data has no such kind); bad arguments refused before any GPU question; and
 * without a GPU it says so; the choice among the timed candidates (sp_api_autotune_choose) with times made up: the
 * served kernel kept unless the fastest other beats it head to head by the margin, the dense layer's time kept,
 * candidates needing more workspace passed over, a failing timer's error returned with nothing kept. (The GPU's
 * timing runs in test_gpu_api.) */
#include "sp_status.h"
#include "sp_test.h"
#include "sptune.h"
#include "sptune_kernel_object.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* sp_api_autotune_record, the last step of autotuning, with times made up: what the lookup serves afterwards. */
static void check_record(const sptune_kernel_request *base, const char *other)
{
    char db[600], where[768];
    snprintf(db, sizeof db, "%s/autotune.db", sp_test_tmpdir("test_autotune"));
    remove(db);
    sptune_kernel_request rq = *base;
    rq.db_path = db;
    rq.fixed = other;   /* a configuration the shipped results do not serve here */
    sptune_kernel *k = NULL, *again = NULL;
    CHECK_ST(sptune_kernel_get(&rq, &k), SPTUNE_OK);
    if (!k) return;
    const float ms[5] = {0.50f, 0.51f, 0.52f, 0.53f, 0.60f};
    CHECK_ST(sp_api_autotune_record(k, db, 12000, ms, 5, 0.9, where, sizeof where), SPTUNE_OK);
    CHECK_MSG(strstr(where, "recorded in") && strstr(where, ",gen=2,"), "%s", where);
    rq.fixed = NULL;
    CHECK_ST(sptune_kernel_get(&rq, &again), SPTUNE_OK);
    const char *detail = "";
    double expected = 0, baseline = 0;
    if (again) {
        CHECK_MSG(!strcmp(sptune_kernel_config(again), other), "served %s", sptune_kernel_config(again));
        CHECK_EQ(sptune_kernel_origin(again, &detail), SPTUNE_ORIGIN_EXACT);
        CHECK_MSG(strstr(detail, "measured on the application's own tensors (gen=2"), "%s", detail);
        CHECK_ST(sptune_kernel_expected(again, &expected, &baseline), SPTUNE_OK);
        CHECK_MSG(expected > 0.519 && expected < 0.521 && baseline > 0.899 && baseline < 0.901, "%g %g", expected, baseline);
    }
    sptune_kernel_free(again);
    /* no dense layer timed (it needed more workspace than the caller had): recorded all the same, compared by time */
    const float faster[5] = {0.40f, 0.41f, 0.42f, 0.43f, 0.44f};
    CHECK_ST(sp_api_autotune_record(k, db, 12000, faster, 5, -1, where, sizeof where), SPTUNE_OK);
    CHECK_ST(sptune_kernel_get(&rq, &again), SPTUNE_OK);
    if (again) {
        CHECK_MSG(!strcmp(sptune_kernel_config(again), other), "served %s", sptune_kernel_config(again));
        CHECK_ST(sptune_kernel_expected(again, &expected, &baseline), SPTUNE_OK);
        CHECK_MSG(expected > 0.419 && expected < 0.421 && baseline < 0, "%g %g", expected, baseline);
        sptune_kernel_origin(again, &detail);
        CHECK_MSG(strstr(detail, "own tensors (gen=2,spread=0.5)"), "%s", detail);
    }
    sptune_kernel_free(again);
    /* no database asked for: nothing recorded */
    CHECK_ST(sp_api_autotune_record(k, "", 12000, ms, 5, 0.9, where, sizeof where), SPTUNE_OK);
    CHECK_EQ(where[0], 0);
    sptune_kernel_free(k);
    /* an op whose problems say what their data is (gemm): nothing recorded */
    sptune_kernel_request g = {.op = "gemm", .problem = "M=256,N=256,K=256", .gpu = "h200", .db_path = "",
                               .cache_dir = base->cache_dir};
    CHECK_ST(sptune_kernel_get(&g, &k), SPTUNE_OK);
    if (k) CHECK_ST(sp_api_autotune_record(k, db, 256, ms, 5, -1, where, sizeof where), SPTUNE_OK);
    CHECK_EQ(where[0], 0);
    sptune_kernel_free(k);
    /* the problem asked with a generator's kind by name: the result on the application's tensors still serves it
       (a problem's kinds of data are one problem) */
    rq.problem = "M=16384,D=2048,F=5632,nnz=40,gen=1";
    rq.db_path = db;
    CHECK_ST(sptune_kernel_get(&rq, &again), SPTUNE_OK);
    if (again) CHECK_MSG(!strcmp(sptune_kernel_config(again), other), "%s", sptune_kernel_config(again));
    sptune_kernel_free(again);
}

/* Made-up times: the served configuration `served`, the candidate `fast` (first round, then head to head), the
 * dense layer (hot=8), the dense layer on cuBLAS in the served configuration's place (cublas_ms) and the rest; fail:
 * the call that fails (0: none). */
typedef struct {
    const char *served, *fast;
    double served_ms, fast_ms, duel_fast_ms, duel_served_ms, dense_ms, other_ms;
    int calls, fail, duels;
    double cublas_ms;
} fake_times;

static sptune_status fake_time(void *ctx, sptune_kernel *k, double *ms, float *t, sptune_kernel *other,
                               double *other_ms, float *other_t)
{
    fake_times *f = ctx;
    const char *c = sptune_kernel_config(k);
    if (++f->calls == f->fail) return sp_fail(SPTUNE_ERR_CUDA, "made-up launch failure");
    if (other) {
        f->duels++;
        CHECK_MSG(!strcmp(sptune_kernel_config(other), f->served), "head to head against %s", sptune_kernel_config(other));
        *ms = f->duel_fast_ms;
        *other_ms = f->duel_served_ms;
        for (int r = 0; r < SP_AUTOTUNE_RUNS; r++) other_t[r] = (float)*other_ms;
    } else {
        *ms = k->dense ? f->cublas_ms : !strcmp(c, f->served) ? f->served_ms : f->fast && !strcmp(c, f->fast) ? f->fast_ms
            : strstr(c, ",hot=8,") ? f->dense_ms : f->other_ms;
    }
    for (int r = 0; r < SP_AUTOTUNE_RUNS; r++) t[r] = (float)*ms;
    return SPTUNE_OK;
}

static void check_choose(const sptune_kernel_request *req)
{
    char *configs[8];
    int n = 0;
    sptune_kernel *served = NULL;
    CHECK_ST(sp_api_ranked_configs(req, 4, configs, &n), SPTUNE_OK);
    CHECK_ST(sptune_kernel_get(req, &served), SPTUNE_OK);
    if (!served || n < 2) goto done;
    configs[n++] = strdup("hot=8");
    const char *fast = configs[1];
    sp_autotune_choice ch;
    /* the served kernel fastest from the start: kept, no head-to-head; the dense layer's time kept for the record */
    fake_times f = {sptune_kernel_config(served), fast, 1.0, 1.1, 0, 0, 2.0, 1.2, 0, 0, 0, 3.0};
    sp_autotune_timer timer = {fake_time, &f};
    CHECK_ST(sp_api_autotune_choose(req, served, configs, n, (size_t)1 << 40, &timer, &ch), SPTUNE_OK);
    CHECK(ch.best == served && ch.kept && f.duels == 0 && ch.served_ms < 0 && ch.best_ms == 1.0);
    CHECK_MSG(ch.dense_ms == 2.0 && ch.timed == f.calls && ch.timed >= 3, "dense %g, timed %d of %d", ch.dense_ms, ch.timed,
              f.calls);
    /* a candidate ahead in the first round, within the margin head to head: the served kernel kept, at its time then */
    fake_times g = f;
    g.calls = 0;
    g.fast_ms = 0.97;
    g.duel_fast_ms = 0.99;
    g.duel_served_ms = 1.0;
    timer.ctx = &g;
    CHECK_ST(sp_api_autotune_choose(req, served, configs, n, (size_t)1 << 40, &timer, &ch), SPTUNE_OK);
    CHECK(ch.best == served && ch.kept && g.duels == 1 && ch.best_ms == 1.0 && ch.best_t[0] == 1.0f);
    CHECK(ch.challenger_ms == 0.99 && ch.served_ms == 1.0);
    /* beaten by more than the margin head to head: the candidate, at its head-to-head time */
    g.calls = g.duels = 0;
    g.duel_fast_ms = 0.95;
    CHECK_ST(sp_api_autotune_choose(req, served, configs, n, (size_t)1 << 40, &timer, &ch), SPTUNE_OK);
    CHECK(ch.best != served && !ch.kept && g.duels == 1 && ch.best_ms == 0.95 && ch.best_t[0] == 0.95f);
    if (ch.best != served) {
        CHECK_MSG(!strcmp(sptune_kernel_config(ch.best), fast), "%s", sptune_kernel_config(ch.best));
        sptune_kernel_free(ch.best);
    }
    /* a failing launch: its error, nothing kept (the served kernel stays the caller's) */
    g.calls = g.duels = 0;
    g.fail = 2;
    CHECK_ST(sp_api_autotune_choose(req, served, configs, n, (size_t)1 << 40, &timer, &ch), SPTUNE_ERR_CUDA);
    CHECK(ch.best == NULL);
    /* the head-to-head failing after a candidate led: its error, the candidate freed */
    g.calls = 0;
    g.fail = 0;
    CHECK_ST(sp_api_autotune_choose(req, served, configs, n, (size_t)1 << 40, &timer, &ch), SPTUNE_OK);
    const int first_round = g.calls - 1;
    if (ch.best != served) sptune_kernel_free(ch.best);
    g.calls = g.duels = 0;
    g.fail = first_round + 1;
    CHECK_ST(sp_api_autotune_choose(req, served, configs, n, (size_t)1 << 40, &timer, &ch), SPTUNE_ERR_CUDA);
    CHECK(ch.best == NULL && g.duels == 0);
    /* the dense layer on cuBLAS fastest, and by more than the margin head to head: it, at its time; the dense time
       kept for the record beside the served configuration's own */
    g.calls = g.duels = 0;
    g.fail = 0;
    g.cublas_ms = 0.5;
    g.duel_fast_ms = 0.5;
    CHECK_ST(sp_api_autotune_choose(req, served, configs, n, (size_t)1 << 40, &timer, &ch), SPTUNE_OK);
    CHECK_MSG(ch.best != served && ch.best && ch.best->dense && ch.dense_ms == 0.5 && ch.served_t[0] == 1.0f,
              "dense %g", ch.dense_ms);
    if (ch.best != served) {
        CHECK(!strcmp(sptune_kernel_config(ch.best), sptune_kernel_config(served)));
        sptune_kernel_free(ch.best);
    }
    g.cublas_ms = 3.0;
    /* a workspace the served kernel does not fit: refused before any timing */
    g.calls = 0;
    g.fail = 0;
    CHECK_ST(sp_api_autotune_choose(req, served, configs, n, 1, &timer, &ch), SPTUNE_ERR_INVALID);
    CHECK_MSG(strstr(sptune_last_error(), "the workspace has 1 bytes") && g.calls == 0, "%s", sptune_last_error());
done:
    for (int i = 0; i < n; i++) free(configs[i]);
    sptune_kernel_free(served);
}

int main(void)
{
    const char *cache = sp_test_cache_dir("test_autotune");
    sptune_kernel_request req = {.op = "twell-ffn", .problem = "M=16384,D=2048,F=5632,nnz=40", .gpu = "h200",
                                 .db_path = "", .cache_dir = cache};
    char *configs[8];
    int n = -1;
    CHECK_ST(sp_api_ranked_configs(&req, 4, configs, &n), SPTUNE_OK);
    CHECK_MSG(n >= 2 && n <= 4, "%d candidates from the shipped results", n);
    sptune_kernel *k = NULL;
    CHECK_ST(sptune_kernel_get(&req, &k), SPTUNE_OK);
    if (k && n > 0) CHECK_MSG(!strcmp(configs[0], sptune_kernel_config(k)), "first %s, served %s", configs[0],
                              sptune_kernel_config(k));
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++) CHECK_MSG(strcmp(configs[i], configs[j]) != 0, "candidate %d twice: %s", i, configs[i]);
    if (n >= 2) check_record(&req, configs[1]);
    check_choose(&req);
    for (int i = 0; i < n; i++) free(configs[i]);
    sptune_kernel_free(k);

    /* fixed parameters: only candidates taking them */
    req.fixed = "hot=8";
    CHECK_ST(sp_api_ranked_configs(&req, 4, configs, &n), SPTUNE_OK);
    CHECK(n >= 1);
    for (int i = 0; i < n; i++) {
        CHECK_MSG(strstr(configs[i], ",hot=8") != NULL, "%s", configs[i]);
        free(configs[i]);
    }
    /* nothing recorded: nothing to time but the default */
    req.fixed = NULL;
    req.ignore_shipped = 1;
    CHECK_ST(sp_api_ranked_configs(&req, 4, configs, &n), SPTUNE_OK);
    CHECK_EQ(n, 0);
    req.ignore_shipped = 0;

    /* refusals before any GPU question, then the GPU's absence said */
    const unsigned long long tensors[5] = {0x1000, 0x2000, 0x3000, 0x4000, 0x5000};
    sptune_kernel *out = (sptune_kernel *)&out;
    CHECK_ST(sptune_kernel_autotune(&req, NULL, 16, tensors, 0, 0, NULL), SPTUNE_ERR_INVALID);
    CHECK_ST(sptune_kernel_autotune(NULL, NULL, 16, tensors, 0, 0, &out), SPTUNE_ERR_INVALID);
    CHECK(out == NULL);
    CHECK_ST(sptune_kernel_autotune(&req, NULL, 16, NULL, 0, 0, &out), SPTUNE_ERR_INVALID);
    CHECK_ST(sptune_kernel_autotune(&req, NULL, 0, tensors, 0, 0, &out), SPTUNE_ERR_INVALID);
    CHECK_MSG(strstr(sptune_last_error(), "tokens=0"), "%s", sptune_last_error());
    sptune_kernel_request bad = req;
    bad.op = "no-such-op";
    CHECK_ST(sptune_kernel_autotune(&bad, NULL, 16, tensors, 0, 0, &out), SPTUNE_ERR_NOT_FOUND);
    int gpus = 0;
    if (sptune_gpu_count(&gpus) != SPTUNE_OK) {
        CHECK_ST(sptune_kernel_autotune(&req, NULL, 16, tensors, 0x100000, 1 << 30, &out), SPTUNE_ERR_NO_GPU);
        CHECK(out == NULL);
    }
    return sp_test_done("test_autotune");
}
