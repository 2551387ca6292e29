/* The runtime API for applications (sptune_kernel_get): the fastest recorded configuration for
 * the exact problem, else for the nearest recorded problem whose configuration fits, else the
 * template's default, and it says which; results of another GPU profile are used only when the
 * GPU has none and they share its architecture, failed results never; a missing database is empty, a broken one is an error. Compiles with NVRTC; the
 * launch itself needs a GPU (without one it must fail with a clear error). */
#include "sp_db.h"
#include "sp_status.h"
#include "sp_template.h"
#include "sp_test.h"
#include "sptune.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const sp_env H100 = {"NVIDIA H100 80GB HBM3", "h100", 9, 0, 132, "13.0", "13.0", "0.1.0"};
static const sp_env H200 = {"NVIDIA H200", "h200", 9, 0, 132, "13.0", "13.0", "0.1.0"};

/* The same for problem, as the tuner records it: every dimension spelled out. */
static void put_timed(sp_db *db, const sp_env *env, const char *op, const char *problem, const char *config, double ms,
                      double baseline_ms, sp_outcome outcome)
{
    sp_template *t = NULL;
    CHECK_ST(sp_template_load(op, &t), SPTUNE_OK);
    if (!t) return;
    sp_problem pp;
    char *key = NULL;
    CHECK_ST(sp_problem_parse(t, problem, &pp), SPTUNE_OK);
    CHECK((key = sp_problem_format(&pp)) != NULL);
    sp_test_record(db, env, t, key ? key : problem, config, ms, baseline_ms, outcome);
    free(key);
    sp_template_free(t);
}

static void put(sp_db *db, const sp_env *env, const char *op, const char *problem, const char *config, double ms,
                sp_outcome outcome)
{
    put_timed(db, env, op, problem, config, ms, 2 * ms, outcome);
}

/* Whether two configuration texts of op name the same configuration (parameters left out are at
 * their defaults, so the expectations below survive new parameters). */
static int same_config(const char *op, const char *a, const char *b)
{
    sp_template *t = NULL;
    sp_config ca, cb;
    int same = sp_template_load(op, &t) == SPTUNE_OK && sp_config_parse(t, a, &ca) == SPTUNE_OK &&
               sp_config_parse(t, b, &cb) == SPTUNE_OK && ca.nparams == cb.nparams &&
               memcmp(ca.idx, cb.idx, (size_t)ca.nparams * sizeof ca.idx[0]) == 0;
    sp_template_free(t);
    return same;
}

/* Gets op/problem on gpu from db and checks the origin and, when want_config is set, the config. */
static sptune_kernel *get(const char *db, const char *cache, const char *op, const char *problem, const char *gpu,
                          sptune_origin want_origin, const char *want_config, const char *want_detail)
{
    sptune_kernel_request req = {.op = op, .problem = problem, .gpu = gpu, .db_path = db, .cache_dir = cache,
                                 .ignore_shipped = 1}; /* the shipped results: below */
    sptune_kernel *k = NULL;
    sptune_status st = sptune_kernel_get(&req, &k);
    CHECK_MSG(st == SPTUNE_OK, "%s %s on %s: %s", op, problem, gpu, sptune_last_error());
    if (!k) return NULL;
    const char *detail = NULL;
    sptune_origin o = sptune_kernel_origin(k, &detail);
    CHECK_MSG(o == want_origin, "%s %s on %s: origin %d, want %d (%s)", op, problem, gpu, (int)o, (int)want_origin, detail);
    if (want_config)
        CHECK_MSG(same_config(op, sptune_kernel_config(k), want_config), "%s %s: config %s, want %s", op, problem,
                  sptune_kernel_config(k), want_config);
    if (want_detail) CHECK_MSG(strstr(detail, want_detail) != NULL, "detail '%s' lacks '%s'", detail, want_detail);
    return k;
}

/* The thread contract's CPU side: gets of one request from several threads at once (the in-process copy
 * and the kernel cache shared) each give a whole kernel object of the same configuration. */
typedef struct getter { const char *cache; char config[512]; sptune_status st; } getter;

static void *get_one(void *arg)
{
    getter *g = arg;
    sptune_kernel_request rq = {.op = "twell-ffn", .problem = "M=999,D=256,F=1000,nnz=40", .gpu = "h200",
                                .db_path = "", .cache_dir = g->cache};
    for (int i = 0; i < 20 && g->st == SPTUNE_OK; i++) {
        sptune_kernel *k = NULL;
        g->st = sptune_kernel_get(&rq, &k);
        if (k) snprintf(g->config, sizeof g->config, "%s", sptune_kernel_config(k));
        char v[32];
        sptune_driver_version(v, sizeof v); /* any thread, the first ones at once (no driver here: an error) */
        sptune_kernel_free(k);
    }
    return NULL;
}

static void test_threads(const char *cache)
{
    enum { N = 8 };
    getter g[N];
    pthread_t th[N];
    for (int i = 0; i < N; i++) {
        memset(&g[i], 0, sizeof g[i]);
        g[i].cache = cache;
        CHECK_EQ(pthread_create(&th[i], NULL, get_one, &g[i]), 0);
    }
    for (int i = 0; i < N; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < N; i++)
        CHECK_MSG(g[i].st == SPTUNE_OK && g[i].config[0] && strcmp(g[i].config, g[0].config) == 0, "thread %d: %s", i,
                  g[i].config);
}

