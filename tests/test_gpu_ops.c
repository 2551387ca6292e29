/* GPU test: variants of every op with a GPU harness verified against their references (cuBLAS
 * fp32, spot-checked in fp64) on random data with poisoned outputs, at shapes with tails in every
 * dimension, a reduction dimension not a multiple of 8, and (TwELL) rows that overflow their
 * slots. Without a GPU it skips and says how many cases it did not run. */
#include "sp_cache.h"
#include "sp_cuda.h"
#include "sp_rng.h"
#include "sp_eval.h"
#include "sp_space.h"
#include "sp_status.h"
#include "sp_test.h"
#include "sp_slotfill_dist.h"
#include "sp_twell_dist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct op_cases { const char *op; const char *shapes[14]; const char *const *always[3]; } op_cases;

/* The producer's wgmma main loop (sm_90a), checked at every shape wherever it is valid: a sample
 * of the whole space would rarely draw it. Both loaders (the copy engine needs D % 8 == 0: the
 * other shapes skip it), one and two warpgroups, every bn (= T), 3-5 stages, bm = 256 (two m64
 * blocks per warpgroup), few slots (heavy overflow); each persistent packing (packer warps, registers, registers in
 * clusters of two: an odd count of tile rows leaves the last pair's second CTA past M; ping-pong warpgroups, alone
 * and in clusters: a CTA's odd tile count leaves the second warpgroup a tile short). */
static const char *const wgmma_configs[] = {
    "mainloop=wgmma,bm=128,bn=128,bk=64,stages=4,wgs=2", "mainloop=wgmma,bm=128,bn=256,bk=64,stages=3,wgs=2",
    "mainloop=wgmma,bm=256,bn=128,bk=64,stages=4,wgs=2,slots=7", "mainloop=wgmma,bm=128,bn=64,bk=64,stages=4,wgs=1,slots=63",
    "mainloop=wgmma,bm=128,bn=128,bk=64,stages=3,wgs=2,load=cpasync", "mainloop=wgmma,bm=256,bn=64,bk=64,stages=4,wgs=2,load=cpasync",
    "mainloop=wgmma,bm=128,bn=256,bk=64,stages=3,wgs=2,epi=overlap,slots=15",
    "mainloop=wgmma,bm=128,bn=128,bk=64,stages=4,wgs=2,epi=overlap,slots=7",
    "mainloop=wgmma,bm=256,bn=64,bk=64,stages=4,wgs=1,epi=overlap,group_m=8",
    "mainloop=wgmma,bm=128,bn=256,bk=64,stages=4,wgs=2,epi=regs,slots=15",
    "mainloop=wgmma,bm=128,bn=128,bk=64,stages=4,wgs=2,epi=regs,slots=7",
    "mainloop=wgmma,bm=256,bn=64,bk=64,stages=4,wgs=1,epi=regs",
    "mainloop=wgmma,bm=128,bn=256,bk=64,stages=4,wgs=2,epi=regs2,slots=15",
    "mainloop=wgmma,bm=256,bn=128,bk=64,stages=3,wgs=2,epi=regs2,slots=7",
    "mainloop=wgmma,bm=128,bn=128,bk=64,stages=5,wgs=2,epi=pingpong,slots=7",
    "mainloop=wgmma,bm=128,bn=128,bk=64,stages=4,wgs=2,epi=pingpong,slots=31,group_m=1",
    "mainloop=wgmma,bm=128,bn=128,bk=64,stages=4,wgs=2,epi=pingpong2,slots=15", NULL};
/* gemm's wgmma main loop: both loaders, one and two warpgroups, the store after the main loop and the
 * persistent kernel's overlapped store, bm = 256, the smallest tile. */
static const char *const gemm_wgmma_configs[] = {
    "mainloop=wgmma,bm=128,bn=256,bk=64,stages=4,wgs=2", "mainloop=wgmma,bm=128,bn=128,bk=64,stages=4,wgs=2,epi=overlap",
    "mainloop=wgmma,bm=256,bn=128,bk=64,stages=3,wgs=2,epi=overlap", "mainloop=wgmma,bm=128,bn=64,bk=64,stages=4,wgs=1",
    "mainloop=wgmma,bm=128,bn=128,bk=64,stages=3,wgs=2,load=cpasync",
    "mainloop=wgmma,bm=64,bn=128,bk=64,stages=5,wgs=1,group_m=1,epi=overlap", NULL};
/* The gated consumers' wider dot products (8 Wu rows in flight, the sweep over D unrolled), with
 * and without split rows; every shape, D % 8 != 0 (element-wise path) included; and the
 * tensor-core tile consumer (where D % 8 == 0 and D <= 2048), after either producer. */
static const char *const gated_configs[] = {
    "warps=8,split=1,unroll=4,dots=8,dunroll=2", "warps=4,split=2,unroll=2,dots=8,dunroll=1",
    "warps=16,split=8,unroll=4,dots=4,dunroll=2", "consumer=tile", NULL};
/* twell-ffn: the tile consumer after the Hopper producer, few slots (pool overflow); the register consumers
 * with one and two entries a step, in CTAs of 4, 8 and 2 warps (regmma: 4 and 8). */
static const char *const ffn_tile_configs[] = {
    "consumer=tile,mainloop=wgmma,bm=128,bn=256,bk=64,stages=3,wgs=2,epi=overlap,slots=7",
    "consumer=reg,warps=4,split=1,dots=1,dunroll=1",
    "consumer=reg,mainloop=wgmma,bm=128,bn=256,bk=64,stages=3,wgs=2,epi=overlap,slots=7,warps=8,split=1,dots=2,dunroll=1",
    "consumer=reg,mainloop=wgmma,bm=128,bn=128,bk=64,stages=3,wgs=2,epi=overlap,slots=15,warps=2,split=1,dots=1,dunroll=1",
    "consumer=regmma,warps=4,split=1,dots=1,dunroll=1",
    "consumer=regmma,mainloop=wgmma,bm=128,bn=256,bk=64,stages=3,wgs=2,epi=overlap,slots=7,warps=8,split=1,dots=2,dunroll=1",
    NULL};
/* twell-d2t's whole space has more: the smallest tile, and the persistent kernel with one
 * warpgroup and no L2 grouping. */
static const char *const wgmma_d2t_configs[] = {
    "mainloop=wgmma,bm=64,bn=64,bk=64,stages=5,wgs=1,group_m=1",
    "mainloop=wgmma,bm=64,bn=128,bk=64,stages=3,wgs=1,epi=overlap,group_m=1", NULL};

/* slotfill-spmm: the bitmap kernel (split-K through clusters, two tiles per warp, wide token tiles,
 * fp16, a shallow pipeline, rings the largest chunks fill or nearly) and the three-layer kernels (both filled-slot
 * decoders, no filling, every window, narrow copies), each wherever valid for the shape and data type. */
