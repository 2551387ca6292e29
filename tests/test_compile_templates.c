/* Every template's space compiles with NVRTC: a sample of each op's valid configurations (the
 * default included, the rest a seeded uniform choice) for sm_90a (H100/H200) and sm_120 (RTX PRO 6000), rendered with and without
 * a problem whose sizes are not tile multiples. Runs on a machine without a GPU. Compiles go through a
 * kernel cache (sp_test_cache_dir: the test command shares one between its two builds, so the sanitizer
 * build reads back what the first compiled, through the same checks). */
#include "sp_cache.h"
#include "sp_clock.h"
#include "sp_gpu.h"
#include "sp_nvrtc.h"
#include "sp_space.h"
#include "sp_status.h"
#include "sp_template.h"
#include "sp_test.h"
#include "sp_str.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PER_TARGET 5

static sp_cache *cache;

static void compile_one(sp_template *t, const sp_config *c, const sp_gpu_profile *gpu, const sp_problem *p)
{
    sp_kernel_src k;
    char *text = sp_config_format(t, c);
    sptune_status st = sp_template_emit(t, c, gpu, p, &k);
    CHECK_MSG(st == SPTUNE_OK, "%s %s on %s: %s", sp_template_name(t), text, gpu->info.profile, sptune_last_error());
    if (st == SPTUNE_OK) {
        sp_cubin cub = {0};
        st = sp_kernel_build(cache, k.source, k.stage[0].kernel, gpu->info.arch, (const char *const *)k.options, k.noptions,
                             &cub);
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
        if (p) CHECK(k.stage[0].grid[0] > 0 && k.stage[0].block[0] > 0);
        sp_kernel_src_free(&k);
    }
    free(text);
}

/* The sm_90a-only paths, named (a sample of the space may miss them): they must be valid for
 * h100 at a shape the copy engine takes, compile, and (with tma) carry their two tensor maps;
 * and they must not be valid for rtx-pro-6000 (sm_120 has neither wgmma nor these kernels'
 * assumptions), whose space must then hold no wgmma configuration at all. */
static const struct { const char *op, *shape, *config; int tmaps; } hopper[] = {
    {"twell-d2t", "M=1000,D=2048,F=1037,nnz=40", "mainloop=wgmma,bm=128,bn=128,bk=64,stages=4,wgs=2,load=cpasync", 0},
    {"twell-d2t", "M=1000,D=2048,F=1037,nnz=40", "mainloop=wgmma,bm=128,bn=256,bk=64,stages=4,wgs=2,load=tma", 2},
    {"twell-d2t", "M=1000,D=2048,F=1037,nnz=40", "mainloop=wgmma,bm=128,bn=256,bk=64,stages=3,wgs=2,epi=overlap", 2},
    {"twell-ffn", "M=1000,D=1032,F=1037,nnz=40",
     "mainloop=wgmma,bm=128,bn=256,bk=64,stages=3,wgs=2,epi=overlap,consumer=tile", 2},
    {"twell-ffn", "M=1000,D=2048,F=1032,nnz=40,order=1",
     "mainloop=wgmma,bm=128,bn=256,bk=64,stages=4,wgs=2,epi=regs,consumer=regmma,warps=2,split=1,dots=1,dunroll=1,hot=1", 2},
    {"twell-d2t", "M=1000,D=2048,F=1037,nnz=40", "mainloop=wgmma,bm=256,bn=64,bk=64,stages=5,wgs=1,epi=regs", 2},
    {"twell-ffn", "M=1000,D=2048,F=1032,nnz=40,order=1",
     "mainloop=wgmma,bm=128,bn=256,bk=64,stages=4,wgs=2,epi=regs2,consumer=reg,warps=2,split=1,dots=1,dunroll=1,hot=1", 2},
    {"twell-d2t", "M=1000,D=2048,F=1037,nnz=40", "mainloop=wgmma,bm=128,bn=128,bk=64,stages=4,wgs=2,epi=pingpong", 2},
    {"twell-d2t", "M=1000,D=2048,F=1037,nnz=40", "mainloop=wgmma,bm=128,bn=128,bk=64,stages=5,wgs=2,epi=pingpong2", 2},
    {"twell-ffn", "M=1000,D=2048,F=1032,nnz=40,order=1",
     "mainloop=wgmma,bm=128,bn=256,bk=64,stages=4,wgs=2,epi=regs,consumer=regmma,warps=2,split=1,dots=1,dunroll=1,"
     "hot=1,hotloop=pingpong", 2},
};