/* The TwELL parts: twell-d2t's packed gate and pool inside its workspace, as launch_ws cuts it. */
static void test_parts(const char *cache)
{
    sptune_kernel_request rq = {.op = "twell-d2t", .problem = "M=1000,D=256,F=1024,nnz=40", .gpu = "h200",
                                .db_path = "", .cache_dir = cache, .ignore_shipped = 1};
    sptune_kernel *k = NULL;
    CHECK_ST(sptune_kernel_get(&rq, &k), SPTUNE_OK);
    if (!k) return;
    for (int bound = 0; bound < 2; bound++) {
        size_t total = 0, off[3] = {0}, len[3] = {0};
        const char *names[3] = {"packed", "pool", "pool_counter"};
        CHECK_ST(sptune_kernel_workspace(k, bound, &total), SPTUNE_OK);
        for (int i = 0; i < 3; i++) CHECK_ST(sptune_kernel_workspace_part(k, names[i], total, &off[i], &len[i]), SPTUNE_OK);
        CHECK_MSG(off[0] == 0 && off[1] == len[0] && off[2] == len[0] + len[1] && off[2] + len[2] == total &&
                  len[2] == 256, "bound %d: %zu+%zu, %zu+%zu, %zu+%zu of %zu", bound, off[0], len[0], off[1], len[1],
                  off[2], len[2], total);
        sptune_arg a = {.size = sizeof(sptune_arg)};
        CHECK_ST(sptune_kernel_arg(k, 2, &a), SPTUNE_OK);   /* packed */
        CHECK(!strcmp(a.name, "packed") && len[0] >= (size_t)(bound ? a.elements_bound : a.elements) * 4);
        if (bound == 0) CHECK_ST(sptune_kernel_workspace_part(k, "packed", total - 1, &off[0], &len[0]), SPTUNE_ERR_INVALID);
    }
    size_t o = 0, n = 0, total = 0;
    CHECK_ST(sptune_kernel_workspace(k, 1, &total), SPTUNE_OK);
    CHECK_ST(sptune_kernel_workspace_part(k, "X", total, &o, &n), SPTUNE_ERR_NOT_FOUND);
    CHECK_ST(sptune_twell_t2d(k, NULL, 0, 1, 2, 3, 4), SPTUNE_ERR_INVALID);
    CHECK_MSG(strstr(sptune_last_error(), "twell-d2t's, not twell-t2d's"), "%s", sptune_last_error());
    CHECK_ST(sptune_twell_gated(k, NULL, 0, 1, 2, 3, 4, 5, 6), SPTUNE_ERR_INVALID);
    CHECK_ST(sptune_twell_d2t(k, NULL, 1001, 1, 2, 0x10000, total), SPTUNE_ERR_INVALID);
    sptune_kernel_free(k);
}

/* k's argument list (at most 8): null pointers, every dimension `other` but `dim`, which is `value`. */
static void arg_list(sptune_kernel *k, const char *dim, int value, int other, unsigned long long *ptr, int *dims, void **argv)
{
    for (int i = 0; i < sptune_kernel_arg_count(k) && i < 8; i++) {
        sptune_arg x = {.size = sizeof(sptune_arg)};
        CHECK_ST(sptune_kernel_arg(k, i, &x), SPTUNE_OK);
        dims[i] = !strcmp(x.name, dim) ? value : other;
        ptr[i] = 0;
        argv[i] = x.pointer ? (void *)&ptr[i] : (void *)&dims[i];
    }
}

/* Status names are distinct identifiers (bindings and logs use them as keys). */
static void status_names(void)
{
    const char *seen[SPTUNE_ERR_WRONG_RESULT + 1];
    for (int st = SPTUNE_OK; st <= SPTUNE_ERR_WRONG_RESULT; st++) {
        const char *n = seen[st] = sptune_status_name((sptune_status)st);
        int ident = n && *n && strspn(n, "abcdefghijklmnopqrstuvwxyz_") == strlen(n);
        CHECK_MSG(ident && strcmp(n, "unknown") != 0, "status %d: '%s'", st, n ? n : "(null)");
        for (int j = 0; j < st; j++) CHECK_MSG(strcmp(seen[j], n) != 0, "statuses %d and %d both '%s'", j, st, n);
    }
    CHECK(strcmp(sptune_status_name((sptune_status)99), "unknown") == 0);
}

/* Configurations the fixture records (gemm: A fastest, B slower, C another shape's; twell-ffn: 16 and 8 rows). */
static const char *const A = "bm=128,bn=128,bk=32,wm=64,wn=64,stages=3,swizzle=xor,prefetch=a,group_m=1";
static const char *const B = "bm=128,bn=256,bk=32,wm=64,wn=64,stages=3,swizzle=xor,prefetch=a,group_m=8";
static const char *const C = "bm=64,bn=64,bk=32,wm=32,wn=32,stages=4,swizzle=pad,prefetch=none,group_m=8";
static const char *const FFN16 = "bm=128,bn=128,bk=32,wm=64,wn=64,stages=3,swizzle=xor,prefetch=a,group_m=8,slots=15,"
                                   "warps=16,split=8,unroll=2,ldg=nc";
static const char *const FFN8 = "bm=128,bn=128,bk=32,wm=64,wn=64,stages=3,swizzle=xor,prefetch=a,group_m=8,slots=15,"
                                  "warps=8,split=2,unroll=4,ldg=nc";
static char dir[1024], db_path[1100], cache[1100], junk[1100];

/* The user's database the cases read: results of gemm and twell-ffn on an H100 and an H200. */
static void record_fixture(void)
{
    sp_db *db = NULL;
    CHECK_ST(sp_db_open(db_path, 1, &db), SPTUNE_OK);
    if (!db) return;
    put(db, &H100, "gemm", "M=4096,N=4096,K=4096", A, 0.40, SP_OUTCOME_OK);
    put(db, &H100, "gemm", "M=4096,N=4096,K=4096", B, 0.50, SP_OUTCOME_OK);
    put(db, &H100, "gemm", "M=4096,N=4096,K=4096", C, 0.01, SP_OUTCOME_WRONG_RESULT); /* never used */
    put(db, &H100, "gemm", "M=1024,N=1024,K=1024", C, 0.05, SP_OUTCOME_OK);
    put(db, &H200, "gemm", "M=4096,N=4096,K=4096", C, 0.10, SP_OUTCOME_OK);          /* another GPU */
    /* twell-ffn: the fastest at D=2048 keeps 16 fp32 rows of width D in shared memory, which
     * does not fit at D=4096; the second fastest (8 rows) does. */
    put(db, &H100, "twell-ffn", "M=16384,D=2048,F=5632,nnz=40", FFN16, 1.5, SP_OUTCOME_OK);
    put(db, &H100, "twell-ffn", "M=4096,D=2048,F=5632,nnz=40", FFN8, 0.6, SP_OUTCOME_OK);
    sp_db_close(db);
}

