/* Compiling ahead (tuner/sp_prebuild.h): builders forked over a space put every configuration
 * in the kernel cache, so that the measuring side then finds them there; builders stopped
 * midway leave a cache that still works. No GPU: NVRTC only. */
#include "sp_cache.h"
#include "sp_eval.h"
#include "sp_prebuild.h"
#include "sp_space.h"
#include "sp_status.h"
#include "sp_test.h"
#include "sp_variant.h"

#include <stdio.h>

int main(void)
{
    sp_template *t = NULL;
    sp_gpu_profile gpu;
    sp_configs space;
    sp_problem p;
    sp_cache *cache = NULL;
    CHECK_ST(sp_template_load("gemm", &t), SPTUNE_OK);
    CHECK_ST(sp_gpu_profile_named("h100", &gpu), SPTUNE_OK);
    CHECK_ST(sp_cache_open(sp_test_tmpdir("test_prebuild"), &cache), SPTUNE_OK);
    if (!t || !cache) return sp_test_done("test_prebuild");
    CHECK_ST(sp_problem_parse(t, "M=100,N=72,K=40", &p), SPTUNE_OK);
    CHECK_ST(sp_space_collect(t, &gpu, &p, &space), SPTUNE_OK);
    /* for the hint below: a configuration, two one parameter away from it, and one further */
    sp_configs near = {0};
    if (space.n > 0) {
        sp_configs_push(&near, &space.v[0]);
        int one = 0, far = 0;
        for (long long i = 1; i < space.n && (one < 2 || !far); i++) {
            const int apart = sp_config_distance(&space.v[i], &space.v[0]);
            if (apart == 1 && one < 2 && ++one) sp_configs_push(&near, &space.v[i]);
            else if (apart >= 3 && !far && ++far) sp_configs_push(&near, &space.v[i]);
        }
    }
    CHECK_EQ(near.n, 4);
    CHECK_ST(sp_space_sample(&space, t, 4, 7), SPTUNE_OK);
    CHECK(sp_prebuild_default_jobs() >= 1 && sp_prebuild_default_jobs() <= 32);

    /* The control: a cache nothing was built into does not serve configuration 0. */
    {
        char other[1100];
        snprintf(other, sizeof other, "%s/empty", sp_test_tmpdir("test_prebuild.control"));
        sp_cache *empty = NULL;
        sp_kernel_src src;
        sp_cubin cub;
        CHECK_ST(sp_cache_open(other, &empty), SPTUNE_OK);
        CHECK_ST(sp_variant_build(t, &space.v[0], &gpu, &p, empty, &src, &cub), SPTUNE_OK);
        CHECK(!cub.from_cache);
        sp_kernel_src_free(&src);
        sp_cubin_free(&cub);
        sp_cache_close(empty);
    }

    /* Two builders over the whole (sampled) space, waited for: everything is then a cache hit. */
    sp_prebuild *pb = NULL;
    CHECK_ST(sp_prebuild_start(t, &gpu, &p, &space, SP_SEARCH_EXHAUSTIVE, 1, 0, cache, 2, &pb), SPTUNE_OK);
    sp_prebuild_wait(pb);
    for (long long i = 0; i < space.n; i++) {
        sp_kernel_src src;
        sp_cubin cub;
        CHECK_ST(sp_variant_build(t, &space.v[i], &gpu, &p, cache, &src, &cub), SPTUNE_OK);
        CHECK_MSG(cub.from_cache, "configuration %lld was not built ahead", i);
        CHECK(cub.res.registers > 0);
        sp_kernel_src_free(&src);
        sp_cubin_free(&cub);
    }

    /* Stopped at once, with a limit, in descent's order: no error, and the cache still serves. */
    CHECK_ST(sp_prebuild_start(t, &gpu, &p, &space, SP_SEARCH_DESCENT, 3, 2, cache, 4, &pb), SPTUNE_OK);
    sp_prebuild_stop(pb);
    sp_prebuild_stop(NULL);
    sp_prebuild_wait(NULL);
    sp_kernel_src src;
    sp_cubin cub;
    CHECK_ST(sp_variant_build(t, &space.v[0], &gpu, &p, cache, &src, &cub), SPTUNE_OK);
    CHECK(cub.from_cache);
    sp_kernel_src_free(&src);
    sp_cubin_free(&cub);

    /* A hint (the tuner's best so far): after the predicted order (here only its first), the builders build the
     * configurations one parameter away from it, and not the others. */
    if (near.n == 4) {
        char dir[1100];
        snprintf(dir, sizeof dir, "%s/hint", sp_test_tmpdir("test_prebuild.hint"));
        sp_cache *fresh = NULL;
        CHECK_ST(sp_cache_open(dir, &fresh), SPTUNE_OK);
        CHECK_ST(sp_prebuild_start(t, &gpu, &p, &near, SP_SEARCH_EXHAUSTIVE, 1, 1, fresh, 2, &pb), SPTUNE_OK);
        sp_prebuild_hint(pb, 0);
        sp_prebuild_wait(pb);
        for (long long i = 0; i < near.n; i++) {
            CHECK_ST(sp_variant_build(t, &near.v[i], &gpu, &p, fresh, &src, &cub), SPTUNE_OK);
            CHECK_MSG(cub.from_cache == (i < 3), "configuration %lld (%s) %s", i, i < 3 ? "near the hint" : "far",
                      cub.from_cache ? "built ahead" : "not built ahead");
            sp_kernel_src_free(&src);
            sp_cubin_free(&cub);
        }
        sp_cache_close(fresh);
    }
    sp_configs_free(&near);

    /* Without a cache there is nowhere to build to. */
    CHECK_ST(sp_prebuild_start(t, &gpu, &p, &space, SP_SEARCH_RANDOM, 1, 0, NULL, 2, &pb), SPTUNE_ERR_INVALID);
    CHECK(pb == NULL);

    sp_configs_free(&space);
    sp_cache_close(cache);
    sp_template_free(t);
    return sp_test_done("test_prebuild");
}