static void check_hopper_paths(void)
{
    sp_gpu_profile h100, rtx;
    CHECK_ST(sp_gpu_profile_named("h100", &h100), SPTUNE_OK);
    CHECK_ST(sp_gpu_profile_named("rtx-pro-6000", &rtx), SPTUNE_OK);
    for (size_t i = 0; i < sizeof hopper / sizeof hopper[0]; i++) {
        sp_template *t = NULL;
        sp_problem p;
        sp_config c;
        int ok = 0;
        CHECK_ST(sp_template_load(hopper[i].op, &t), SPTUNE_OK);
        if (!t) continue;
        CHECK_ST(sp_problem_parse(t, hopper[i].shape, &p), SPTUNE_OK);
        CHECK_ST(sp_config_parse(t, hopper[i].config, &c), SPTUNE_OK);
        CHECK_ST(sp_template_check(t, &c, &h100, &p, &ok, NULL), SPTUNE_OK);
        CHECK_MSG(ok, "%s %s not valid on h100", hopper[i].op, hopper[i].config);
        if (ok) {
            compile_one(t, &c, &h100, &p);
            sp_kernel_src k;
            CHECK_ST(sp_template_emit(t, &c, &h100, &p, &k), SPTUNE_OK);
            /* the producer's stage (twell-ffn's second, after its zero step) */
            const sp_kernel_stage *ps = &k.stage[0];
            for (int s = 0; s < k.nkernels; s++)
                if (strstr(k.stage[s].kernel, "produce")) ps = &k.stage[s];
            CHECK_MSG(ps->tmaps.n == hopper[i].tmaps, "%s: %d tensor maps", hopper[i].config, ps->tmaps.n);
            for (int m = 0; m < ps->tmaps.n; m++) /* over X (M x D) and Wg (F x D), boxes of bm or bn rows x 64 */
                CHECK(ps->tmaps.v[m].arg == m && ps->tmaps.v[m].cols == (unsigned long long)p.v[1] &&
                      ps->tmaps.v[m].box_cols == 64 && ps->tmaps.v[m].swizzle == 128 &&
                      ps->tmaps.v[m].rows == (unsigned long long)(m ? p.v[2] : p.v[0]));
            sp_kernel_src_free(&k);
        }
        CHECK_ST(sp_template_check(t, &c, &rtx, &p, &ok, NULL), SPTUNE_OK);
        CHECK_MSG(!ok, "%s %s valid on rtx-pro-6000", hopper[i].op, hopper[i].config);
        int listed = 0; /* the whole rtx space, once per op */
        for (size_t j = 0; j < i; j++) listed |= strcmp(hopper[j].op, hopper[i].op) == 0;
        if (listed) {
            sp_template_free(t);
            continue;
        }
        /* the walk's subtree of mainloop=wgmma (its first parameter) is empty: exact, and pruned at once where the
         * whole space takes a minute to walk */
        const sp_param *ml = sp_template_param(t, 0);
        int prefix[1] = {-1};
        for (int v = 0; v < ml->nvalues; v++)
            if (strcmp(ml->values[v].text, "wgmma") == 0) prefix[0] = v;
        CHECK_MSG(strcmp(ml->name, "mainloop") == 0 && prefix[0] >= 0, "%s: mainloop=wgmma is not the walk's first choice",
                  hopper[i].op);
        long long n = -1;
        if (prefix[0] >= 0) CHECK_ST(sp_template_subspace(t, &rtx, NULL, prefix, 1, NULL, NULL, &n), SPTUNE_OK);
        CHECK_MSG(n == 0, "rtx-pro-6000's space holds %lld %s configurations with mainloop=wgmma", n, hopper[i].op);
        sp_template_free(t);
    }
}