/* The best recorded configuration: exact, nearest, another GPU; its launches and geometry. */
static void case_recorded(void)
{
    sptune_kernel *k;
    k = get(db_path, cache, "gemm", "M=4096,N=4096,K=4096", "h100", SPTUNE_ORIGIN_EXACT, A, "tuned for M=4096,N=4096,K=4096");
    if (k) {
        unsigned grid[3], block[3], smem;
        CHECK_EQ(sptune_kernel_launches(k), 1);
        CHECK(strncmp(sptune_kernel_signature(k), "const bf16 *A", 13) == 0);
        CHECK_ST(sptune_kernel_geometry(k, 0, grid, block, &smem), SPTUNE_OK);
        CHECK(grid[0] == 32 * 32 && block[0] == 128 && smem > 0);
        CHECK_ST(sptune_kernel_geometry(k, 1, grid, block, &smem), SPTUNE_ERR_INVALID);
        /* Launching needs a GPU: without one, a clear error and nothing else. */
        int gpus = 0;
        if (sptune_gpu_count(&gpus) != SPTUNE_OK) {
            void *args[16] = {NULL};   /* the full list, every entry missing */
            CHECK(sptune_kernel_launch(k, NULL, args) != SPTUNE_OK && *sptune_last_error());
        }
        CHECK_ST(sptune_kernel_launch(k, NULL, NULL), SPTUNE_ERR_INVALID);
        sptune_kernel_free(k);
    }
    sptune_kernel_free(get(db_path, cache, "gemm", "M=4000,N=4096,K=4096", "h100", SPTUNE_ORIGIN_NEAREST, A,
                           "tuned for M=4096,N=4096,K=4096 on h100 at 0.4000 ms (2.00x the baseline)"));
    sptune_kernel_free(get(db_path, cache, "gemm", "M=1000,N=1000,K=1200", "h100", SPTUNE_ORIGIN_NEAREST, C,
                           "tuned for M=1024,N=1024,K=1024"));
    sptune_kernel_free(get(db_path, cache, "gemm", "M=4096,N=4096,K=4096", "h200", SPTUNE_ORIGIN_EXACT, C, NULL));
}

/* Nothing for the profile, no database, no file: the default, saying so. */
static void case_defaults(void)
{
    sp_template *t = NULL;
    sp_config def, hopper;
    char *def_text = NULL, *hopper_text = NULL;
    sp_gpu_profile h100;
    CHECK_ST(sp_template_load("gemm", &t), SPTUNE_OK);
    CHECK_ST(sp_gpu_profile_named("h100", &h100), SPTUNE_OK);
    if (t) {
        sp_config_default(t, &def);
        def_text = sp_config_format(t, &def);
        /* a Hopper's default is the template's for it: the wgmma main loop */
        CHECK_ST(sp_config_default_for(t, &h100, NULL, &hopper), SPTUNE_OK);
        hopper_text = sp_config_format(t, &hopper);
        CHECK_MSG(hopper_text && strstr(hopper_text, "mainloop=wgmma") && strstr(def_text, "mainloop=mma"), "%s / %s",
                  hopper_text, def_text);
        sp_template_free(t);
    }
    sptune_kernel_free(get(db_path, cache, "gemm", "M=512,N=512,K=512", "rtx-pro-6000", SPTUNE_ORIGIN_DEFAULT,
                           def_text, "nothing usable recorded for gemm on rtx-pro-6000"));
    /* An H200 with nothing of its own for twell-ffn gets the H100's results (both sm_90a). */
    sptune_kernel_free(get(db_path, cache, "twell-ffn", "M=4096,D=2048,F=5632,nnz=40", "h200", SPTUNE_ORIGIN_SAME_ARCH,
                           FFN8, "on h100 at 0.6000 ms (2.00x the baseline), a GPU of the same architecture"));
    sptune_kernel_free(get("", cache, "gemm", "M=512,N=512,K=512", "h100", SPTUNE_ORIGIN_DEFAULT, hopper_text,
                           "no database of the user's"));
    sptune_kernel_free(get(junk, "", "gemm", "M=512,N=512,K=512", "h100", SPTUNE_ORIGIN_DEFAULT, hopper_text,
                           "no database at"));
    free(def_text);
    free(hopper_text);
}

