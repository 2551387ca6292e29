/* What autotuning found, recorded in the user's database (sptune_kernel_autotune's last step): the fastest kernel
 * on the application's own tensors as a result of the problem with the op's own-data kind (ranges' own: twell's
 * gen=2), which the lookup then serves for that problem in this process and the next ones (sp_api_across.h). */
#include "sp_cuda.h"
#include "sp_db.h"
#include "sp_nvrtc.h"
#include "sp_status.h"
#include "sptune_kernel_object.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The environment of a result measured by this process on k's GPU (the tuner's sp_eval_env, whose layer the API
 * does not see). */
static void this_env(const sptune_kernel *k, sp_env *env, char *driver, char *nvrtc, size_t len)
{
    if (sp_cuda_driver_version_text(driver, len) != SPTUNE_OK) snprintf(driver, len, "unknown");
    if (sp_nvrtc_version_text(nvrtc, len) != SPTUNE_OK) snprintf(nvrtc, len, "unknown");
    sp_clear_error();
    memset(env, 0, sizeof *env);
    env->gpu_name = k->gpu.info.name;
    env->gpu_profile = k->gpu.info.profile;
    env->cc_major = k->gpu.info.cc_major;
    env->cc_minor = k->gpu.info.cc_minor;
    env->sm_count = k->gpu.info.sm_count;
    env->driver_version = driver;
    env->nvrtc_version = nvrtc;
    env->sptune_version = sptune_version();
}

sptune_status sp_api_autotune_record(const sptune_kernel *k, const char *db_path, long long tokens, const float *ms,
                                     int runs, double dense_ms, char *where, size_t wlen)
{
    const char *fn = "sptune_kernel_autotune";
    if (where && wlen) where[0] = 0;
    if (!k || !ms || runs < 1) return sp_fail(SPTUNE_ERR_INVALID, "%s: nothing timed to record", fn);
    if (db_path && !*db_path) return SPTUNE_OK;   /* the caller asked for no database */
    sp_template *loaded = NULL;
    const sp_template *t = k->t;
    sptune_status st = SPTUNE_OK;
    if (!t && (st = sp_template_load(k->op, &loaded)) != SPTUNE_OK) return st;
    if (!t) t = loaded;
    double own = 0;
    const int od = sp_template_own_dim(t, &own);
    sp_template_free(loaded);
    if (od < 0) return SPTUNE_OK;   /* the op's data has no own kind: its problems say what the data is */
    sp_problem p = k->want;   /* its dimensions in the template's order */
    if (od >= p.n) return sp_fail(SPTUNE_ERR_INVALID, "%s: the problem %s has no dimension for its kind of data", fn, k->op);
    p.v[od] = own;
    char path[4096];
    if (!db_path) {
        if ((st = sptune_default_db_path(path, sizeof path)) != SPTUNE_OK) return st;
        db_path = path;
    }
    char *key = sp_problem_format(&p);
    char method[160];
    snprintf(method, sizeof method, "autotune;caller-tensors;tokens=%lld;cuda-events;runs=%d;median;l2-flush=no;"
             "verified=no (configurations verified when recorded)", tokens, runs);
    /* ms sorted ascending */
    sp_timing tm = {.runs = runs, .median_ms = ms[runs / 2], .min_ms = ms[0], .max_ms = ms[runs - 1],
                    .p10_ms = ms[runs / 10], .p90_ms = ms[(runs * 9) / 10 < runs ? (runs * 9) / 10 : runs - 1],
                    .baseline_ms = dense_ms > 0 ? dense_ms : -1, .rel_error = -1, .method = method};
    char driver[32], nvrtc[32];
    sp_env env;
    this_env(k, &env, driver, nvrtc, sizeof driver);
    sp_result r = {.env = &env, .template_name = k->op, .template_hash = k->hash, .problem_key = key,
                   .config = k->config, .outcome = SP_OUTCOME_OK, .timing = tm, .registers = -1, .smem_bytes = -1,
                   .spill_bytes = -1};
    sp_db *db = NULL;
    if (!key) st = sp_fail(SPTUNE_ERR_NOMEM, "%s: out of memory", fn);
    if (st == SPTUNE_OK && (st = sp_db_open(db_path, 1, &db)) == SPTUNE_OK) {
        st = sp_db_record(db, &r);
        sp_db_close(db);
    }
    if (st == SPTUNE_OK && where) snprintf(where, wlen, "recorded in %.300s for %.400s", db_path, key);
    free(key);
    return st;
}