/* The tensor-core tile consumer is portable (mma.sync): it must be valid and compile for sm_120 too. */
static void check_tile_consumer(void)
{
    static const struct { const char *op, *shape, *config; } cases[] = {
        {"twell-gated", "M=1000,F=1037,D=1032,T=256,S=31,nnz=40", "consumer=tile"},
        {"twell-ffn", "M=1000,D=1032,F=1037,nnz=40", "consumer=tile,bn=256,slots=31"},
    };
    static const char *targets[] = {"h100", "rtx-pro-6000"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (size_t g = 0; g < 2; g++) {
            sp_template *t = NULL;
            sp_gpu_profile gpu;
            sp_problem p;
            sp_config c;
            int ok = 0;
            CHECK_ST(sp_template_load(cases[i].op, &t), SPTUNE_OK);
            if (!t) continue;
            CHECK_ST(sp_gpu_profile_named(targets[g], &gpu), SPTUNE_OK);
            CHECK_ST(sp_problem_parse(t, cases[i].shape, &p), SPTUNE_OK);
            CHECK_ST(sp_config_parse(t, cases[i].config, &c), SPTUNE_OK);
            CHECK_ST(sp_template_check(t, &c, &gpu, &p, &ok, NULL), SPTUNE_OK);
            CHECK_MSG(ok, "%s %s not valid on %s", cases[i].op, cases[i].config, targets[g]);
            if (ok) compile_one(t, &c, &gpu, &p);
            sp_template_free(t);
        }
}

/* twell-ffn's register consumers (reg, regmma) hold a row of D fp32 a warp in registers: their limits are the template's
 * constraints (never a kernel that cannot launch; at D = 4096 the one a step spills a little in some configurations:
 * 24 bytes on sm_90a, 116 on sm_120 with the template's default producer; none in those shipped). */
static void check_reg_consumer_limits(void)
{
    static const struct { const char *shape, *config; int ok; } cases[] = {
        {"M=1000,D=4096,F=1037,nnz=40", "consumer=reg,warps=4,split=1,dots=1,dunroll=1", 1},
        {"M=1000,D=4104,F=1037,nnz=40", "consumer=reg,warps=4,split=1,dots=1,dunroll=1", 0},   /* past 4096 */
        {"M=1000,D=1030,F=1037,nnz=40", "consumer=reg,warps=4,split=1,dots=1,dunroll=1", 0},   /* D % 8 != 0 */
        {"M=1000,D=4096,F=1037,nnz=40", "consumer=reg,warps=4,split=1,dots=2,dunroll=1", 0},   /* 32 chunks of loads */
        {"M=1000,D=2048,F=1037,nnz=40", "consumer=reg,warps=4,split=1,dots=2,dunroll=1", 1},
        {"M=1000,D=2048,F=1037,nnz=40", "consumer=reg,warps=4,split=2,dots=1,dunroll=1", 0},   /* one warp a row */
        {"M=1000,D=2048,F=1037,nnz=40", "consumer=reg,warps=16,split=1,dots=1,dunroll=1", 0},  /* registers */
        {"M=1000,D=2048,F=1037,nnz=40", "consumer=reg,warps=4,split=1,dots=1,dunroll=2", 0},
        {"M=1000,D=2048,F=1037,nnz=40", "consumer=row,warps=2,split=1,dots=4,dunroll=1", 0},   /* reg's alone */
        {"M=1000,D=4096,F=1037,nnz=40", "consumer=regmma,warps=2,split=1,dots=1,dunroll=1", 1},
        {"M=1000,D=4104,F=1037,nnz=40", "consumer=regmma,warps=2,split=1,dots=1,dunroll=1", 0},
        {"M=1000,D=4096,F=1037,nnz=40", "consumer=regmma,warps=2,split=1,dots=2,dunroll=1", 0},
        {"M=1000,D=2048,F=1037,nnz=40", "consumer=regmma,warps=4,split=2,dots=1,dunroll=1", 0},
        {"M=1000,D=2048,F=1037,nnz=40", "consumer=reg,warps=4,split=1,dots=1,dunroll=1,pf=1", 0},   /* regmma's */
        {"M=1000,D=2048,F=1037,nnz=40", "consumer=regmma,warps=4,split=1,dots=1,dunroll=1,pf=4", 1},
        {"M=1000,D=4096,F=1037,nnz=40", "consumer=regmma,warps=2,split=1,dots=1,dunroll=1,passes=8", 1},
        {"M=1000,D=2048,F=1037,nnz=40", "consumer=reg,warps=4,split=1,dots=1,dunroll=1,passes=2", 0},   /* regmma's */
        {"M=1000,D=2048,F=1037,nnz=40", "consumer=regmma,warps=4,split=1,dots=1,dunroll=1,pf=1,passes=2", 0},
    };
    sp_gpu_profile h100;
    sp_template *t = NULL;
    CHECK_ST(sp_gpu_profile_named("h100", &h100), SPTUNE_OK);
    CHECK_ST(sp_template_load("twell-ffn", &t), SPTUNE_OK);
    if (!t) return;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sp_problem p;
        sp_config c;
        int ok = -1;
        CHECK_ST(sp_problem_parse(t, cases[i].shape, &p), SPTUNE_OK);
        CHECK_ST(sp_config_parse(t, cases[i].config, &c), SPTUNE_OK);
        CHECK_ST(sp_template_check(t, &c, &h100, &p, &ok, NULL), SPTUNE_OK);
        CHECK_MSG(ok == cases[i].ok, "twell-ffn %s at %s: valid %d", cases[i].config, cases[i].shape, ok);
    }
    sp_template_free(t);
}

/* Paths a sample may miss that both targets must compile (sm_120 included: mma.sp and plain loads only):
 * slotfill-spmm's sp24 kernel (2:4 weights, dist=3) in both data types, one and two tiles per warp, and W expanded
 * before the dense GEMM (expand=1) in both layouts, the bitmap's block staged whole too; twell-ffn's
 * register consumers at their widest row (D = 4096: 16 chunks; regmma's Wd rows then after the dot products, the
 * rows two steps ahead prefetched, no tail guards), and with two entries a step and a partial chunk (regmma:
 * guarded loads); regmma in two kernels (passes = 4) with whole column slices and with a partial one (D = 3584). */