/* A recorded configuration that does not fit the problem is passed over for one that does. */
static void case_fits(void)
{
    sptune_kernel *k = NULL;
    k = get(db_path, cache, "twell-ffn", "M=16384,D=4096,F=14336,nnz=40", "h100", SPTUNE_ORIGIN_NEAREST, FFN8,
            "tuned for M=4096,D=2048,F=5632,nnz=40");
    if (k) {
        unsigned grid[3], block[3], smem;
        CHECK(sptune_kernel_launches(k) == 7);   /* zero, producer, consumer, the dense path's three, finalize */
        CHECK_ST(sptune_kernel_geometry(k, 2, grid, block, &smem), SPTUNE_OK);
        CHECK(grid[0] == 16384 / 4 && block[0] == 256 && smem == 8 * 4096 * 4 + 4 * 4096 * 2);
        /* The workspace an application allocates, from the template's declared sizes (no parsing of
         * the configuration): capacities typical and bound, every workspace's elements at both. */
        long long bn = -1;
        const char *cf = strstr(sptune_kernel_config(k), "bn=");
        if (cf) bn = atoll(cf + 3);
        long long tiles = (14336 + bn - 1) / bn, route = -1;
        const char *cr = strstr(sptune_kernel_config(k), "route=");
        if (cr) route = atoll(cr + 6);
        CHECK(route > 0);
        size_t typical = 0, bound = 0;
        for (int i = 0; i < sptune_kernel_arg_count(k); i++) {
            sptune_arg a = {.size = sizeof(sptune_arg)};
            CHECK_ST(sptune_kernel_arg(k, i, &a), SPTUNE_OK);
            /* sized from the described data (nnz 40, 0.5 % heavy tokens of 2000 active neurons): 1/64 of the tokens
               overflowing whole tiles, 1/16 of all entries, the heavy tokens' entries and half again; the dense
               path, those heavy tokens and half again, 1/64 of the batch, and every token that can reach the route
               in a batch of that mean */
            const long long heavy_words = (16384LL * (2000 + tiles) * 3 + 399) / 400,
                            dense_cap = 256 + 16 + 123 + (route > 0 ? (16384 * 40 + route - 1) / route : 0);
            if (strcmp(a.name, "pool_capacity") == 0)
                CHECK_MSG(a.typical == 256 * (14336 + tiles) + 16384 * 40 / 16 + heavy_words + 4096 &&
                          a.bound == 16384 * (14336 + tiles), "pool_capacity %lld / %lld", a.typical, a.bound);
            if (strcmp(a.name, "dense_capacity") == 0) CHECK_MSG(a.typical == dense_cap && a.bound == 16384, "%lld", a.typical);
            if (strcmp(a.name, "dense_acc") == 0)
                CHECK(a.elements == dense_cap * 4096 && a.elements_bound == 16384LL * 4096);
            if (strcmp(a.name, "dense_h") == 0) CHECK(a.type_bytes == 2 && a.elements == dense_cap * 14336);
            if (strcmp(a.name, "packed") == 0) CHECK(a.elements == a.elements_bound && a.elements > 0);
            if (strcmp(a.name, "X") == 0) CHECK(a.elements == 16384LL * 4096 && a.typical == -1 && a.bound == -1);
            if (a.role == SPTUNE_ARG_WORKSPACE) {
                typical += ((size_t)a.elements * a.type_bytes + 255) / 256 * 256;
                bound += ((size_t)a.elements_bound * a.type_bytes + 255) / 256 * 256;
            }
        }
        size_t ws = 0;
        CHECK_ST(sptune_kernel_workspace(k, 0, &ws), SPTUNE_OK);
        CHECK(ws == typical && ws > 0);
        CHECK_ST(sptune_kernel_workspace(k, 1, &ws), SPTUNE_OK);
        CHECK(ws == bound && bound > typical);
        CHECK_ST(sptune_kernel_workspace(NULL, 0, &ws), SPTUNE_ERR_INVALID);
        sptune_kernel_free(k);
    }
    /* Rows this wide fit no recorded configuration and not the default: a clear refusal. */
    sptune_kernel_request wide = {.op = "twell-ffn", .problem = "M=64,D=14336,F=4096,nnz=40", .gpu = "h100",
                                  .db_path = db_path, .cache_dir = cache, .ignore_shipped = 1};
    k = NULL;
    CHECK_ST(sptune_kernel_get(&wide, &k), SPTUNE_ERR_UNSUPPORTED);
    CHECK(k == NULL && strstr(sptune_last_error(), "does not fit") != NULL);
}

/* A default that does not fit (split-K 4 over a K of two chunks) gives way to the valid
 * configuration nearest to it, and the fixed parameters of an encoding stay as given. */
static void case_nearest_valid(void)
{
    sptune_kernel *k = NULL;
    sptune_kernel_request shortk = {.op = "slotfill-spmm", .problem = "M=256,K=120,N=4,sparsity=50,fp16=0,dist=1",
                                    .gpu = "h200", .db_path = "", .cache_dir = cache, .ignore_shipped = 1,
                                    .fixed = "window=64,dbits=7,fill=0,decode=list"};
    k = NULL;
    CHECK_ST(sptune_kernel_get(&shortk, &k), SPTUNE_OK);
    if (k) {
        CHECK_EQ(sptune_kernel_origin(k, NULL), SPTUNE_ORIGIN_DEFAULT);
        const char *gpu = "x";
        CHECK(sptune_kernel_recorded(k, &gpu) == NULL && gpu == NULL && sptune_kernel_recorded(NULL, NULL) == NULL);
        CHECK_MSG(!strcmp(sptune_kernel_config(k), "dtype=bf16,window=64,dbits=7,fill=0,warps=4,bn=8,stages=6,split=2,"
                                                    "decode=list,tpw=1,ring=36,ecap=128,vec=8,mainloop=mma,expand=0,"
                                                    "wsrc=regs,krec=1,dwarps=4,wrows=64,xload=scatter,xbn=256"),
                  "%s", sptune_kernel_config(k));
        sptune_kernel_free(k);
    }
}

/* fp16 weights with only bf16 results recorded (the shipped ones): the same kernel in the other format (dtype
 * costs the same: same_cost), from the bf16 result of the same shape, saying how it was measured. */
