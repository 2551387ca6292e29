/* Every template's space compiles with NVRTC: a sample of each op's valid configurations (the
 * default included, the rest a seeded uniform choice) for sm_90a (H100/H200) and sm_120 (RTX PRO 6000), rendered with and without
 * a problem whose sizes are not tile multiples. Runs on a machine without a GPU. */
#include "sp_gpu.h"
#include "sp_nvrtc.h"
#include "sp_space.h"
#include "sp_status.h"
#include "sp_template.h"
#include "sp_test.h"

#include <stdlib.h>
#include <string.h>

#define PER_TARGET 5

static void compile_one(sp_template *t, const sp_config *c, const sp_gpu_profile *gpu, const sp_problem *p)
{
    sp_kernel_src k;
    char *text = sp_config_format(t, c);
    sptune_status st = sp_template_emit(t, c, gpu, p, &k);
    CHECK_MSG(st == SPTUNE_OK, "%s %s on %s: %s", sp_template_name(t), text, gpu->info.profile, sptune_last_error());
    if (st == SPTUNE_OK) {
        sp_cubin cub = {0};
        st = sp_nvrtc_compile(k.source, k.kernel, gpu->info.arch, (const char *const *)k.options, k.noptions, &cub);
        CHECK_MSG(st == SPTUNE_OK, "%s %s for %s: %s", sp_template_name(t), text, gpu->info.arch, sptune_last_error());
        if (st == SPTUNE_OK) {
            CHECK(cub.size > 4 && memcmp(cub.image, "\177ELF", 4) == 0);
            CHECK_MSG(cub.res.registers > 0, "%s: no register count parsed", text);
            /* The cubin's own attributes agree with ptxas' report (the fallback when NVRTC
             * serves a compile from its cache and reports nothing). */
            int regs = 0, frame = 0;
            CHECK(sp_cubin_elf_resources(cub.image, cub.size, &regs, &frame));
            CHECK_MSG(regs == cub.res.registers && frame == cub.res.local_bytes, "%s: cubin says %d regs %d frame, log %d/%d",
                      text, regs, frame, cub.res.registers, cub.res.local_bytes);
            /* Truncated or damaged images are read safely (ASan watches). */
            for (size_t cut = 0; cut < cub.size; cut += 1 + cub.size / 64) sp_cubin_elf_resources(cub.image, cut, &regs, &frame);
            unsigned char *bad = malloc(cub.size);
            if (bad) {
                memcpy(bad, cub.image, cub.size);
                for (size_t at = 16; at < cub.size && at < 4096; at += 7) bad[at] ^= 0xa5;
                sp_cubin_elf_resources(bad, cub.size, &regs, &frame);
                free(bad);
            }
            printf("  %-8s %-7s regs %3d spill %3d  %s\n", sp_template_name(t), gpu->info.arch, cub.res.registers,
                   cub.res.spill_stores + cub.res.spill_loads, text);
        }
        sp_cubin_free(&cub);
        if (p) CHECK(k.grid[0] > 0 && k.block[0] > 0);
        sp_kernel_src_free(&k);
    }
    free(text);
}

int main(void)
{
    static const char *targets[] = {"h100", "rtx-pro-6000"};
    char **ops = NULL;
    int nops = 0;
    CHECK_ST(sp_template_list(&ops, &nops), SPTUNE_OK);
    CHECK(nops > 0);
    for (int o = 0; o < nops; o++) {
        sp_template *t = NULL;
        CHECK_ST(sp_template_load(ops[o], &t), SPTUNE_OK);
        if (!t) continue;
        /* A problem with every dimension off any tile size. */
        sp_problem prob = {0};
        prob.n = sp_template_ndims(t);
        for (int d = 0; d < prob.n; d++) {
            snprintf(prob.name[d], sizeof prob.name[d], "%s", sp_template_dim(t, d));
            prob.v[d] = 1000 + 37 * d;
        }
        for (size_t g = 0; g < sizeof targets / sizeof targets[0]; g++) {
            sp_gpu_profile gpu;
            CHECK_ST(sp_gpu_profile_named(targets[g], &gpu), SPTUNE_OK);
            sp_configs cs;
            CHECK_ST(sp_space_collect(t, &gpu, NULL, &cs), SPTUNE_OK);
            CHECK_MSG(cs.n > 0, "%s has no valid configuration for %s", ops[o], targets[g]);
            /* The default (when valid) and a seeded uniform choice of the rest. */
            CHECK_ST(sp_space_sample(&cs, t, PER_TARGET, 77 + g), SPTUNE_OK);
            for (long long i = 0; i < cs.n; i++) compile_one(t, &cs.v[i], &gpu, i % 2 ? &prob : NULL);
            sp_configs_free(&cs);
        }
        sp_template_free(t);
    }
    sp_strv_free(ops);
    return sp_test_done("test_compile_templates");
}