static void check_named_paths(void)
{
    static const struct { const char *op, *shape, *config; } named[] = {
        {"slotfill-spmm", "M=1000,K=1037,N=31,sparsity=50,fp16=0,dist=3", "decode=sp24,window=64,dbits=7,split=1,stages=8"},
        {"slotfill-spmm", "M=1000,K=1037,N=31,sparsity=50,fp16=1,dist=3",
         "decode=sp24,window=64,dbits=7,split=1,stages=2,tpw=2,bn=32,dtype=f16"},
        /* W expanded, then the dense GEMM (wgmma on sm_90a, mma.sync on sm_120), both layouts */
        {"slotfill-spmm", "M=1000,K=1032,N=600,sparsity=50,fp16=0,dist=2", "expand=1"},
        {"slotfill-spmm", "M=1000,K=1032,N=600,sparsity=50,fp16=0,dist=2", "expand=1,xload=staged"},
        {"slotfill-spmm", "M=1000,K=1032,N=600,sparsity=50,fp16=0,dist=3", "expand=1,decode=sp24,window=64,dbits=7"},
        {"twell-ffn", "M=1000,D=4096,F=1037,nnz=40", "consumer=reg,warps=2,split=1,dots=1,dunroll=1"},
        {"twell-ffn", "M=1000,D=1032,F=1037,nnz=40,order=1", "consumer=reg,warps=8,split=1,dots=2,dunroll=1,bn=256,slots=31"},
        {"twell-ffn", "M=1000,D=4096,F=1037,nnz=40", "consumer=regmma,warps=2,split=1,dots=1,dunroll=1,pf=2"},
        {"twell-ffn", "M=1000,D=1032,F=1037,nnz=40,order=1", "consumer=regmma,warps=8,split=1,dots=2,dunroll=1,bn=256,slots=31"},
        {"twell-ffn", "M=1000,D=4096,F=1037,nnz=40", "consumer=regmma,warps=4,split=1,dots=1,dunroll=1,passes=4"},
        {"twell-ffn", "M=1000,D=3584,F=1037,nnz=40", "consumer=regmma,warps=4,split=1,dots=1,dunroll=1,passes=4"},
    };
    static const char *targets[] = {"h100", "rtx-pro-6000"};
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
        for (size_t g = 0; g < sizeof targets / sizeof targets[0]; g++) {
            sp_template *t = NULL;
            sp_gpu_profile gpu;
            sp_problem p;
            sp_config c;
            int ok = 0;
            CHECK_ST(sp_gpu_profile_named(targets[g], &gpu), SPTUNE_OK);
            CHECK_ST(sp_template_load(named[i].op, &t), SPTUNE_OK);
            if (!t) continue;
            CHECK_ST(sp_problem_parse(t, named[i].shape, &p), SPTUNE_OK);
            CHECK_ST(sp_config_parse(t, named[i].config, &c), SPTUNE_OK);
            CHECK_ST(sp_template_check(t, &c, &gpu, &p, &ok, NULL), SPTUNE_OK);
            CHECK_MSG(ok, "%s %s not valid on %s", named[i].op, named[i].config, targets[g]);
            if (ok) compile_one(t, &c, &gpu, &p);
            sp_template_free(t);
        }
}

/* slotfill-spmm's large-batch kernels (mainloop=wgmma, W decoded into registers or shared memory; and the expand
 * path's GEMM at a narrower tile): both layouts compile for sm_90a (the widest token tile, 128 accumulators a thread
 * beside the decode; split-K through clusters; fp16); a GPU without wgmma (sm_120) and a K the copy engine cannot read
 * (K % 8 != 0) refuse it. */