static const char *const slotfill_configs[] = {
    "split=1", "split=4", "split=8,warps=2", "tpw=2", "tpw=2,warps=2,split=8", "warps=2,split=8,ring=16",
    "warps=2,tpw=2,split=4,ring=20", "bn=16,ring=24", "bn=16,ring=48", "bn=32,warps=2,ring=48",
    "bn=64,ring=60", "warps=8,ring=60", "dtype=f16", "dtype=f16,split=4,tpw=2", "stages=2", "stages=3,warps=8,ring=60",
    "decode=owner,fill=1,dbits=6,warps=2,stages=2,split=4", "decode=list,dbits=6,stages=2",
    "decode=owner,fill=1,window=64,dbits=7,stages=2", "decode=owner,fill=1,window=256,dbits=9,warps=2,stages=2",
    "decode=list,window=64,dbits=7,ecap=32,stages=2", "decode=owner,fill=0,stages=2",
    "decode=owner,fill=1,dtype=f16,dbits=6,stages=3",
    /* sp24 (2:4 weights only: the dist=3 shapes): both batch depths, two tiles, every token tile, fp16 */
    "decode=sp24,window=64,dbits=7,split=1,stages=4", "decode=sp24,window=64,dbits=7,split=1,stages=8,warps=8",
    "decode=sp24,window=64,dbits=7,split=1,stages=4,tpw=2,warps=2", "decode=sp24,window=64,dbits=7,split=1,stages=2,tpw=2",
    "decode=sp24,window=64,dbits=7,split=1,stages=4,bn=16,dtype=f16", "decode=sp24,window=64,dbits=7,split=1,stages=2,bn=32",
    "decode=sp24,window=64,dbits=7,split=1,stages=4,bn=16,tpw=2,warps=8",
    /* the large-batch kernel (sm_90a): both layouts, one and two warpgroups, every token tile, split-K through
     * clusters (with the producer's warpgroup too), fp16 (an M tail leaves a warp's tile past M) */
    "mainloop=wgmma,warps=8,bn=256,stages=2,split=1", "mainloop=wgmma,warps=8,bn=256,stages=2,split=2",
    "mainloop=wgmma,warps=4,bn=64,stages=4,split=4,ring=20",
    "mainloop=wgmma,warps=8,bn=128,stages=3,split=2,ring=48", "mainloop=wgmma,warps=4,bn=32,stages=2,split=1,dtype=f16",
    "mainloop=wgmma,decode=sp24,window=64,dbits=7,warps=8,bn=256,stages=4,split=1",
    "mainloop=wgmma,decode=sp24,window=64,dbits=7,warps=4,bn=128,stages=6,split=1",
    "mainloop=wgmma,decode=sp24,window=64,dbits=7,warps=4,bn=64,stages=4,split=4",
    "mainloop=wgmma,decode=sp24,window=64,dbits=7,warps=8,bn=128,stages=3,split=2",
    "mainloop=wgmma,decode=sp24,window=64,dbits=7,warps=4,bn=32,stages=2,split=1,dtype=f16",
    /* sp24 stages of 2 and 4 records (K's last stage short of records; split-K), fp16 */
    "mainloop=wgmma,decode=sp24,window=64,dbits=7,warps=4,bn=64,stages=4,split=2,krec=4",
    "mainloop=wgmma,decode=sp24,window=64,dbits=7,warps=8,bn=128,stages=3,split=1,krec=2,dtype=f16",
    /* four consumer warpgroups (their producer's warpgroup giving registers up at bn 128), split-K */
    "mainloop=wgmma,decode=sp24,window=64,dbits=7,warps=16,bn=128,stages=4,split=2",
    "mainloop=wgmma,decode=sp24,window=64,dbits=7,warps=16,bn=64,stages=3,split=1,krec=2",
    "mainloop=wgmma,decode=sp24,window=64,dbits=7,warps=8,bn=256,stages=4,split=2",
    /* W decoded into shared memory by the consumer warps (wsrc=smem): every token tile, split-K, fp16 */
    "mainloop=wgmma,wsrc=smem,warps=8,bn=256,stages=3,split=1", "mainloop=wgmma,wsrc=smem,warps=8,bn=128,stages=4,split=2",
    "mainloop=wgmma,wsrc=smem,warps=8,bn=64,stages=4,split=4,dtype=f16", "mainloop=wgmma,wsrc=smem,warps=8,bn=32,stages=2,split=1",
    /* W decoded by decoder warps of their own (wsrc=dec): one and two consumer warpgroups, every token tile,
     * split-K, fp16, decoders taking turns by stage, 128 rows */
    "mainloop=wgmma,wsrc=dec,warps=8,bn=128,stages=4,split=1", "mainloop=wgmma,wsrc=dec,warps=8,bn=64,stages=3,split=2",
    "mainloop=wgmma,wsrc=dec,warps=4,bn=256,stages=4,split=4", "mainloop=wgmma,wsrc=dec,warps=8,bn=32,stages=2,split=1,dtype=f16",
    "mainloop=wgmma,wsrc=dec,warps=4,bn=32,stages=4,split=2", "mainloop=wgmma,wsrc=dec,warps=8,bn=128,stages=3,split=2,dwarps=8",
    "mainloop=wgmma,wsrc=dec,warps=8,bn=128,stages=4,split=1,dwarps=8,wrows=128",
    "mainloop=wgmma,wsrc=dec,warps=8,bn=64,stages=3,split=4,dwarps=8,wrows=128",
    /* 16 decoders (four a tile), stage rings deeper than 4 */
    "mainloop=wgmma,wsrc=dec,warps=4,bn=64,stages=8,split=2,dwarps=16",
    "mainloop=wgmma,wsrc=dec,warps=8,bn=32,stages=6,split=1,dwarps=16,dtype=f16",
    /* W expanded into the workspace, then the dense GEMM (bf16, K % 8 == 0): both layouts, tails in M, K and N; the
     * bitmap block staged whole; the GEMM's narrower tiles */
    "expand=1", "expand=1,decode=sp24,window=64,dbits=7", "expand=1,xload=staged", "expand=1,xload=staged,xbn=128",
    "expand=1,decode=sp24,window=64,dbits=7,xbn=192", NULL};

/* gemm: tails, odd N (element-wise epilogue), K % 8 != 0 (element-wise loads), a single row.
 * twell-d2t: tails; D % 8 != 0 with 40 of 130 neurons firing (most tiles overflow their slots);
 * the paper's shape at ~40 nonzeros per row; 90 % sparse; data made by the layer (gen=1: Gaussian tokens of
 * spread gains, denser tokens arising from X); more tiles than two a CTA on 132 SMs (persistent kernels: each
 * warpgroup of a ping-pong pair gets tiles, some CTAs an odd count). twell-t2d and twell-gated: gates from
 * sp_twell_gate_data (heavy-tailed neurons, 30 % dead, a dense row, denser first tokens, tiles
 * overflowing into the pool) from 90 % to 99.7 % sparse, D % 8 != 0 (element-wise paths), and
 * the benchmark layers' widths. twell-ffn: the whole layer (producer and gated consumer) at the
 * same kinds of shape. */