static void case_same_cost(void)
{
    const char *bm = "window=128,dbits=5,fill=0,decode=bitmap";
    char fixed16[96], fixedbf[96];
    snprintf(fixed16, sizeof fixed16, "%s,dtype=f16", bm);
    snprintf(fixedbf, sizeof fixedbf, "%s,dtype=bf16", bm);
    sptune_kernel_request rq = {.op = "slotfill-spmm", .problem = "M=14336,K=4096,N=16,sparsity=50,fp16=0,dist=2",
                                .gpu = "h200", .db_path = "", .cache_dir = cache, .fixed = fixedbf};
    sptune_kernel *b16 = NULL, *f16 = NULL;
    CHECK_ST(sptune_kernel_get(&rq, &b16), SPTUNE_OK);
    rq.problem = "M=14336,K=4096,N=16,sparsity=50,fp16=1,dist=2";
    rq.fixed = fixed16;
    CHECK_ST(sptune_kernel_get(&rq, &f16), SPTUNE_OK);
    if (b16 && f16) {
        const char *detail = NULL, *cb = sptune_kernel_config(b16), *cf = sptune_kernel_config(f16);
        CHECK_EQ(sptune_kernel_origin(b16, NULL), SPTUNE_ORIGIN_EXACT);
        CHECK_MSG(sptune_kernel_origin(f16, &detail) == SPTUNE_ORIGIN_NEAREST &&
                      strstr(detail, "tuned for M=14336,K=4096,N=16,sparsity=50,fp16=0,dist=2") &&
                      strstr(detail, "measured with dtype=bf16"), "%s", detail);
        CHECK_MSG(!strncmp(cb, "dtype=bf16,", 11) && !strncmp(cf, "dtype=f16,", 10) && !strcmp(cb + 11, cf + 10),
                  "%s / %s", cb, cf);
        double ms_b = 0, ms_f = 0;
        CHECK_ST(sptune_kernel_expected(b16, &ms_b, NULL), SPTUNE_OK);
        CHECK_ST(sptune_kernel_expected(f16, &ms_f, NULL), SPTUNE_OK);
        CHECK(ms_b > 0 && ms_f == ms_b);
    }
    sptune_kernel_free(b16);
    sptune_kernel_free(f16);
    /* a parameter that changes the work (the layout) is never swapped in this way */
    rq.fixed = "window=64,dbits=7,fill=0,decode=list,dtype=f16";
    f16 = NULL;
    CHECK_ST(sptune_kernel_get(&rq, &f16), SPTUNE_OK);
    if (f16) CHECK_MSG(strstr(sptune_kernel_config(f16), "decode=list"), "%s", sptune_kernel_config(f16));
    sptune_kernel_free(f16);
}

/* The shipped results (db/data/h200.tsv, measured on an H200): an application with no
 * database of its own gets the H200's tuned twell-ffn, and an H100 gets them as the same
 * architecture's; the user's own result for the problem wins over the shipped one. */
static void case_shipped(void)
{
    sp_db *db = NULL;
    sptune_kernel *k = NULL;
    sptune_kernel_request shipped = {.op = "twell-ffn", .problem = "M=16384,D=2048,F=5632,nnz=40", .gpu = "h200",
                                     .db_path = "", .cache_dir = cache};
    k = NULL;
    CHECK_ST(sptune_kernel_get(&shipped, &k), SPTUNE_OK);
    if (k) {
        const char *detail = NULL;
        CHECK_EQ(sptune_kernel_origin(k, &detail), SPTUNE_ORIGIN_EXACT);
        CHECK_MSG(strstr(detail, "(results shipped with sptune)") && strstr(detail, "on h200"), "%s", detail);
        const char *gpu = NULL, *rec = sptune_kernel_recorded(k, &gpu);
        CHECK_MSG(rec && gpu && !strncmp(rec, "M=16384,D=2048,F=5632,nnz=40,", 29) && !strcmp(gpu, "h200"), "%s on %s",
                  rec ? rec : "(none)", gpu ? gpu : "(none)");
        sptune_kernel_free(k);
    }
    shipped.gpu = "h100";
    k = NULL;
    CHECK_ST(sptune_kernel_get(&shipped, &k), SPTUNE_OK);
    if (k) {
        const char *detail = NULL;
        CHECK_MSG(sptune_kernel_origin(k, &detail) == SPTUNE_ORIGIN_SAME_ARCH && strstr(detail, "shipped"), "%s", detail);
        const char *gpu = NULL;
        CHECK(sptune_kernel_recorded(k, &gpu) != NULL && gpu && !strcmp(gpu, "h200"));
        sptune_kernel_free(k);
    }
    /* Never worse: a user's slower measurement of the problem (a short tuning run that timed a template
     * default at 0.77x) does not displace the shipped 1.28x; a faster one (2x) does. */
    CHECK_ST(sp_db_open(db_path, 1, &db), SPTUNE_OK);
    if (db) {
        put_timed(db, &H200, "twell-ffn", "M=16384,D=2048,F=5632,nnz=40", FFN8, 2.0, 1.54, SP_OUTCOME_OK);
        sp_db_close(db);
    }
    shipped.gpu = "h200";
    shipped.db_path = db_path;
    k = NULL;
    CHECK_ST(sptune_kernel_get(&shipped, &k), SPTUNE_OK);
    if (k) {
        const char *detail = NULL;
        CHECK(sptune_kernel_origin(k, &detail) == SPTUNE_ORIGIN_EXACT &&
              !same_config("twell-ffn", sptune_kernel_config(k), FFN8));
        CHECK_MSG(strstr(detail, "shipped"), "%s", detail);
        sptune_kernel_free(k);
    }
    CHECK_ST(sp_db_open(db_path, 1, &db), SPTUNE_OK);
    if (db) {
        put(db, &H200, "twell-ffn", "M=16384,D=2048,F=5632,nnz=40", FFN8, 9.0, SP_OUTCOME_OK);
        sp_db_close(db);
    }
    k = NULL;
    CHECK_ST(sptune_kernel_get(&shipped, &k), SPTUNE_OK);
    if (k) {
        const char *detail = NULL;
        CHECK(sptune_kernel_origin(k, &detail) == SPTUNE_ORIGIN_EXACT && same_config("twell-ffn", sptune_kernel_config(k), FFN8));
        CHECK_MSG(!strstr(detail, "shipped") && strstr(detail, "at 9.0000 ms"), "%s", detail);
        sptune_kernel_free(k);
    }
}

/* A key recorded before twell-ffn had gen and spread (their defaults are that earlier data: as_before) names
 * the same problem: the user's result stays exact and ahead of the shipped one. */
