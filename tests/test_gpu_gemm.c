/* GPU test: gemm variants verified against cuBLAS (fp32 reference, spot-checked in fp64) on
 * random data with poisoned outputs, at shapes with tails in every dimension and K % 8 != 0.
 * Without a GPU it skips and says how many cases it did not run. */
#include "sp_cache.h"
#include "sp_eval.h"
#include "sp_status.h"
#include "sp_test.h"

#include <stdlib.h>
#include <string.h>

static const char *shapes[] = {"M=128,N=128,K=64", "M=1000,N=1032,K=1000", "M=77,N=130,K=61", "M=1,N=8,K=8"};
#define NSHAPES (int)(sizeof shapes / sizeof shapes[0])
#define PER_SHAPE 6

typedef struct pick { sp_config v[PER_SHAPE]; int n; long long seen, stride; } pick;

static int pick_cb(const sp_config *c, void *ud)
{
    pick *p = ud;
    if (p->seen++ % p->stride == 0 && p->n < PER_SHAPE) p->v[p->n++] = *c;
    return p->n == PER_SHAPE;
}

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
    CHECK_ST(sp_bench_open(0, &o, &b), SPTUNE_OK);
    sp_template *t = NULL;
    CHECK_ST(sp_template_load("gemm", &t), SPTUNE_OK);
    sp_cache *cache = NULL;
    CHECK_ST(sp_cache_open(sp_test_tmpdir("test_gpu_gemm"), &cache), SPTUNE_OK);
    for (int s = 0; s < NSHAPES && t; s++) {
        sp_problem p;
        CHECK_ST(sp_problem_parse(t, shapes[s], &p), SPTUNE_OK);
        long long n = 0;
        CHECK_ST(sp_template_space(t, &b.gpu, &p, NULL, NULL, &n), SPTUNE_OK);
        pick pk = {.stride = n / PER_SHAPE > 0 ? n / PER_SHAPE : 1};
        CHECK_ST(sp_template_space(t, &b.gpu, &p, pick_cb, &pk, &n), SPTUNE_OK);
        sp_case cs;
        CHECK_ST(sp_case_create(&b, "gemm", &p, &cs), SPTUNE_OK);
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
    }
    sp_cache_close(cache);
    sp_template_free(t);
    sp_bench_close(&b);
    return sp_test_done("test_gpu_gemm");
}