static const op_cases cases[] = {
    {"gemm", {"M=128,N=128,K=64", "M=1000,N=1032,K=1000", "M=77,N=131,K=61", "M=1,N=8,K=8", "M=300,N=201,K=256",
              "M=2048,N=1536,K=1024", NULL}, {gemm_wgmma_configs, NULL, NULL}},
    {"twell-d2t", {"M=300,D=200,F=1000,nnz=20", "M=77,D=61,F=130,nnz=40", "M=256,D=2048,F=5632,nnz=40",
                   "M=128,D=256,F=1000,nnz=100", "M=300,D=256,F=1000,nnz=40,dense=2,dense_nnz=400,gen=1",
                   "M=1100,D=136,F=5000,nnz=30", NULL},
     {wgmma_configs, wgmma_d2t_configs, NULL}},
    {"twell-t2d", {"M=300,F=1000,D=200,T=256,S=31,nnz=20", "M=77,F=130,D=61,T=64,S=7,nnz=30",
                   "M=256,F=5632,D=2048,T=256,S=31,nnz=40", "M=200,F=1000,D=256,T=64,S=15,nnz=100",
                   "M=512,F=5632,D=2048,T=128,S=15,nnz=17", NULL}, {NULL, NULL, NULL}},
    {"twell-gated", {"M=300,F=1000,D=200,T=256,S=31,nnz=100", "M=77,F=130,D=61,T=64,S=7,nnz=30",
                     "M=256,F=5632,D=2048,T=128,S=31,nnz=40", "M=512,F=5632,D=2048,T=256,S=15,nnz=17",
                     "M=64,F=14336,D=4096,T=128,S=31,nnz=72", NULL}, {gated_configs, NULL, NULL}},
    {"twell-ffn", {"M=300,D=200,F=1000,nnz=100", "M=77,D=61,F=130,nnz=30", "M=256,D=2048,F=5632,nnz=17",
                   "M=128,D=4096,F=14336,nnz=72", "M=300,D=264,F=1000,nnz=40,dense=2,dense_nnz=400,gen=1,spread=0.8",
                   NULL}, {wgmma_configs, gated_configs, ffn_tile_configs}},
    /* slotfill-spmm: tails in M and K, one token, magnitude-pruned W; K % 8 != 0 (element-wise X
     * loads) in fp16; exactly 2:4 (no filled slot, no residual); per-row pruning at 40 %; the hard
     * rows (90 % dense, empty, a dense column: residual beyond the staged words); K = 1; a
     * Llama-sized square at 50 % with 8 tokens; 70 % sparse, 333 tokens; 2:4 with tails in M, K and N
     * (K odd: 16-bit X loads; K % 64 != 0: the last chunk's guarded loads), fp16; batches for the large-batch
     * kernel: per-row pruning at N = 600 and 2:4 in fp16 at N = 700, K = 960 (an odd count of 64-column records), and
     * in bf16 at N = 200 (token tiles of 64 and 128 with a tail). */
    {"slotfill-spmm", {"M=1000,K=1000,N=1,sparsity=50,fp16=0,dist=1", "M=77,K=61,N=13,sparsity=70,fp16=1,dist=0",
                       "M=256,K=4096,N=16,sparsity=50,fp16=0,dist=3", "M=512,K=2048,N=64,sparsity=40,fp16=0,dist=2",
                       "M=300,K=1500,N=24,sparsity=50,fp16=0,dist=4", "M=96,K=1,N=5,sparsity=50,fp16=1,dist=0",
                       "M=4096,K=4096,N=8,sparsity=50,fp16=0,dist=1", "M=640,K=768,N=333,sparsity=70,fp16=0,dist=1",
                       "M=77,K=61,N=13,sparsity=50,fp16=1,dist=3", "M=1000,K=1000,N=40,sparsity=50,fp16=0,dist=3",
                       "M=1000,K=1000,N=600,sparsity=50,fp16=0,dist=2", "M=520,K=960,N=700,sparsity=50,fp16=1,dist=3",
                       "M=1000,K=960,N=200,sparsity=50,fp16=0,dist=3",
                       NULL},
     {slotfill_configs, NULL, NULL}},
};
#define NOPS (int)(sizeof cases / sizeof cases[0])
#define PER_SHAPE 8

/* Appends the configurations of `always` that are valid for this GPU and problem (and contain match, when
 * set). */
static void add_always(sp_configs *pk, sp_template *t, const sp_gpu_profile *gpu, const sp_problem *p,
                       const char *const *always, const char *match)
{
    for (int i = 0; always && always[i]; i++) {
        sp_config c;
        int ok = 0;
        if (match && !strstr(always[i], match)) continue;
        CHECK_ST(sp_config_parse(t, always[i], &c), SPTUNE_OK);
        CHECK_ST(sp_template_check(t, &c, gpu, p, &ok, NULL), SPTUNE_OK);
        if (ok) CHECK(sp_configs_push(pk, &c) == 0);
    }
}

/* PER_SHAPE configurations (the default and a seeded choice, another per shape) at each shape. */
static void run_op(sp_bench *b, sp_cache *cache, const op_cases *oc)
{
    sp_template *t = NULL;
    CHECK_ST(sp_template_load(oc->op, &t), SPTUNE_OK);
    if (!t) return;
    /* SPTUNE_TEST_MATCH (as in run_ffn_workspace): the listed configurations that contain it, no sample */
    const char *match = getenv("SPTUNE_TEST_MATCH");
    for (int s = 0; s < (int)(sizeof oc->shapes / sizeof oc->shapes[0]) && oc->shapes[s]; s++) {
        sp_problem p;
        sp_configs pk;
        CHECK_ST(sp_problem_parse(t, oc->shapes[s], &p), SPTUNE_OK);
        CHECK_ST(sp_space_collect(t, &b->gpu, &p, &pk), SPTUNE_OK);
        CHECK_ST(sp_space_sample(&pk, t, PER_SHAPE, 1234 + (unsigned long long)s), SPTUNE_OK);
        if (match) pk.n = 0;
        for (int a = 0; a < 3; a++) add_always(&pk, t, &b->gpu, &p, oc->always[a], match);
        sp_case cs;
        sptune_status st = sp_case_create(b, oc->op, &p, &cs);
        CHECK_MSG(st == SPTUNE_OK, "%s %s: %s", oc->op, oc->shapes[s], sptune_last_error());
        if (st != SPTUNE_OK) { sp_configs_free(&pk); break; }
        for (int i = 0; i < pk.n; i++) {
            sp_eval e;
            char *text = sp_config_format(t, &pk.v[i]);
            CHECK_ST(sp_eval_variant(&cs, t, &pk.v[i], cache, &e), SPTUNE_OK);
            CHECK_MSG(e.outcome == SP_OUTCOME_OK, "%s %s %s: %s: %s", oc->op, oc->shapes[s], text,
                      sp_outcome_name(e.outcome), e.detail);
            CHECK(e.timing.rel_error >= 0 && e.timing.rel_error < 1e-2);
            printf("  %-11s %-38s err %.2e  %s\n", oc->op, oc->shapes[s], e.timing.rel_error, text);
            free(text);
        }
        sp_case_destroy(&cs);
        sp_configs_free(&pk);
    }
    sp_template_free(t);
}