static void case_old_keys(void)
{
    sp_db *db = NULL;
    const char *old_key = "M=12288,D=2048,F=5632,nnz=40,dead=30,tail=0.7,dense=0.5,dense_nnz=2000,at=2,order=0";
    sp_template *ffn = NULL;
    CHECK_ST(sp_template_load("twell-ffn", &ffn), SPTUNE_OK);
    CHECK_ST(sp_db_open(db_path, 1, &db), SPTUNE_OK);
    if (ffn && db) sp_test_record(db, &H200, ffn, old_key, FFN8, 0.5, 5.0, SP_OUTCOME_OK);
    sp_db_close(db);
    sp_template_free(ffn);
    sptune_kernel_request rq = {.op = "twell-ffn", .problem = "M=12288,D=2048,F=5632,nnz=40", .gpu = "h200",
                                .db_path = db_path, .cache_dir = cache};
    sptune_kernel *a = NULL;
    CHECK_ST(sptune_kernel_get(&rq, &a), SPTUNE_OK);
    const char *detail = NULL;
    if (a) CHECK_MSG(sptune_kernel_origin(a, &detail) == SPTUNE_ORIGIN_EXACT && strstr(detail, "at 0.5000 ms"),
                     "%s", detail);
    sptune_kernel_free(a);
}

/* twell-ffn's result is served only for data near what it was measured on, else the dense layer stands in and
 * says why: a heavier firing-rate tail than measured is near (it concentrates the firing), a lighter one, another
 * mean or heavy share is not. */
static void case_data_distance(void)
{
    sp_db *db = NULL;
    CHECK_ST(sp_db_open(db_path, 1, &db), SPTUNE_OK);
    if (db) {
        put_timed(db, &H200, "twell-ffn", "M=8192,D=2048,F=5632,nnz=40,tail=0.7,dense=0.5", FFN16, 1.0, 2.0,
                  SP_OUTCOME_OK);
        sp_db_close(db);
    }
    static const struct { const char *problem, *why; } cases[] = {
        {"M=8192,D=2048,F=5632,nnz=41,dead=34,tail=1.5,dense=0.44,dense_nnz=1977", NULL},
        {"M=8192,D=2048,F=5632,nnz=40,tail=0.6,dense=0.5", NULL},
        {"M=8192,D=2048,F=5632,nnz=40,tail=0.2,dense=0.5", "a firing-rate tail of 0.2, measured at 0.7"},
        {"M=8192,D=2048,F=5632,nnz=80,tail=0.7,dense=0.5", "80 active neurons a token, measured at 40"},
        {"M=8192,D=2048,F=5632,nnz=40,tail=0.7,dense=5", "5 % heavy tokens, measured at 0.5 %"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sptune_kernel_request rq = {.op = "twell-ffn", .problem = cases[i].problem, .gpu = "h200", .db_path = db_path,
                                    .cache_dir = cache, .ignore_shipped = 1};
        sptune_kernel *k = NULL;
        CHECK_ST(sptune_kernel_get(&rq, &k), SPTUNE_OK);
        const char *detail = "";
        if (k) sptune_kernel_origin(k, &detail);
        const int dense = strstr(detail, "the dense layer on cuBLAS in the op's place") != NULL;
        if (cases[i].why)
            CHECK_MSG(dense && strstr(detail, cases[i].why), "%s: %s", cases[i].problem, detail);
        else
            CHECK_MSG(!dense && strstr(detail, "at 1.0000 ms"), "%s: %s", cases[i].problem, detail);
        sptune_kernel_free(k);
    }
}

/* Repeated gets come from the in-process copy, the same kernel; a result recorded meanwhile in the
 * user's database is served at once. */
static void case_memo(void)
{
    sp_db *db = NULL;
    sptune_kernel_request rq = {.op = "gemm", .problem = "M=640,N=640,K=640", .gpu = "h200", .db_path = db_path,
                                .cache_dir = cache, .ignore_shipped = 1};
    sptune_kernel *a = NULL, *b = NULL, *c = NULL;
    CHECK_ST(sptune_kernel_get(&rq, &a), SPTUNE_OK);
    CHECK_ST(sptune_kernel_get(&rq, &b), SPTUNE_OK);
    if (a && b) {
        unsigned ga[3], gb[3], ba[3], bb[3], sa = 0, sb = 0;
        CHECK(a != b && strcmp(sptune_kernel_config(a), sptune_kernel_config(b)) == 0 &&
              strcmp(sptune_kernel_signature(a), sptune_kernel_signature(b)) == 0 &&
              sptune_kernel_origin(a, NULL) == sptune_kernel_origin(b, NULL) &&
              sptune_kernel_arg_count(a) == sptune_kernel_arg_count(b));
        CHECK_ST(sptune_kernel_geometry(a, 0, ga, ba, &sa), SPTUNE_OK);
        CHECK_ST(sptune_kernel_geometry(b, 0, gb, bb, &sb), SPTUNE_OK);
        CHECK(memcmp(ga, gb, sizeof ga) == 0 && memcmp(ba, bb, sizeof ba) == 0 && sa == sb);
    }
    sptune_kernel_free(a);   /* the copy outlives the kernel it came from */
    CHECK_ST(sp_db_open(db_path, 1, &db), SPTUNE_OK);
    if (db) {
        put(db, &H200, "gemm", "M=640,N=640,K=640", "bm=64,bn=64,bk=32,wm=32,wn=32,stages=3", 0.5, SP_OUTCOME_OK);
        sp_db_close(db);
    }
    CHECK_ST(sptune_kernel_get(&rq, &c), SPTUNE_OK);
    if (c) CHECK_MSG(sptune_kernel_origin(c, NULL) == SPTUNE_ORIGIN_EXACT &&
                     strstr(sptune_kernel_config(c), "bm=64,bn=64,bk=32,wm=32,wn=32,stages=3"), "%s",
                     sptune_kernel_config(c));
    sptune_kernel_free(b);
    sptune_kernel_free(c);
}

/* The token count (M) may be 1 to the problem's; above it, 0, or another dimension changed is refused
 * before anything runs. */
static void case_tokens(void)
{
    sptune_kernel_request rq = {.op = "gemm", .problem = "M=640,N=640,K=640", .gpu = "h200", .db_path = db_path,
                                .cache_dir = cache, .ignore_shipped = 1};
    sptune_kernel *a = NULL;
    CHECK_ST(sptune_kernel_get(&rq, &a), SPTUNE_OK);
    if (a) {
        long long max = 0;
        CHECK(sptune_kernel_tokens(a, &max) && !strcmp(sptune_kernel_tokens(a, NULL), "M") && max == 640);
        const struct { const char *dim; int value; const char *says; } bad[] = {
            {"M", 641, "M=641, but the kernel serves M from 1 to 640"},
            {"M", -3, "M=-3, but"},
            {"N", 641, "N=641, but the kernel was got for N=640"},
            {"K", 320, "K=320, but the kernel was got for K=640"}};
        unsigned long long ptr[8] = {0};
        int dims[8];
        void *argv[8] = {0};
        for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
            arg_list(a, bad[b].dim, bad[b].value, 640, ptr, dims, argv);
            CHECK_ST(sptune_kernel_launch(a, NULL, argv), SPTUNE_ERR_INVALID);
            CHECK_MSG(strstr(sptune_last_error(), bad[b].says), "%s", sptune_last_error());
        }
        /* an empty batch is no launch at all (no GPU needed): through the list, a helper and launch_ws */
        arg_list(a, "M", 0, 640, ptr, dims, argv);
        CHECK_ST(sptune_kernel_launch(a, NULL, argv), SPTUNE_OK);
        CHECK_ST(sptune_gemm(a, NULL, 0, 0x1000, 0x2000, 0x3000), SPTUNE_OK);
        unsigned long long t3[3] = {0x1000, 0x2000, 0x3000};
        CHECK_ST(sptune_kernel_launch_ws(a, NULL, 641, t3, 0, 0), SPTUNE_ERR_INVALID);
        CHECK_MSG(strstr(sptune_last_error(), "641 tokens, but the kernel serves 0 to 640"), "%s", sptune_last_error());
        CHECK_ST(sptune_kernel_launch_ws(a, NULL, -2, t3, 0, 0), SPTUNE_ERR_INVALID);
        CHECK_ST(sptune_gemm(a, NULL, 641, 0x1000, 0x2000, 0x3000), SPTUNE_ERR_INVALID);
        CHECK_ST(sptune_twell_ffn(a, NULL, 1, 1, 2, 3, 4, 5, 0, 0), SPTUNE_ERR_INVALID);
        CHECK_MSG(strstr(sptune_last_error(), "the kernel is gemm's, not twell-ffn's"), "%s", sptune_last_error());
        CHECK_ST(sptune_slotfill_spmm(a, NULL, 1, 1, 2, 3, 0, 0), SPTUNE_ERR_INVALID);
        CHECK_ST(sptune_twell_ffn(NULL, NULL, 1, 1, 2, 3, 4, 5, 0, 0), SPTUNE_ERR_INVALID);
    }
    sptune_kernel_free(a);
}

