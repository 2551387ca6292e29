#include "sp_eval.h"
#include "sp_cuda.h"
#include "sp_status.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

static void fail(sp_eval *e, sp_outcome o)
{
    e->outcome = o;
    snprintf(e->detail, sizeof e->detail, "%s", sptune_last_error());
}

/* After a CUDA failure: is the context still usable? A faulting kernel leaves a sticky error
 * that every later call returns; a refused launch (bad geometry, too many resources) does not. */
static int context_lost(void)
{
    const sp_cuda_api *cu;
    return sp_cuda_load(&cu) != SPTUNE_OK || cu->CtxSynchronize() != CUDA_SUCCESS;
}

sptune_status sp_eval_variant(sp_case *cs, sp_template *t, const sp_config *c, sp_cache *cache, sp_eval *out)
{
    memset(out, 0, sizeof *out);
    out->timing.baseline_ms = -1;
    out->timing.rel_error = -1;
    const sp_gpu_profile *gpu = &cs->bench->gpu;
    sp_kernel_src src;
    sp_cubin cub = {0};
    sp_kernel k = {0};
    int ok = 0;
    char *why = NULL;
    sptune_status st = sp_template_check(t, c, gpu, &cs->problem, &ok, &why);
    if (st != SPTUNE_OK) return st; /* a broken template is not the candidate's fault */
    if (!ok) {
        out->outcome = SP_OUTCOME_INVALID;
        snprintf(out->detail, sizeof out->detail, "%s", why ? why : "constraint failed");
        free(why);
        return SPTUNE_OK;
    }
    if ((st = sp_template_emit(t, c, gpu, &cs->problem, &src)) != SPTUNE_OK) return st;
    st = sp_kernel_build(cache, src.source, src.stage[0].kernel, gpu->info.arch, (const char *const *)src.options,
                         src.noptions, &cub);
    if (st != SPTUNE_OK) {
        fail(out, SP_OUTCOME_COMPILE_FAILED);
        goto done;
    }
    out->res = cub.res;
    out->smem_dynamic = src.stage[0].smem;
    out->from_cache = cub.from_cache;
    if ((st = sp_kernel_load(&cub, &src, &k)) != SPTUNE_OK) {
        fail(out, SP_OUTCOME_LAUNCH_FAILED);
        goto done;
    }
    if ((st = sp_case_bind(cs, t, c)) != SPTUNE_OK) {
        fail(out, SP_OUTCOME_INVALID);
        goto done;
    }
    st = sp_case_check(cs, &k, &out->timing.rel_error);
    if (st == SPTUNE_ERR_WRONG_RESULT) {
        fail(out, SP_OUTCOME_WRONG_RESULT);
        goto done;
    }
    if (st != SPTUNE_OK) {
        fail(out, SP_OUTCOME_LAUNCH_FAILED);
        out->sticky = st == SPTUNE_ERR_CUDA && context_lost();
        goto done;
    }
    double rel = out->timing.rel_error;
    if ((st = sp_case_time(cs, &k, &out->timing)) != SPTUNE_OK) {
        fail(out, SP_OUTCOME_LAUNCH_FAILED);
        out->sticky = st == SPTUNE_ERR_CUDA && context_lost();
        goto done;
    }
    out->timing.rel_error = rel;
    out->outcome = SP_OUTCOME_OK;
done:
    /* Candidate failures are outcomes, not errors of the evaluation. */
    if (k.module && !out->sticky) sp_kernel_unload(&k);
    sp_cubin_free(&cub);
    sp_kernel_src_free(&src);
    return SPTUNE_OK;
}

void sp_eval_env(const sp_gpu_profile *gpu, sp_env *env)
{
    static _Thread_local char driver[32], nvrtc[32];
    if (sp_cuda_driver_version_text(driver, sizeof driver) != SPTUNE_OK) snprintf(driver, sizeof driver, "unknown");
    if (sp_nvrtc_version_text(nvrtc, sizeof nvrtc) != SPTUNE_OK) snprintf(nvrtc, sizeof nvrtc, "unknown");
    memset(env, 0, sizeof *env);
    env->gpu_name = gpu->info.name;
    env->gpu_profile = gpu->info.profile;
    env->cc_major = gpu->info.cc_major;
    env->cc_minor = gpu->info.cc_minor;
    env->sm_count = gpu->info.sm_count;
    env->driver_version = driver;
    env->nvrtc_version = nvrtc;
    env->sptune_version = sptune_version();
}