/* The runtime API end to end, as an application uses it: sptune_kernel_get, then
 * sptune_kernel_launch on the application's stream with its own buffers (the harness's), for a
 * single kernel (gemm) and a pipeline (twell-ffn: its own kernels (sparse_only), and the dense layer on cuBLAS that
 * stands in for them where nothing was measured, in the largest workspace part); the outputs are verified like the
 * tuner's. */
static const char *const api_cases[][2] = {{"gemm", "M=300,N=200,K=136"}, {"twell-ffn", "M=300,D=200,F=1000,nnz=100"},
                                           {"twell-ffn", "M=300,D=200,F=1000,nnz=100"}};
#define NAPI (int)(sizeof api_cases / sizeof api_cases[0])

static void run_api(sp_bench *b, const char *cache_dir)
{
    for (int i = 0; i < NAPI; i++) {
        const char *op = api_cases[i][0], *shape = api_cases[i][1];
        sptune_kernel_request req = {.size = SPTUNE_KERNEL_REQUEST_SIZE, .op = op, .problem = shape,
                                     .gpu = b->gpu.info.profile, .db_path = "", .cache_dir = cache_dir,
                                     .ignore_shipped = 1, .sparse_only = i == 1};
        sptune_kernel *k = NULL;
        CHECK_ST(sptune_kernel_get(&req, &k), SPTUNE_OK);
        const char *how = NULL;
        if (k) sptune_kernel_origin(k, &how);
        if (i == 2) CHECK_MSG(how && !strncmp(how, "the dense layer on cuBLAS", 25), "%s", how ? how : "");
        sp_template *t = NULL;
        sp_problem p;
        sp_case cs;
        CHECK_ST(sp_template_load(op, &t), SPTUNE_OK);
        if (!k || !t) { sptune_kernel_free(k); sp_template_free(t); continue; }
        CHECK_ST(sp_problem_parse(t, shape, &p), SPTUNE_OK);
        sptune_status st = sp_case_create(b, op, &p, &cs);
        CHECK_MSG(st == SPTUNE_OK, "%s %s: %s", op, shape, sptune_last_error());
        if (st == SPTUNE_OK) {
            sp_config c;
            CHECK_ST(sp_config_parse(t, sptune_kernel_config(k), &c), SPTUNE_OK);
            CHECK_ST(sp_case_bind(&cs, t, &c), SPTUNE_OK);
            CHECK_ST(cs.ops->poison(cs.state, b->stream), SPTUNE_OK);
            if (cs.ops->prepare) CHECK_ST(cs.ops->prepare(cs.state, b->stream), SPTUNE_OK);
            CHECK_ST(sptune_kernel_launch(k, b->stream, cs.argv), SPTUNE_OK);
            const sp_cuda_api *cu;
            CHECK_ST(sp_cuda_load(&cu), SPTUNE_OK);
            CHECK_ST(SP_CU(cu->StreamSynchronize(b->stream)), SPTUNE_OK);
            double rel = 1;
            char detail[512] = "";
            CHECK_ST(cs.ops->verify(cs.state, &rel, detail, sizeof detail), SPTUNE_OK);
            CHECK_MSG(rel < cs.ops->tolerance, "%s %s through the runtime API: error %.3g (%s)", op, shape, rel, detail);
            printf("  api %-9s %-28s err %.2e  %s\n", op, shape, rel, i == 2 ? "the dense layer on cuBLAS" : sptune_kernel_config(k));
            sp_case_destroy(&cs);
        }
        sptune_kernel_free(k);
        sp_template_free(t);
    }
}

/* slotfill-spmm the way an application runs it: its own pruned W (host, bf16) encoded through the
 * public API, the image copied to the device, a kernel asked for with the encoding's fixed
 * parameters and launched on its own buffers; Y compared with an fp64 product of X and W. */