/* The launch with one workspace: too small is refused before anything runs; large enough goes on to
 * the launch (which needs a GPU). */
static void case_workspace(void)
{
    sptune_kernel_request rq = {.op = "twell-ffn", .problem = "M=1000,D=256,F=1024,nnz=40", .gpu = "h200",
                                .db_path = "", .cache_dir = cache, .ignore_shipped = 1};
    sptune_kernel *a = NULL;
    CHECK_ST(sptune_kernel_get(&rq, &a), SPTUNE_OK);
    if (a) {
        unsigned long long tensors[5] = {0x1000, 0x2000, 0x3000, 0x4000, 0x5000};
        size_t need = 0;
        CHECK_ST(sptune_kernel_workspace(a, 0, &need), SPTUNE_OK);
        CHECK_ST(sptune_kernel_launch_ws(a, NULL, 0, tensors, 0x10000, need - 1), SPTUNE_ERR_INVALID);
        CHECK_MSG(strstr(sptune_last_error(), "the kernel needs"), "%s", sptune_last_error());
        /* a batch needs only its own workspace: cut at its count; one byte less is refused, naming both sizes */
        size_t need999 = 0, need1 = 0, bound1 = 0;
        CHECK_ST(sptune_kernel_workspace_for(a, 999, 0, &need999), SPTUNE_OK);
        CHECK_ST(sptune_kernel_workspace_for(a, 1, 0, &need1), SPTUNE_OK);
        CHECK_ST(sptune_kernel_workspace_for(a, 1, 1, &bound1), SPTUNE_OK);
        CHECK_MSG(need1 < need999 && need999 < need && bound1 > 0, "%zu %zu %zu (bound %zu)", need1, need999,
                  need, bound1);
        size_t all = 0;
        CHECK_ST(sptune_kernel_workspace_for(a, SPTUNE_ALL_TOKENS, 0, &all), SPTUNE_OK);
        CHECK_EQ(all, need);
        CHECK_ST(sptune_kernel_workspace_for(a, 1001, 0, &all), SPTUNE_ERR_INVALID);
        CHECK_ST(sptune_kernel_workspace_for(a, 0, 0, &all), SPTUNE_ERR_INVALID);
        CHECK_ST(sptune_twell_ffn(a, NULL, 999, 1, 2, 3, 4, 5, 0x10000, need999 - 1), SPTUNE_ERR_INVALID);
        CHECK_MSG(strstr(sptune_last_error(), "for a batch of 999 (sptune_kernel_workspace_for)"), "%s",
                  sptune_last_error());
        CHECK_ST(sptune_kernel_launch_ws(a, NULL, 0, NULL, 0x10000, need), SPTUNE_ERR_INVALID);
        CHECK_ST(sptune_kernel_launch_ws(a, NULL, 1001, tensors, 0x10000, need), SPTUNE_ERR_INVALID);
        CHECK_ST(sptune_kernel_launch_ws(a, NULL, 1000, tensors, 0x10010, need), SPTUNE_ERR_INVALID);
        CHECK_MSG(strstr(sptune_last_error(), "not 256-byte aligned"), "%s", sptune_last_error());
        CHECK_ST(sptune_kernel_launch_ws(a, NULL, 0, tensors, 0x10000, need), SPTUNE_OK); /* empty: nothing runs */
        int gpus = 0;
        if (sptune_gpu_count(&gpus) != SPTUNE_OK) {
            for (int tokens = -1; tokens <= 1000; tokens += tokens < 0 ? 334 : 333)   /* past the checks, to the driver */
                CHECK(sptune_kernel_launch_ws(a, NULL, tokens, tensors, 0x10000, need) != SPTUNE_OK &&
                      !strstr(sptune_last_error(), "workspace") && !strstr(sptune_last_error(), "tokens"));
            CHECK_ST(sptune_kernel_launch_ws(a, NULL, 999, tensors, 0x10000, need999), SPTUNE_ERR_NO_GPU);
            CHECK_ST(sptune_kernel_launch_ws(a, NULL, 1, tensors, 0x10000, need1), SPTUNE_ERR_NO_GPU);
        }
    }
    sptune_kernel_free(a);
}