static void check_slotfill_large(void)
{
    static const struct { const char *shape, *config; } cases[] = {
        {"M=1000,K=1032,N=600,sparsity=50,fp16=0,dist=2", "mainloop=wgmma,warps=8,bn=256,stages=2,split=1"},
        {"M=1000,K=1032,N=600,sparsity=50,fp16=1,dist=2", "mainloop=wgmma,warps=4,bn=64,stages=4,split=4,dtype=f16"},
        {"M=1000,K=1032,N=600,sparsity=50,fp16=0,dist=3",
         "mainloop=wgmma,decode=sp24,window=64,dbits=7,warps=8,bn=256,stages=2,split=1"},
        {"M=1000,K=1032,N=600,sparsity=50,fp16=1,dist=3",
         "mainloop=wgmma,decode=sp24,window=64,dbits=7,warps=8,bn=128,stages=3,split=2,dtype=f16"},
        /* W decoded into shared memory (wsrc=smem): the widest tile, and split-K in fp16 */
        {"M=1000,K=1032,N=600,sparsity=50,fp16=0,dist=2", "mainloop=wgmma,wsrc=smem,warps=8,bn=256,stages=3,split=1"},
        {"M=1000,K=1032,N=600,sparsity=50,fp16=1,dist=2",
         "mainloop=wgmma,wsrc=smem,warps=8,bn=64,stages=4,split=2,dtype=f16"},
        /* decoder warps of their own (wsrc=dec): two consumer warpgroups, one at the widest
         * tile with split-K, 8 decoders, 128 rows, 16 decoders with 6 stages */
        {"M=1000,K=1032,N=600,sparsity=50,fp16=0,dist=2", "mainloop=wgmma,wsrc=dec,warps=8,bn=128,stages=4,split=1"},
        {"M=1000,K=1032,N=600,sparsity=50,fp16=1,dist=2",
         "mainloop=wgmma,wsrc=dec,warps=4,bn=256,stages=3,split=2,dtype=f16"},
        {"M=1000,K=1032,N=600,sparsity=50,fp16=0,dist=2",
         "mainloop=wgmma,wsrc=dec,warps=8,bn=128,stages=4,split=2,dwarps=8"},
        {"M=1000,K=1032,N=600,sparsity=50,fp16=0,dist=2",
         "mainloop=wgmma,wsrc=dec,warps=8,bn=128,stages=4,split=2,dwarps=8,wrows=128"},
        {"M=1000,K=1032,N=600,sparsity=50,fp16=0,dist=2",
         "mainloop=wgmma,wsrc=dec,warps=8,bn=64,stages=6,split=2,dwarps=16"},
        /* W expanded, then the dense GEMM in tiles narrower than the default 256 rows of W */
        {"M=1000,K=1032,N=600,sparsity=50,fp16=0,dist=2", "expand=1,xload=staged,xbn=192"},
    };
    sp_template *t = NULL;
    CHECK_ST(sp_template_load("slotfill-spmm", &t), SPTUNE_OK);
    if (!t) return;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sp_gpu_profile gpu;
        sp_problem p, odd;
        sp_config c;
        int ok = -1;
        CHECK_ST(sp_problem_parse(t, cases[i].shape, &p), SPTUNE_OK);
        CHECK_ST(sp_config_parse(t, cases[i].config, &c), SPTUNE_OK);
        CHECK_ST(sp_gpu_profile_named("h100", &gpu), SPTUNE_OK);
        CHECK_ST(sp_template_check(t, &c, &gpu, &p, &ok, NULL), SPTUNE_OK);
        CHECK_MSG(ok == 1, "slotfill-spmm %s at %s: valid %d on h100", cases[i].config, cases[i].shape, ok);
        if (ok == 1) {
            sp_kernel_src k;
            CHECK_ST(sp_template_emit(t, &c, &gpu, &p, &k), SPTUNE_OK);
            CHECK_MSG(strstr(k.source, "wgmma.mma_async") != NULL, "%s: no wgmma in the source", cases[i].config);
            sp_kernel_src_free(&k);
            compile_one(t, &c, &gpu, &p);
        }
        odd = p;
        for (int d = 0; d < odd.n; d++)
            if (strcmp(odd.name[d], "K") == 0) odd.v[d] = 1037;
        CHECK_ST(sp_template_check(t, &c, &gpu, &odd, &ok, NULL), SPTUNE_OK);
        CHECK_MSG(ok == 0, "slotfill-spmm %s valid at K = 1037", cases[i].config);
        CHECK_ST(sp_gpu_profile_named("rtx-pro-6000", &gpu), SPTUNE_OK);
        CHECK_ST(sp_template_check(t, &c, &gpu, &p, &ok, NULL), SPTUNE_OK);
        CHECK_MSG(ok == 0, "slotfill-spmm %s valid on rtx-pro-6000 (no wgmma)", cases[i].config);
    }
    /* nothing measured near: per-row pruned W expanded from 256 tokens on, the GEMM's tile as wide as its waves on
     * 132 SMs allow (each the fastest of the three widths measured, docs/journal/2026-12-06.md); 2:4 W never expanded */
    static const struct { const char *shape, *has; } defaults[] = {
        {"M=4096,K=4096,N=512,sparsity=50,fp16=0,dist=2", "expand=1,wsrc=regs,krec=1,dwarps=4,wrows=64,xload=staged,xbn=128"},
        {"M=18944,K=3584,N=512,sparsity=50,fp16=0,dist=2", "xload=staged,xbn=192"},
        {"M=14336,K=4096,N=2048,sparsity=50,fp16=0,dist=2", "xload=staged,xbn=256"},
        {"M=14336,K=4096,N=1024,sparsity=50,fp16=0,dist=2", "xload=staged,xbn=256"},
        {"M=1024,K=4096,N=2048,sparsity=50,fp16=0,dist=2", "xload=staged,xbn=128"},
        {"M=14336,K=4096,N=2048,sparsity=50,fp16=0,dist=3", "decode=sp24"},
    };
    sp_gpu_profile h100;
    CHECK_ST(sp_gpu_profile_named("h100", &h100), SPTUNE_OK);
    for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++) {
        sp_problem p;
        sp_config c;
        CHECK_ST(sp_problem_parse(t, defaults[i].shape, &p), SPTUNE_OK);
        CHECK_ST(sp_config_default_for(t, &h100, &p, &c), SPTUNE_OK);
        char *text = sp_config_format(t, &c);
        CHECK_MSG(text && strstr(text, defaults[i].has) && (strstr(defaults[i].has, "sp24") == NULL) == (strstr(text, "expand=1") != NULL),
                  "slotfill-spmm's default at %s: %s", defaults[i].shape, text ? text : "?");
        free(text);
    }
    sp_template_free(t);
}

