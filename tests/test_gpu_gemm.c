/* GPU test: gemm variants verified against cuBLAS (fp32 reference, spot-checked in fp64) on
 * random data with poisoned outputs, at shapes with tails in every dimension and K % 8 != 0.
 * Without a GPU it skips and says how many cases it did not run. */
#include "sp_cache.h"
#include "sp_eval.h"
#include "sp_space.h"
#include "sp_status.h"
#include "sp_test.h"

#include <stdlib.h>
#include <string.h>

/* Tails in every dimension, odd N (the element-wise epilogue), K % 8 != 0 (element-wise loads). */
static const char *shapes[] = {"M=128,N=128,K=64", "M=1000,N=1032,K=1000", "M=77,N=131,K=61", "M=1,N=8,K=8"};
#define NSHAPES (int)(sizeof shapes / sizeof shapes[0])
#define PER_SHAPE 8

int main(void)
{
    int count = 0;
    if (sptune_gpu_count(&count) != SPTUNE_OK) {
        printf("test_gpu_gemm: %d GPU cases skipped: %s\n", NSHAPES * PER_SHAPE, sptune_last_error());
        return sp_test_skip("test_gpu_gemm", "no GPU");
    }
    sp_bench b;
    sp_bench_opts o;
    sp_bench_opts_default(&o);
    o.min_runs = o.max_runs = 3;
    o.warmup_runs = 1;
    o.warmup_ms = 0;
    sp_template *t = NULL;
    sp_cache *cache = NULL;
    CHECK_ST(sp_bench_open(0, &o, &b), SPTUNE_OK);
    CHECK_ST(sp_template_load("gemm", &t), SPTUNE_OK);
    CHECK_ST(sp_cache_open(sp_test_tmpdir("test_gpu_gemm"), &cache), SPTUNE_OK);
    if (sp_test_failures) return sp_test_done("test_gpu_gemm");
    for (int s = 0; s < NSHAPES; s++) {
        sp_problem p;
        sp_configs pk;
        CHECK_ST(sp_problem_parse(t, shapes[s], &p), SPTUNE_OK);
        CHECK_ST(sp_space_collect(t, &b.gpu, &p, &pk), SPTUNE_OK);
        /* The default and a seeded choice: a different one per shape. */
        CHECK_ST(sp_space_sample(&pk, t, PER_SHAPE, 1234 + (unsigned long long)s), SPTUNE_OK);
        sp_case cs;
        sptune_status st = sp_case_create(&b, "gemm", &p, &cs);
        CHECK_MSG(st == SPTUNE_OK, "%s: %s", shapes[s], sptune_last_error());
        if (st != SPTUNE_OK) { sp_configs_free(&pk); break; }
        for (int i = 0; i < pk.n; i++) {
            sp_eval e;
            char *text = sp_config_format(t, &pk.v[i]);
            CHECK_ST(sp_eval_variant(&cs, t, &pk.v[i], cache, &e), SPTUNE_OK);
            CHECK_MSG(e.outcome == SP_OUTCOME_OK, "%s %s: %s: %s", shapes[s], text, sp_outcome_name(e.outcome), e.detail);
            CHECK(e.timing.rel_error >= 0 && e.timing.rel_error < 1e-2);
            printf("  %-22s err %.2e  %s\n", shapes[s], e.timing.rel_error, text);
            free(text);
        }
        sp_case_destroy(&cs);
        sp_configs_free(&pk);
    }
    sp_cache_close(cache);
    sp_template_free(t);
    sp_bench_close(&b);
    return sp_test_done("test_gpu_gemm");
}