/* A kernel got for 65536 tokens launched with one wants that token's workspace, not 136 MB. */
static void case_workspace_one(void)
{
    sptune_kernel_request rq = {.op = "twell-ffn", .problem = "M=65536,D=2048,F=5632,nnz=40", .gpu = "h200",
                                .db_path = "", .cache_dir = cache};
    sptune_kernel *a = NULL;
    CHECK_ST(sptune_kernel_get(&rq, &a), SPTUNE_OK);
    size_t all = 0, one = 0;
    if (a && sptune_kernel_workspace(a, 0, &all) == SPTUNE_OK && sptune_kernel_workspace_for(a, 1, 0, &one) == SPTUNE_OK)
        CHECK_MSG(one > 0 && one * 100 < all, "workspace for one token %zu bytes, for 65536 %zu", one, all);
    sptune_kernel_free(a);
}

/* The sparsity hint is optional: without nnz the TwELL ops take 40 (what the shipped results measured) */
static void case_sparsity_hint(void)
{
    sptune_kernel_request a = {.op = "twell-ffn", .problem = "M=2000,D=256,F=1024", .gpu = "h200", .db_path = "",
                               .cache_dir = cache};
    sptune_kernel_request b = {.op = "twell-ffn", .problem = "M=2000,D=256,F=1024,nnz=40", .gpu = "h200",
                               .db_path = "", .cache_dir = cache};
    sptune_kernel *ka = NULL, *kb = NULL;
    CHECK_ST(sptune_kernel_get(&a, &ka), SPTUNE_OK);
    CHECK_ST(sptune_kernel_get(&b, &kb), SPTUNE_OK);
    if (ka && kb) CHECK(strcmp(sptune_kernel_config(ka), sptune_kernel_config(kb)) == 0);
    sptune_kernel_free(ka);
    sptune_kernel_free(kb);
}

/* Errors: a broken database, an unknown op, a bad problem, a missing field. */
static void case_errors(void)
{
    sptune_kernel *k = NULL;
    FILE *f = fopen(junk, "w");
    if (f) { fputs("this is not a database, but long enough to look like a file header........", f); fclose(f); }
    sptune_kernel_request req = {.op = "gemm", .problem = "M=64,N=64,K=64", .gpu = "h100", .db_path = junk,
                                 .cache_dir = cache};
    k = NULL;
    CHECK_ST(sptune_kernel_get(&req, &k), SPTUNE_ERR_DB);
    CHECK(k == NULL && *sptune_last_error());
    /* the request's size: this header's, or a later caller's larger struct (its fields past ours unread, the ones
     * we know read: the junk database is reached), never smaller than the first version's */
    req.size = SPTUNE_KERNEL_REQUEST_SIZE;
    CHECK_ST(sptune_kernel_get(&req, &k), SPTUNE_ERR_DB);
    struct { sptune_kernel_request r; char later[64]; } big;
    memset(&big, 0x5a, sizeof big); /* fields this library does not know, non-zero */
    big.r = req;
    big.r.size = sizeof big;
    CHECK_ST(sptune_kernel_get(&big.r, &k), SPTUNE_ERR_DB);
    req.size = sizeof(void *);
    CHECK_ST(sptune_kernel_get(&req, &k), SPTUNE_ERR_INVALID);
    CHECK_MSG(strstr(sptune_last_error(), "request size") != NULL, "%s", sptune_last_error());
    req.size = 0;
    CHECK(k == NULL);
    req.db_path = db_path;
    req.op = "no-such-op";
    CHECK_ST(sptune_kernel_get(&req, &k), SPTUNE_ERR_NOT_FOUND);
    req.op = "gemm";
    req.problem = "M=64,N=64";
    CHECK(sptune_kernel_get(&req, &k) != SPTUNE_OK && k == NULL);
    req.problem = "M=64,N=64,K=64";
    req.gpu = "no-such-gpu";
    CHECK(sptune_kernel_get(&req, &k) != SPTUNE_OK && k == NULL);
    req.gpu = NULL;
    CHECK_ST(sptune_kernel_get(&req, &k), SPTUNE_ERR_INVALID);
    CHECK_ST(sptune_kernel_get(NULL, &k), SPTUNE_ERR_INVALID);
    CHECK(sptune_kernel_config(NULL) == NULL && sptune_kernel_signature(NULL) == NULL && sptune_kernel_launches(NULL) == 0);
    sptune_kernel_free(NULL);
}

int main(void)
{
    status_names();
    snprintf(dir, sizeof dir, "%s", sp_test_tmpdir("test_kernel_api"));
    snprintf(db_path, sizeof db_path, "%s/tuning.db", dir);
    snprintf(cache, sizeof cache, "%s", sp_test_cache_dir("test_kernel_api"));
    snprintf(junk, sizeof junk, "%s/junk.db", dir);
    record_fixture();
    case_recorded();
    case_defaults();
    case_fits();
    case_nearest_valid();
    case_same_cost();
    case_shipped();
    case_old_keys();
    case_data_distance();
    case_memo();
    case_tokens();
    case_workspace();
    case_workspace_one();
    test_threads(cache);
    test_parts(cache);
    case_sparsity_hint();
    case_errors();
    return sp_test_done("test_kernel_api");
}