/* One twell-ffn case of check_pdl and check_hot_remainder on a problem with a hot slice's order: configuration `config` on
 * `target` must be valid exactly when `ok`; a valid one is emitted into *k (1 returned, with *gpu, *p and *c filled
 * for compile_one), an invalid one is not (0). */
static int ffn_case(sp_template *t, const char *target, const char *config, int ok, sp_gpu_profile *gpu, sp_problem *p,
                    sp_config *c, sp_kernel_src *k)
{
    int valid = -1;
    CHECK_ST(sp_gpu_profile_named(target, gpu), SPTUNE_OK);
    CHECK_ST(sp_problem_parse(t, "M=1000,D=2048,F=1032,nnz=40,order=1", p), SPTUNE_OK);
    CHECK_ST(sp_config_parse(t, config, c), SPTUNE_OK);
    CHECK_ST(sp_template_check(t, c, gpu, p, &valid, NULL), SPTUNE_OK);
    CHECK_MSG(valid == ok, "twell-ffn %s on %s: valid %d", config, target, valid);
    if (valid != 1) return 0;
    CHECK_ST(sp_template_emit(t, c, gpu, p, k), SPTUNE_OK);
    return 1;
}

/* Where stage s's kernel is defined in k's source (its name then a parenthesis), or NULL. */
static const char *kernel_at(const sp_kernel_src *k, int s)
{
    char sig[140];
    snprintf(sig, sizeof sig, "%s(", k->stage[s].kernel);
    return strstr(k->source, sig);
}

/* twell-ffn's programmatic dependent launch (pdl = 2): on both targets every kernel of the pipeline is marked for the
 * early launch and opens with the wait (a marked kernel without it would race its predecessor), never triggers its
 * dependents early (the withdrawn pdl = 1 did), and compiles; at pdl = 0 nothing is marked and the source has no wait
 * (the kernels recorded before the parameter keep their text); pdl = 1 is no value; sm_80 has no griddepcontrol. */
static void check_pdl(void)
{
    static const struct { const char *target, *config; int ok; } cases[] = {
        {"h100", "mainloop=wgmma,bm=128,bn=256,bk=64,stages=4,wgs=2,epi=regs,consumer=regmma,warps=2,split=1,dots=1,"
                 "dunroll=1,route=512,hot=1,pdl=2", 1},
        {"h100", "mainloop=wgmma,bm=128,bn=256,bk=64,stages=4,wgs=2,epi=regs,consumer=regmma,warps=2,split=1,dots=1,"
                 "dunroll=1,route=512,hot=1,pdl=0", 1},
        {"rtx-pro-6000", "consumer=regmma,warps=4,split=1,dots=1,dunroll=1,passes=2,route=256,pdl=2", 1},
        {"sm_80", "consumer=regmma,warps=4,split=1,dots=1,dunroll=1,route=256,pdl=2", 0},
    };
    sp_template *t = NULL;
    CHECK_ST(sp_template_load("twell-ffn", &t), SPTUNE_OK);
    if (!t) return;
    sp_config c;
    CHECK_ST(sp_config_parse(t, "pdl=1", &c), SPTUNE_ERR_INVALID);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sp_gpu_profile gpu;
        sp_problem p;
        sp_kernel_src k;
        if (!ffn_case(t, cases[i].target, cases[i].config, cases[i].ok, &gpu, &p, &c, &k)) continue;
        int pdl = strstr(cases[i].config, "pdl=2") != NULL, waits = 0;
        CHECK_MSG(!strstr(k.source, "griddepcontrol.launch_dependents"), "%s: an early trigger", cases[i].config);
        for (const char *s = k.source; (s = strstr(s, "sp_pdl_enter();")) != NULL; s++) waits++;
        CHECK_MSG(waits == (pdl ? k.nkernels : 0), "%s on %s: %d waits for %d kernels", cases[i].config,
                  cases[i].target, waits, k.nkernels);
        for (int s = 0; s < k.nkernels; s++) {
            CHECK_MSG(k.stage[s].pdl == pdl, "%s: stage %d pdl %d", cases[i].config, s, k.stage[s].pdl);
            /* the wait opens the kernel: the first statement after its signature */
            const char *at = kernel_at(&k, s), *brace = at ? strchr(at, '{') : NULL;
            CHECK(brace != NULL);
            if (pdl && brace) CHECK_MSG(strncmp(brace, "{\n    sp_pdl_enter();", 21) == 0, "%s: not opened by the wait",
                                        k.stage[s].kernel);
        }
        sp_kernel_src_free(&k);
        if (pdl) compile_one(t, &c, &gpu, &p);
    }
    sp_template_free(t);
}