static void run_api_slotfill(sp_bench *b, const char *cache_dir)
{
    const int M = 1000, K = 520, N = 5;
    const char *const encodings[] = {NULL, "window=64,dbits=7,fill=0,decode=list", "wrong image", "2:4", "2:4 bitmap image"};
    uint64_t rng = 0x5107f111;
    unsigned short *w = malloc(sizeof *w * M * K), *x = malloc(sizeof *x * N * K), *y = malloc(sizeof *y * N * M);
    unsigned short *w24 = malloc(sizeof *w24 * M * K);
    float *ref = malloc(sizeof *ref * N * M), *ref24 = malloc(sizeof *ref24 * N * M);
    const sp_cuda_api *cu = NULL;
    CHECK_ST(sp_cuda_load(&cu), SPTUNE_OK);
    if (!w || !x || !y || !ref || !w24 || !ref24 || !cu) goto done;
    /* ~55% zeros, more in some rows (a magnitude-pruned layer is not uniform) */
    for (long long i = 0; i < (long long)M * K; i++) {
        double keep = (i / K) % 7 == 0 ? 0.2 : 0.5;
        w[i] = sp_rng_unit(&rng) < keep ? sp_float_to_bf16((float)(sp_rng_unit(&rng) * 2 - 1)) : 0;
    }
    for (long long i = 0; i < (long long)N * K; i++) x[i] = sp_float_to_bf16((float)(sp_rng_unit(&rng) * 2 - 1));
    /* the same weights pruned 2:4 further: each group of 4 keeps its first two nonzeros */
    for (long long r = 0; r < M; r++)
        for (long long q = 0; q < K; q += 4)
            for (int e = 0, kept = 0; e < 4 && q + e < K; e++) {
                const unsigned short v = w[r * K + q + e];
                w24[r * K + q + e] = v && kept < 2 ? v : 0;
                kept += v != 0;
            }
    for (int n = 0; n < N; n++)
        for (int m = 0; m < M; m++) {
            double acc = 0, acc24 = 0;
            for (int k = 0; k < K; k++) {
                const double xv = sp_bf16_to_float(x[(size_t)n * K + k]);
                acc += xv * sp_bf16_to_float(w[(size_t)m * K + k]);
                acc24 += xv * sp_bf16_to_float(w24[(size_t)m * K + k]);
            }
            ref[(size_t)n * M + m] = (float)acc;
            ref24[(size_t)n * M + m] = (float)acc24;
        }
    for (size_t e = 0; e < sizeof encodings / sizeof encodings[0]; e++) {
        sptune_slotfill *enc = NULL;
        sptune_kernel *k = NULL;
        CUdeviceptr dW = 0, dX = 0, dY = 0, dWs = 0;
        size_t ws = 0;   /* the kernel's workspace (expand = 1: W expanded) */
        /* the last: an image of another shape (K x M) given to the kernel of this one, as a raw device
         * pointer allows: the kernel's header check makes every output NaN and reads nothing past it */
        /* the 2:4 cases: the default encoding of 2:4 weights is sp24 (the problem says dist=3); the last gives
         * the sp24 kernel the same weights' bitmap image: every output NaN, nothing past the header read */
        const int two4 = encodings[e] && !strncmp(encodings[e], "2:4", 3);
        const int foreign = two4 && strstr(encodings[e], "bitmap") != NULL;
        const int wrong = (encodings[e] && !strcmp(encodings[e], "wrong image")) || foreign;
        const float *want = two4 ? ref24 : ref;
        sptune_slotfill *other = NULL; /* the image launched when it is not enc's */
        CHECK_ST(wrong && !two4 ? sptune_slotfill_encode(w, K, M, 0, NULL, &enc)
                 : sptune_slotfill_encode(two4 ? w24 : w, M, K, 0, two4 ? NULL : encodings[e], &enc), SPTUNE_OK);
        if (foreign) CHECK_ST(sptune_slotfill_encode(w24, M, K, 0, "decode=bitmap", &other), SPTUNE_OK);
        if (!enc || (foreign && !other)) { sptune_slotfill_free(enc); sptune_slotfill_free(other); continue; }
        char shape[96];
        if (two4) {
            CHECK_MSG(strstr(sptune_slotfill_fixed(enc), "decode=sp24") != NULL, "2:4 weights encoded as %s",
                      sptune_slotfill_fixed(enc));
            CHECK_ST(sptune_slotfill_problem(enc, N, shape, sizeof shape), SPTUNE_OK);
            CHECK_MSG(strstr(shape, ",dist=3") != NULL, "2:4 weights: %s", shape);
        } else {
            snprintf(shape, sizeof shape, "M=%d,K=%d,N=%d,sparsity=55,fp16=0,dist=1", M, K, N);
        }
        sptune_kernel_request req = {.op = "slotfill-spmm", .problem = shape, .gpu = b->gpu.info.profile,
                                     .db_path = "", .cache_dir = cache_dir, .ignore_shipped = 1,
                                     .fixed = sptune_slotfill_fixed(enc)};
        CHECK_ST(sptune_kernel_get(&req, &k), SPTUNE_OK);
        CHECK_MSG(!two4 || (k && strstr(sptune_kernel_config(k), "decode=sp24")), "2:4 weights served %s",
                  k ? sptune_kernel_config(k) : "nothing");
        size_t bytes = 0;
        const void *img = sptune_slotfill_image(foreign ? other : enc, &bytes);
        CHECK(img != NULL && bytes > 0);
        if (k && img && SP_CU(cu->MemAlloc(&dW, bytes)) == SPTUNE_OK && SP_CU(cu->MemAlloc(&dX, 2ull * N * K)) ==
            SPTUNE_OK && SP_CU(cu->MemAlloc(&dY, 2ull * N * M)) == SPTUNE_OK &&
            sptune_kernel_workspace(k, 0, &ws) == SPTUNE_OK && (ws == 0 || SP_CU(cu->MemAlloc(&dWs, ws)) == SPTUNE_OK)) {
            CHECK_ST(SP_CU(cu->MemcpyHtoD(dW, img, bytes)), SPTUNE_OK);
            CHECK_ST(SP_CU(cu->MemcpyHtoD(dX, x, 2ull * N * K)), SPTUNE_OK);
            CHECK_ST(sp_poison_bf16(dY, (size_t)N * M, b->stream), SPTUNE_OK);
            /* the argument list by name, as the template declares it */
            int dims[3] = {M, N, K};
            const sp_case_named named[] = {{"W", &dW}, {"X", &dX}, {"Y", &dY}, {"M", &dims[0]}, {"N", &dims[1]},
                                           {"K", &dims[2]}, {"Wd", &dWs}};
            void *argv[8] = {0};
            int nargs = sptune_kernel_arg_count(k), bad = nargs > 8;
            for (int i = 0; i < nargs && !bad; i++) {
                sptune_arg a = {.size = sizeof(sptune_arg)};
                CHECK_ST(sptune_kernel_arg(k, i, &a), SPTUNE_OK);
                bad = !(argv[i] = sp_case_arg_find(a.name, named, sizeof named / sizeof named[0]));
                CHECK_MSG(!bad, "slotfill-spmm: argument %d (%s) unexpected by this test", i, a.name);
            }
            if (!bad) {
                CHECK_ST(sptune_kernel_launch(k, b->stream, argv), SPTUNE_OK);
                double rel = 1;
                char detail[512] = "";
                CHECK_ST(SP_CU(cu->StreamSynchronize(b->stream)), SPTUNE_OK);
                if (wrong) {
                    CHECK_ST(SP_CU(cu->MemcpyDtoH(y, dY, 2ull * N * M)), SPTUNE_OK);
                    long long nan = 0;
                    for (long long i = 0; i < (long long)N * M; i++) nan += y[i] == 0xffffu;
                    CHECK_MSG(nan == (long long)N * M, "slotfill-spmm with another shape's image: %lld of %d outputs NaN", nan,
                              N * M);
                    printf("  api slotfill-spmm %-28s %s: %lld of %d outputs NaN\n", shape,
                           foreign ? "a bitmap image into the sp24 kernel" : "another shape's image", nan, N * M);
                    /* uploaded with its parameters, the same image is refused before anything runs */
                    sptune_slotfill_gpu *dw = NULL;
                    CHECK_ST(sptune_slotfill_upload(foreign ? other : enc, &dw), SPTUNE_OK);
                    CHECK_ST(SP_CU(cu->MemsetD16(dY, 0x1234, (size_t)N * M)), SPTUNE_OK);
                    CHECK_ST(sptune_slotfill_apply(k, b->stream, N, dw, dX, dY, dWs, ws), SPTUNE_ERR_INVALID);
                    CHECK_MSG(strstr(sptune_last_error(), foreign ? "the weights were encoded with" : "the kernel was got for M="), "%s",
                              sptune_last_error());
                    CHECK_ST(SP_CU(cu->StreamSynchronize(b->stream)), SPTUNE_OK);
                    CHECK_ST(SP_CU(cu->MemcpyDtoH(y, dY, 2ull * N * M)), SPTUNE_OK);
                    long long kept = 0;
                    for (long long i = 0; i < (long long)N * M; i++) kept += y[i] == 0x1234u;
                    CHECK_MSG(kept == (long long)N * M, "uploaded weights of another shape: %lld of %d outputs untouched",
                              kept, N * M);
                    sptune_slotfill_gpu_free(dw);
                    goto next;
                }
                CHECK_ST(sp_verify_bf16(dY, y, want, N, M, &rel, detail, sizeof detail), SPTUNE_OK);
                CHECK_MSG(rel < 1e-2, "slotfill-spmm through the public API (%s): error %.3g (%s)",
                          encodings[e] ? encodings[e] : "default encoding", rel, detail);
                printf("  api slotfill-spmm %-28s err %.2e  %s\n", shape, rel, sptune_kernel_config(k));
                /* the same through weights uploaded with their parameters (sptune_slotfill_upload, _apply) */
                sptune_slotfill_gpu *dw = NULL;
                CHECK_ST(sptune_slotfill_upload(enc, &dw), SPTUNE_OK);
                CHECK_ST(sp_poison_bf16(dY, (size_t)N * M, b->stream), SPTUNE_OK);
                CHECK_ST(sptune_slotfill_apply(k, b->stream, N, dw, dX, dY, dWs, ws), SPTUNE_OK);
                CHECK_ST(SP_CU(cu->StreamSynchronize(b->stream)), SPTUNE_OK);
                rel = 1;
                CHECK_ST(sp_verify_bf16(dY, y, want, N, M, &rel, detail, sizeof detail), SPTUNE_OK);
                CHECK_MSG(rel < 1e-2, "slotfill-spmm with uploaded weights (%s): error %.3g (%s)",
                          encodings[e] ? encodings[e] : "default encoding", rel, detail);
                sptune_slotfill_gpu_free(dw);
            }
        }
    next:
        if (dW) cu->MemFree(dW);
        if (dX) cu->MemFree(dX);
        if (dY) cu->MemFree(dY);
        if (dWs) cu->MemFree(dWs);
        sptune_kernel_free(k);
        sptune_slotfill_free(enc);
        sptune_slotfill_free(other);
    }
done:
    free(w);
    free(w24);
    free(ref24);
    free(x);
    free(y);
    free(ref);
}