/* twell-ffn's dense path on wgmma (dense = wgmma): valid beside the wgmma + TMA producer with a dense path and a
 * sparse part (with a hot slice, on its ping-pong GEMMs), nowhere else; its two GEMMs run after finalize, each with
 * its A map capped at dense_capacity at launch and its B map over the whole of Wu or Wd (the cold rows found from H);
 * the zero step leaves dense_acc to dense_g (which gathers X there in that regime); compiled for sm_90a. */
static void check_dense_wgmma(void)
{
#define DW_BASE "mainloop=wgmma,bm=128,bn=256,bk=64,stages=4,wgs=2,epi=regs,consumer=regmma,warps=2,split=1,dots=1,dunroll=1,"
    static const struct { const char *target, *config; int ok; } cases[] = {
        {"h100", DW_BASE "route=256,hot=1,hotloop=pingpong,dense=wgmma", 1},
        {"h100", DW_BASE "route=512,hot=0,dense=wgmma", 1},
        {"h100", DW_BASE "route=256,hot=1,hotloop=staged,dense=wgmma", 0},
        {"h100", DW_BASE "route=-1,hot=0,dense=wgmma", 0},
        {"h100", "mainloop=mma,route=256,dense=wgmma", 0},
        {"rtx-pro-6000", "consumer=regmma,warps=4,split=1,dots=1,dunroll=1,route=256,dense=wgmma", 0},
    };
#undef DW_BASE
    sp_template *t = NULL;
    CHECK_ST(sp_template_load("twell-ffn", &t), SPTUNE_OK);
    if (!t) return;
    const int cap = sp_template_arg_index(t, "dense_capacity");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sp_gpu_profile gpu;
        sp_problem p;
        sp_config c;
        sp_kernel_src k;
        if (!ffn_case(t, cases[i].target, cases[i].config, cases[i].ok, &gpu, &p, &c, &k)) continue;
        int hw = -1;
        for (int s = 0; s < k.nkernels; s++)
            if (strstr(k.stage[s].kernel, "sp_twell_ffn_dense_hw_")) hw = s;
        CHECK_MSG(hw > 0 && hw + 1 < k.nkernels && strstr(k.stage[hw - 1].kernel, "sp_twell_ffn_finalize_") &&
                  strstr(k.stage[hw + 1].kernel, "sp_twell_ffn_dense_yw_"), "%s: dense_hw at %d", cases[i].config, hw);
        for (int s = hw; hw > 0 && s <= hw + 1; s++) {
            const sp_tmaps *m = &k.stage[s].tmaps;
            CHECK_MSG(m->n == 2 && m->v[0].rows_arg == cap && m->v[1].rows_arg < 0 && m->v[1].rows == 1032,
                      "%s: stage %d's maps", cases[i].config, s);
        }
        const char *zero = kernel_at(&k, 0), *next = zero ? strstr(zero + 1, "extern \"C\"") : NULL;
        const char *clear = zero ? strstr(zero, "dense_acc[i] = 0.0f") : NULL;
        CHECK_MSG(zero && clear && next && clear > next, "%s: the zero step clears dense_acc", cases[i].config);
        sp_kernel_src_free(&k);
        if (i == 0) compile_one(t, &c, &gpu, &p);
    }
    sp_template_free(t);
}

/* The hot slice beside a sparse part (0 < hot < 8) rounds Y once: every cold kernel that writes Y also writes what the
 * rounding left to Ylo (after hot_h's slice in its workspace, which the declared shape makes room for), and hot_y's
 * accumulators start from Y + Ylo (staged; ping-pong: added in the epilogue), its drain storing (not adding); with
 * hot 0 or 8 nothing of it is emitted (those
 * kernels keep their text). Every consumer kind and both hot loops; hotloop = bulk (the copy engine adding a rounded
 * tile) is gone; compiled for sm_90a. */