/* twell-ffn is exact whatever its workspace: overflow pools of 0, 1 and 64 words, exactly what the
 * data needs and the typical size, dense-path capacities 0, 1, typical and M; the row consumer (split
 * and not), the tile consumer, the dense path by count, only for lost tiles, and off; data with
 * dense tokens (first and scattered) and heavy-tailed neurons, D % 8 != 0 included. The pipeline
 * zeroes its own counters: the harness poisons them. */
static const char *const ws_shapes[] = {"M=300,D=256,F=1000,nnz=30,dense=2,dense_nnz=500",
                                        "M=77,D=61,F=130,nnz=12,dense=5,dense_nnz=90,at=0",
                                        "M=1000,D=2048,F=5632,nnz=40",
                                        "M=333,D=264,F=1000,nnz=60,dense=1,dense_nnz=400",
                                        "M=1200,D=264,F=1000,nnz=200,dense=40,dense_nnz=400"};
/* The hot/cold split (hot > 0; sm_90a): slices of 1/8 to all of the neurons, F % bn != 0 and D % 64 != 0
 * (partial hot tiles and k-tiles) in the last shape, with the row, register and tile consumers and without the
 * dense path; the register consumers with a partial 256-column chunk (D = 264) and lost tiles (regmma: without
 * tail guards at D = 256 and 2048, its Wd rows after the dot products at D = 2048 with two entries a step; with
 * the rows two steps ahead prefetched: pf; in two kernels, passes = 2 and 8: slices of one to four chunks, partial at
 * D = 264, past D at D = 256 and 264); and the producer packing from its registers (epi = regs) before each kind of
 * consumer, hot slices of both tile widths among them, also in clusters of two CTAs (epi = regs2); the hot slice's
 * GEMMs on ping-pong warpgroups (hotloop = pingpong: the product into hot_h, the sum into Y, and with hot = 8 the
 * store) after both kinds of persistent producer; each kernel launched before the one ahead of it has finished (pdl = 2:
 * the served form, two consumer kernels and the dense path, the portable pipeline, the dense layer alone, with and
 * without the hot slice); hot_y's accumulators started from the cold part's Y and rounding remainder (staged: partial
 * row and column tiles at M = 300, 333, 1000 and D = 264, both tile widths, after the dense path's rows and the row
 * consumer's); the dense path on wgmma (dense = wgmma) with 480 heavy tokens of the last shape: its GEMMs where they
 * are all routed and no tile is lost, the mma.sync kernels where the pool or the capacity falls short. */
#define HOPPER "mainloop=wgmma,bm=128,bk=64,stages=3,wgs=2,epi=overlap,slots=15,"
#define REGS "mainloop=wgmma,bm=128,bk=64,stages=4,wgs=2,epi=regs,slots=15,"
#define REGS2 "mainloop=wgmma,bm=128,bk=64,stages=4,wgs=2,epi=regs2,slots=15,"
static const char *const ws_configs[] = {
    "route=256", "route=256,consumer=tile", "route=-1", "route=0", "route=256,warps=8,split=4",
    HOPPER "bn=256,route=512,warps=16,split=1,dots=8,dunroll=2",
    HOPPER "bn=128,route=512,warps=16,split=1,dots=8,dunroll=2,hot=1",
    HOPPER "bn=256,route=256,warps=8,split=1,hot=2", HOPPER "bn=128,consumer=tile,hot=4",
    HOPPER "bn=256,route=-1,hot=4", HOPPER "bn=256,hot=8", "route=256,consumer=reg,warps=4,split=1,dots=1,dunroll=1",
    HOPPER "bn=256,route=512,consumer=reg,warps=2,split=1,dots=1,dunroll=1,hot=1",
    HOPPER "bn=128,route=-1,consumer=reg,warps=8,split=1,dots=2,dunroll=1,hot=2",
    "route=256,consumer=regmma,warps=4,split=1,dots=1,dunroll=1",
    HOPPER "bn=256,route=512,consumer=regmma,warps=2,split=1,dots=1,dunroll=1,hot=1",
    HOPPER "bn=128,route=-1,consumer=regmma,warps=8,split=1,dots=2,dunroll=1,hot=2",
    "route=256,consumer=regmma,warps=4,split=1,dots=2,dunroll=1,pf=2",
    "route=256,consumer=regmma,warps=4,split=1,dots=1,dunroll=1,passes=2",
    HOPPER "bn=256,route=512,consumer=regmma,warps=2,split=1,dots=2,dunroll=1,hot=1,passes=8",
    REGS "bn=256,route=512,consumer=regmma,warps=2,split=1,dots=1,dunroll=1,hot=1",
    REGS "bn=128,route=-1,consumer=regmma,warps=8,split=1,dots=2,dunroll=1,hot=2",
    REGS "bn=256,route=256,consumer=reg,warps=4,split=1,dots=1,dunroll=1",
    REGS "bn=256,route=512,consumer=regmma,warps=4,split=1,dots=1,dunroll=1,hot=0,passes=2",
    REGS2 "bn=256,route=512,consumer=regmma,warps=2,split=1,dots=1,dunroll=1,hot=1",
    REGS2 "bn=128,route=256,consumer=reg,warps=4,split=1,dots=1,dunroll=1",
    REGS "bn=256,route=512,consumer=regmma,warps=2,split=1,dots=1,dunroll=1,hot=1,hotloop=pingpong",
    REGS "bn=128,route=-1,consumer=reg,warps=8,split=1,dots=2,dunroll=1,hot=2,hotloop=pingpong",
    HOPPER "bn=256,route=-1,hot=4,hotloop=pingpong", REGS "bn=256,hot=8,hotloop=pingpong",
    REGS "bn=256,route=512,consumer=regmma,warps=2,split=1,dots=1,dunroll=1,hot=1,pdl=2",
    REGS "bn=128,route=0,consumer=regmma,warps=4,split=1,dots=1,dunroll=1,hot=2,passes=2,hotloop=pingpong,pdl=2",
    "route=256,consumer=reg,warps=4,split=1,dots=1,dunroll=1,pdl=2", HOPPER "bn=256,hot=8,pdl=2",
    REGS "bn=256,route=512,consumer=reg,warps=2,split=1,dots=1,dunroll=1,hot=1,pdl=2",
    REGS "bn=256,route=512,consumer=regmma,warps=4,split=1,dots=1,dunroll=1,hot=0,passes=2,pdl=2",
    REGS "bn=256,route=512,consumer=regmma,warps=2,split=1,dots=1,dunroll=1,hot=1,hotloop=staged,pdl=2",
    REGS "bn=128,route=-1,consumer=reg,warps=8,split=1,dots=2,dunroll=1,hot=2,hotloop=staged",
    HOPPER "bn=256,route=256,warps=16,split=1,dots=8,dunroll=2,hot=4,hotloop=staged",
    REGS "bn=256,route=256,consumer=regmma,warps=4,split=1,dots=1,dunroll=1,hot=0,passes=2,dense=wgmma",
    REGS "bn=128,route=256,consumer=regmma,warps=2,split=1,dots=1,dunroll=1,hot=1,hotloop=pingpong,pdl=2,dense=wgmma"};
/* dense capacities: none, one row, the typical size, every token (the harness caps it at M: routed rows
 * then span several of the dense path's 64-row tiles) */
static const long long ws_pools[] = {0, 1, 64, -2, -1}, ws_dense[] = {0, 1, -1, 1000000};
#define NWS (int)(sizeof ws_shapes / sizeof ws_shapes[0] * sizeof ws_configs / sizeof ws_configs[0] * \
                  sizeof ws_pools / sizeof ws_pools[0] * sizeof ws_dense / sizeof ws_dense[0])

static void run_ffn_workspace(sp_bench *b, sp_cache *cache)
{
    sp_template *t = NULL;
    CHECK_ST(sp_template_load("twell-ffn", &t), SPTUNE_OK);
    if (!t) return;
    int n = 0;
    /* SPTUNE_TEST_MATCH: only the configurations that contain it (a new path checked in seconds on the GPU) */
    const char *match = getenv("SPTUNE_TEST_MATCH");
    for (size_t s = 0; s < sizeof ws_shapes / sizeof ws_shapes[0]; s++) {
        sp_problem p;
        sp_case cs;
        CHECK_ST(sp_problem_parse(t, ws_shapes[s], &p), SPTUNE_OK);
        b->twell_pool = b->twell_dense = -1;
        sptune_status st = sp_case_create(b, "twell-ffn", &p, &cs);
        CHECK_MSG(st == SPTUNE_OK, "twell-ffn %s: %s", ws_shapes[s], sptune_last_error());
        if (st != SPTUNE_OK) continue;
        for (size_t c = 0; c < sizeof ws_configs / sizeof ws_configs[0]; c++) {
            sp_config cfg;
            int ok = 0;
            CHECK_ST(sp_config_parse(t, ws_configs[c], &cfg), SPTUNE_OK);
            CHECK_ST(sp_template_check(t, &cfg, &b->gpu, &p, &ok, NULL), SPTUNE_OK);
            if (!ok || (match && !strstr(ws_configs[c], match))) continue;   /* the Hopper one elsewhere */
            for (size_t i = 0; i < sizeof ws_pools / sizeof ws_pools[0]; i++)
                for (size_t j = 0; j < sizeof ws_dense / sizeof ws_dense[0]; j++) {
                    sp_eval e;
                    b->twell_pool = ws_pools[i];
                    b->twell_dense = ws_dense[j];
                    CHECK_ST(sp_eval_variant(&cs, t, &cfg, cache, &e), SPTUNE_OK);
                    CHECK_MSG(e.outcome == SP_OUTCOME_OK && e.timing.rel_error < 1e-2,
                              "twell-ffn %s %s pool %lld dense %lld: %s: %s (error %.3g)", ws_shapes[s], ws_configs[c],
                              ws_pools[i], ws_dense[j], sp_outcome_name(e.outcome), e.detail, e.timing.rel_error);
                    n++;
                }
            printf("  ffn workspace %-48s %-40.40s pools 0,1,64,exact,typical x dense 0,1,typical,M: ok\n",
                   ws_shapes[s], ws_configs[c] + (strlen(ws_configs[c]) > 40 ? strlen(ws_configs[c]) - 40 : 0));
        }
        sp_case_destroy(&cs);
    }
    b->twell_pool = b->twell_dense = -1;
    printf("  ffn workspace: %d runs\n", n);
    sp_template_free(t);
}

/* Whether op is one of the comma-separated names in list. */
/* tune --data's path: twell-ffn verified on a layer read from a safetensors file (X and the gate weights from the
 * generator, up and down random, down as nn.Linear keeps it, D x F), named as a checkpoint names them; the problem
 * measured from the layer (sptune_twell_describe_gate); a file that is not the problem's refused. */
static void run_ffn_data(sp_bench *b, sp_cache *cache)
{
    enum { M = 300, D = 264, F = 1000 };
    const char *names = "x=in,gate=g.weight,up=u.weight,down=d.weight";
    char path[512];
    snprintf(path, sizeof path, "%s/layer.safetensors", sp_test_tmpdir("test_gpu_ops_data"));
    uint64_t rng = 0xda7a;
    sp_twell_dist d = {.nnz = 40, .dead = 30, .tail = 0.7, .dense = 1, .dense_nnz = 400, .at = 2};
    unsigned short *x = malloc((size_t)M * D * 2), *w = malloc((size_t)3 * F * D * 2), *g = malloc((size_t)M * F * 2);
    unsigned short *dt = malloc((size_t)F * D * 2);
    sp_template *t = NULL;
    CHECK(x && w && g && dt);
    if (!x || !w || !g || !dt) goto done;
    CHECK_ST(sp_twell_producer_data(&rng, M, D, F, &d, x, w), SPTUNE_OK);
    for (size_t i = (size_t)F * D; i < (size_t)3 * F * D; i++)
        w[i] = sp_float_to_bf16((float)(sp_rng_unit(&rng) * 2 - 1));
    for (int r = 0; r < M; r++)      /* the gate, for the problem */
        for (int j = 0; j < F; j++) {
            float s = 0;
            for (int k = 0; k < D; k++) s += sp_bf16_to_float(x[r * D + k]) * sp_bf16_to_float(w[(size_t)j * D + k]);
            g[(size_t)r * F + j] = s > 0 ? sp_float_to_bf16(s) : 0;
        }
    char problem[256];
    CHECK_ST(sptune_twell_describe_gate(g, M, F, M, D, 0, problem, sizeof problem), SPTUNE_OK);
    /* the down weights written D x F: the transpose of w's third block */
    for (int j = 0; j < F; j++)
        for (int k = 0; k < D; k++) dt[(size_t)k * F + j] = w[(size_t)2 * F * D + (size_t)j * D + k];
    const char *const tn[] = {"in", "g.weight", "u.weight", "d.weight"};
    const int rows[] = {M, F, F, D}, cols[] = {D, D, D, F};
    const unsigned short *const data[] = {x, w, w + (size_t)F * D, dt};
    CHECK(sp_test_write_safetensors(path, 4, tn, rows, cols, "BF16", data));
    CHECK_ST(sp_template_load("twell-ffn", &t), SPTUNE_OK);
    if (!t) goto done;
    b->data = path;
    b->data_names = names;
    sp_problem p;
    sp_case cs;
    CHECK_ST(sp_problem_parse(t, problem, &p), SPTUNE_OK);
    if (sp_case_create(b, "twell-ffn", &p, &cs) == SPTUNE_OK) {
        static const char *const configs[] = {"route=256", HOPPER "bn=256,route=512,warps=16,split=1,dots=8,dunroll=2,hot=1"};
        for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++) {
            sp_config cfg;
            int ok = 0;
            sp_eval e;
            CHECK_ST(sp_config_parse(t, configs[c], &cfg), SPTUNE_OK);
            CHECK_ST(sp_template_check(t, &cfg, &b->gpu, &p, &ok, NULL), SPTUNE_OK);
            if (!ok) continue;
            CHECK_ST(sp_eval_variant(&cs, t, &cfg, cache, &e), SPTUNE_OK);
            CHECK_MSG(e.outcome == SP_OUTCOME_OK && e.timing.rel_error < 1e-2, "twell-ffn on %s (%s), %s: %s: %s (error "
                      "%.3g)", path, problem, configs[c], sp_outcome_name(e.outcome), e.detail, e.timing.rel_error);
            printf("  twell-ffn on a layer's own tensors: %s  %s  err %.2e\n", problem, configs[c], e.timing.rel_error);
        }
        sp_case_destroy(&cs);
    } else {
        CHECK_MSG(0, "twell-ffn on %s: %s", path, sptune_last_error());
    }
    /* a problem the file does not hold */
    CHECK_ST(sp_problem_parse(t, "M=299,D=264,F=1000,nnz=40", &p), SPTUNE_OK);
    CHECK_ST(sp_case_create(b, "twell-ffn", &p, &cs), SPTUNE_ERR_INVALID);
    CHECK_MSG(strstr(sptune_last_error(), "holds a layer of M=300, D=264, F=1000"), "%s", sptune_last_error());