static void check_hot_remainder(void)
{
#define HOT_BASE "mainloop=wgmma,bm=128,bn=256,bk=64,stages=4,wgs=2,epi=regs,route=512,"
#define HOT_REG HOT_BASE "warps=2,split=1,dots=1,dunroll=1,"
    static const struct { const char *config; int mixed; } cases[] = {
        {HOT_REG "consumer=regmma,hot=1,pdl=2", 1},
        {HOT_REG "consumer=regmma,hot=2,passes=2,hotloop=pingpong", 1},
        {HOT_REG "consumer=reg,hot=4", 1},
        {HOT_BASE "consumer=row,warps=4,dots=4,split=1,hot=2", 1},
        {HOT_BASE "consumer=tile,hot=1", 1},
        {HOT_REG "consumer=regmma,hot=0", 0},
        {HOT_BASE "hot=8", 0},
    };
#undef HOT_REG
#undef HOT_BASE
    sp_template *t = NULL;
    CHECK_ST(sp_template_load("twell-ffn", &t), SPTUNE_OK);
    if (!t) return;
    sp_config c;
    CHECK_ST(sp_config_parse(t, "hot=1,hotloop=bulk", &c), SPTUNE_ERR_INVALID);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sp_gpu_profile gpu;
        sp_problem p;
        sp_kernel_src k;
        if (!ffn_case(t, "h100", cases[i].config, 1, &gpu, &p, &c, &k)) continue;
        const int last = k.nkernels - 1;
        const char *hot_y = kernel_at(&k, last);
        if (!cases[i].mixed) {
            CHECK_MSG(!strstr(k.source, "Ylo") && !strstr(k.source, "sp_y_"), "%s: a remainder without a cold part",
                      cases[i].config);
        } else {
            CHECK_MSG(hot_y && strstr(k.stage[last].kernel, "hot_y"), "%s: hot_y last", cases[i].config);
            const char *sum = strstr(cases[i].config, "pingpong") ? "+= sp_bf16_to_f32((Y)[at + col + e])"
                                                                   : "= sp_bf16_to_f32((Y)[at + col + e])";
            CHECK_MSG(hot_y && strstr(hot_y, sum) && strstr(hot_y, "sp_bf16_to_f32((Ylo)[at + col + e])"),
                      "%s: hot_y does not add Y + Ylo (%s)", cases[i].config, sum);
            /* the cold writers: the consumer, and the dense path's finalize */
            for (int s = 0; s < last; s++) {
                const char *at = kernel_at(&k, s), *end = at ? strstr(at, "extern \"C\" __global__") : NULL;
                const char *name = k.stage[s].kernel;
                if (!at || !(strstr(name, "_consume_") || strstr(name, "_finalize_"))) continue;
                if (strstr(name, "_consume_dot_")) continue;   /* passes > 1: the dot products write no output */
                const char *put = strstr(at, "sp_y_put("), *call = strstr(at, "Ylo + (size_t)row * D");
                CHECK_MSG((put && (!end || put < end)) || (call && (!end || call < end)),
                          "%s: %s writes Y without its remainder", cases[i].config, name);
            }
        }
        sp_kernel_src_free(&k);
        compile_one(t, &c, &gpu, &p);
    }
    sp_template_free(t);
}

/* No argument: the named paths above; "sample": each op's sample below (a second test, test_compile_templates_sample,
 * so that the test command runs the two side by side and neither takes minutes on 2 cores); "all": both. */
int main(int argc, char **argv)
{
    const char *part = argc > 1 ? argv[1] : "paths";
    if (strcmp(part, "paths") != 0 && strcmp(part, "sample") != 0 && strcmp(part, "all") != 0) {
        fprintf(stderr, "usage: %s [paths|sample|all]\n", argv[0]);
        return 2;
    }
    CHECK_ST(sp_cache_open(sp_test_cache_dir("test_compile_templates"), &cache), SPTUNE_OK);
    if (strcmp(part, "sample") != 0) {
        /* each part's time in the log: NVRTC's compiles are most of this test's minutes */
#define PART(f) {#f, f}
        static const struct { const char *name; void (*run)(void); } parts[] = {
            PART(check_pdl), PART(check_dense_wgmma), PART(check_hot_remainder), PART(check_hopper_paths), PART(check_named_paths),
            PART(check_slotfill_large), PART(check_reg_consumer_limits), PART(check_tile_consumer)};
#undef PART
        for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
            const double t0 = sp_now_s();
            parts[i].run();
            printf("%s: %.1f s\n", parts[i].name, sp_now_s() - t0);
        }
    }
    if (strcmp(part, "paths") == 0) {
        sp_cache_close(cache);
        return sp_test_done("test_compile_templates");
    }
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
            /* The default (when valid) and a seeded uniform choice of the rest. */
            const double t0 = sp_now_s();
            CHECK_ST(sp_space_draw(t, &gpu, NULL, PER_TARGET, 77 + g, &cs), SPTUNE_OK);
            printf("%s on %s: %lld drawn in %.1f s\n", ops[o], targets[g], cs.n, sp_now_s() - t0);
            CHECK_MSG(cs.n > 0, "%s has no valid configuration for %s", ops[o], targets[g]);
            for (long long i = 0; i < cs.n; i++) compile_one(t, &cs.v[i], &gpu, i % 2 ? &prob : NULL);
            sp_configs_free(&cs);
        }
        sp_template_free(t);
    }
    sp_strv_free(ops);
    sp_cache_close(cache);
    return sp_test_done("test_compile_templates");
}