done:
    sp_template_free(t);
    b->data = b->data_names = NULL;
    free(x);
    free(w);
    free(g);
    free(dt);
}

/* tune --data's path for slotfill-spmm: the user's pruned weights read from a file (drawn here, magnitude-pruned)
 * and verified through the default configuration; weights of another shape refused. */
static void run_slotfill_data(sp_bench *b, sp_cache *cache)
{
    enum { M = 640, K = 1536 };
    char path[512];
    snprintf(path, sizeof path, "%s/w.safetensors", sp_test_tmpdir("test_gpu_ops_sfdata"));
    uint64_t rng = 0x5f;
    unsigned short *w = malloc((size_t)M * K * 2);
    sp_template *t = NULL;
    CHECK(w != NULL);
    if (!w) return;
    CHECK_ST(sp_slotfill_draw(&rng, M, K, 0.5, 1, 0, w), SPTUNE_OK);
    const char *const tn[] = {"proj.weight"};
    const int rows[] = {M}, cols[] = {K};
    const unsigned short *const data[] = {w};
    CHECK(sp_test_write_safetensors(path, 1, tn, rows, cols, "BF16", data));
    CHECK_ST(sp_template_load("slotfill-spmm", &t), SPTUNE_OK);
    if (!t) goto done;
    b->data = path;
    b->data_names = "w=proj.weight";
    sp_problem p;
    sp_case cs;
    CHECK_ST(sp_problem_parse(t, "M=640,K=1536,N=16,sparsity=50,fp16=0,dist=1", &p), SPTUNE_OK);
    if (sp_case_create(b, "slotfill-spmm", &p, &cs) == SPTUNE_OK) {
        sp_config cfg;
        sp_eval e;
        sp_config_default(t, &cfg);
        CHECK_ST(sp_eval_variant(&cs, t, &cfg, cache, &e), SPTUNE_OK);
        CHECK_MSG(e.outcome == SP_OUTCOME_OK && e.timing.rel_error < 1e-2, "slotfill-spmm on %s: %s: %s (error %.3g)",
                  path, sp_outcome_name(e.outcome), e.detail, e.timing.rel_error);
        printf("  slotfill-spmm on the user's weights: %s  err %.2e\n", path, e.timing.rel_error);
        sp_case_destroy(&cs);
    } else {
        CHECK_MSG(0, "slotfill-spmm on %s: %s", path, sptune_last_error());
    }
    CHECK_ST(sp_problem_parse(t, "M=640,K=1024,N=16,sparsity=50,fp16=0,dist=1", &p), SPTUNE_OK);
    CHECK_ST(sp_case_create(b, "slotfill-spmm", &p, &cs), SPTUNE_ERR_INVALID);
    CHECK_MSG(strstr(sptune_last_error(), "not 640 x 1024 as asked"), "%s", sptune_last_error());
done:
    sp_template_free(t);
    b->data = b->data_names = NULL;
    free(w);
}

static int listed(const char *list, const char *op)
{
    size_t n = strlen(op);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, op, n) == 0) return 1;
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

int main(void)
{
    int count = 0;
    if (sptune_gpu_count(&count) != SPTUNE_OK) {
        int n = 0;
        for (int o = 0; o < NOPS; o++)
            for (int s = 0; s < 8; s++) n += cases[o].shapes[s] != NULL;
        printf("test_gpu_ops: %d GPU cases skipped: %s\n", n * PER_SHAPE + NAPI + 2 + NWS + 5, sptune_last_error());
        return sp_test_skip("test_gpu_ops", "no GPU");
    }
    sp_bench b;
    sp_bench_opts o;
    sp_bench_opts_default(&o);
    o.energy_ms = 0;   /* correctness here; energy is the benchmarks' */
    o.min_runs = o.max_runs = 3;
    o.warmup_runs = 1;
    o.warmup_ms = 0;
    sp_cache *cache = NULL;
    CHECK_ST(sp_bench_open(0, &o, &b), SPTUNE_OK);
    /* SPTUNE_TEST_CACHE: a kernel cache filled elsewhere (sptune compile): the GPU machine compiles less */
    CHECK_ST(sp_cache_open(sp_test_cache_dir("test_gpu_ops"), &cache), SPTUNE_OK);
    if (sp_test_failures) return sp_test_done("test_gpu_ops");
    /* SPTUNE_TEST_OPS=op,op narrows the run (the API cases run with gemm or slotfill-spmm, or "api") */
    const char *only = getenv("SPTUNE_TEST_OPS");
    for (int op = 0; op < NOPS; op++)
        if (!only || listed(only, cases[op].op)) run_op(&b, cache, &cases[op]);
        else printf("test_gpu_ops: %s not selected (SPTUNE_TEST_OPS)\n", cases[op].op);
    if (!only || listed(only, "twell-ffn") || listed(only, "workspace")) run_ffn_workspace(&b, cache);
    if (!only || listed(only, "twell-ffn") || listed(only, "data")) run_ffn_data(&b, cache);
    if (!only || listed(only, "slotfill-spmm") || listed(only, "data")) run_slotfill_data(&b, cache);
    if (!only || listed(only, "gemm") || listed(only, "api")) run_api(&b, sp_cache_dir(cache));
    if (!only || listed(only, "slotfill-spmm") || listed(only, "api")) run_api_slotfill(&b, sp_cache_dir(cache));
    sp_cache_close(cache);
    sp_bench_close(&b);
    return sp_test_done("test_gpu_ops");
}
