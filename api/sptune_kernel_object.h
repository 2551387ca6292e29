/* The kernel object of the public API (struct sptune_kernel), shared by its two halves: getting a kernel
 * (sptune_kernel.c: lookup, render, compile, describe) and launching it (sptune_launch.c). Internal to api/. */
#ifndef SPTUNE_KERNEL_OBJECT_H
#define SPTUNE_KERNEL_OBJECT_H

#include "sp_args.h"
#include "sp_cache.h"
#include "sp_dense_ffn.h"
#include "sp_gpu.h"
#include "sp_launch.h"
#include "sp_template.h"
#include "sptune.h"

#include <stddef.h>

/* An argument as the API reports it: the declaration's strings kept with the kernel. */
typedef struct kernel_arg {
    sp_arg decl;
    char *shape_text;
    long long elements, elements_bound, typical, bound;
    long long dim;        /* a dimension's value in the problem the kernel was got for */
} kernel_arg;

/* The geometry of a launch with fewer tokens than the problem's, as the template works it out, and the arguments'
 * sizes at that count: each pointer's elements and each scalar's value at the typical sizes [0] and at the bounds
 * [1] (-1 where undeclared), what a workspace cut for that batch alone holds. */
#define GEO_MAX 16
typedef struct geometry {
    long long tokens;
    sp_kernel_stage stage[SP_MAX_KERNELS];
    int sized;   /* the sizes below worked out (at the first workspace cut for this count) */
    long long elements[2][SP_MAX_ARGS], scalar[2][SP_MAX_ARGS];
} geometry;

struct sptune_kernel {
    char *op;
    char *config;
    char *args;
    int nargs;
    kernel_arg arg[SP_MAX_ARGS];
    sptune_origin origin;
    char detail[1024];
    double ms, baseline_ms;   /* of the recorded result served; -1 none */
    char recorded[512], recorded_gpu[32]; /* its problem and GPU profile; "" none (a default) */
    sp_kernel_src src;
    sp_cubin cubin;
    sp_kernel loaded;     /* loaded.module is NULL until the first launch */
    /* the token count: which argument and dimension it is (-1: none); its maximum is the argument's dim */
    int tokens_arg, tokens_dim;
    /* worked out once at get, for the launches: the workspace's total at the typical sizes and at the
       bounds (SIZE_MAX: not sizable, sptune_kernel_workspace says why), and the op's tensor count */
    size_t ws_total[2];
    int ntensors;
    /* what a launch with fewer tokens needs: the template (loaded at the first such launch), the
       configuration and problem rendered, and the geometries worked out so far (the last GEO_MAX) */
    char hash[65];
    sp_config cfg;
    sp_gpu_profile gpu;
    sp_problem want;
    sp_template *t;
    int ngeo, geo_next;
    geometry geo[GEO_MAX];
    /* twell-ffn: the dense layer on cuBLAS runs in the configuration's place (sp_api_dense.c: why in detail), its
       cuBLAS handle and kernel made in the context current at the first launch */
    int dense;
    sp_dense_ffn *dense_rt;
};

/* Whether k (twell-ffn, as the lookup found it for want) runs the dense layer instead: nothing measured near the
 * described data, or the dense layer measured faster there. Sets k->dense, says why in k->detail, and makes k->ms
 * the dense layer's. */
void sp_api_dense_decide(const sp_template *t, const sp_problem *want, sptune_kernel *k);
/* k runs the dense layer from now on; its detail says so (and why, where why is not NULL) before what it said. */
void sp_api_dense_mark(sptune_kernel *k, const char *why);
/* The dense layer for `tokens` tokens: tensors X, Wg, Wu, Wd, Y; the caller's workspace for the gate and up of as many
 * rows at a time as it holds. _args: from a raw launch's list (the largest workspace part as the workspace). */
sptune_status sp_api_dense_launch(sptune_kernel *k, void *stream, long long tokens, const unsigned long long *tensors,
                                  unsigned long long workspace, size_t workspace_bytes);
sptune_status sp_api_dense_launch_args(sptune_kernel *k, void *stream, long long tokens, void **args);

/* A workspace cut into k's workspace arguments as sptune_kernel_launch_ws cuts it for a launch of *tokens tokens
 * (SPTUNE_ALL_TOKENS: the problem's, written back; the count and workspace checked, fn naming the caller in errors):
 * each workspace part's address, and each scalar's and dimension's value (-1 where none). */
typedef struct sp_api_cut {
    CUdeviceptr ptr[SP_MAX_ARGS];
    long long num[SP_MAX_ARGS];
} sp_api_cut;
sptune_status sp_api_cut_workspace(sptune_kernel *k, const char *fn, long long *tokens, unsigned long long workspace,
                                   size_t workspace_bytes, sp_api_cut *out);
/* The index of k's argument of that name, or -1. */
int sp_api_arg_named(const sptune_kernel *k, const char *name);
/* A deep copy of k without its loaded module or its dense layer's handle (each copy makes its own). */
sptune_status sp_api_kernel_clone(const sptune_kernel *s, sptune_kernel **out);
/* The in-process memo (api/sp_api_memo.c): the key of a request's answer (the request, the GPU profile it resolved to,
 * the state of the user's database file; NULL: not memoized), a copy of the answer kept under it (1) or none (0),
 * and a copy of k kept under it (the oldest entry goes when full). */
char *sp_api_memo_key(const sptune_kernel_request *req, const sp_gpu_profile *gpu);
int sp_api_memo_find(const char *key, sptune_kernel **out);
void sp_api_memo_add(const char *key, const sptune_kernel *k);

/* The device image of Slot-Filling weights checked against kernel k (op, M, K, the encoding's parameters, the
 * current context); SPTUNE_ERR_INVALID naming the difference (fn: the public function's name). */
sptune_status sp_api_slotfill_weights(const sptune_kernel *k, const sptune_slotfill_gpu *w, const char *fn,
                                      unsigned long long *image);

/* The caller's request as this version's struct: the fields the caller's size covers, the rest 0. */
sptune_status sp_api_request_copy(const sptune_kernel_request *in, sptune_kernel_request *r);

/* Up to max configurations of req->op recorded nearest req->problem that take req->fixed and are valid for the
 * problem, best first (the order sptune_kernel_get considers them in), distinct, as text (each to free). */
sptune_status sp_api_ranked_configs(const sptune_kernel_request *req, int max, char **configs, int *n);

/* Records k's times on the caller's tensors (ms: runs of them, ascending; dense_ms: the dense layer's on the same
 * tensors, <= 0 none) in the user's database (db_path as a request's: NULL the default, "" none) as a result of k's
 * problem with the op's own-data kind (ranges' own), so that the lookup serves it from then on; nothing for an op
 * without such a kind. where: what was recorded ("" nothing). */
sptune_status sp_api_autotune_record(const sptune_kernel *k, const char *db_path, long long tokens, const float *ms,
                                     int runs, double dense_ms, char *where, size_t wlen);

/* Autotuning: runs timed per candidate (after one untimed); the fastest other candidate replaces the kernel served
 * only when, timed against it launch by launch, it is at least SP_AUTOTUNE_MARGIN faster: one round of five runs
 * each, one candidate after another (compiles in between), picked a 3 % slower kernel than the served one (H200,
 * d=4096: docs/journal), which its record would then have served from then on. */
#define SP_AUTOTUNE_RUNS 5
#define SP_AUTOTUNE_MARGIN 0.02
/* How autotuning times a kernel: the median of SP_AUTOTUNE_RUNS launches of k in *ms and every run in t (ascending);
 * with other (not NULL), other's launches alternate with k's and its median and runs go to *other_ms and other_t. */
typedef struct {
    sptune_status (*time)(void *ctx, sptune_kernel *k, double *ms, float *t, sptune_kernel *other, double *other_ms,
                          float *other_t);
    void *ctx;
} sp_autotune_timer;
/* What autotuning chose: best (the caller's to free; the served kernel itself when kept), its median and runs,
 * the dense layer's median (on cuBLAS in the op's place, or hot=8; -1 when not timed), the kernels timed, and the head-to-head's medians (-1 when
 * the served kernel was the fastest from the start). */
typedef struct {
    sptune_kernel *best;
    double best_ms, dense_ms, served_ms, challenger_ms;
    float best_t[SP_AUTOTUNE_RUNS], served_t[SP_AUTOTUNE_RUNS];   /* served_t: the served kernel's first runs */
    int timed, kept;
} sp_autotune_choice;
/* The choice among the kernel served for req (served: timed first, and kept unless beaten head to head) and the
 * candidate configurations (each got with every parameter fixed; those invalid or needing more than
 * workspace_bytes passed over), timed by timer. On failure nothing is kept (served stays the caller's). */
sptune_status sp_api_autotune_choose(const sptune_kernel_request *req, sptune_kernel *served, char *const *configs,
                                     int n, size_t workspace_bytes, const sp_autotune_timer *timer,
                                     sp_autotune_choice *out);

/* The arguments' declared sizes for problem p and configuration cfg: each scalar's at its typical size [0] and at its
 * bound [1] (-1 where none is declared or it does not evaluate), and each pointer's element count with the scalars
 * there (-1 where it needs the data). */
void sp_api_arg_sizes(const sp_template *t, const sp_config *cfg, const sp_problem *p, long long scalar[2][SP_MAX_ARGS],
                      long long elements[2][SP_MAX_ARGS]);

/* Bytes of a workspace part of n elements of argument x (256-byte parts; n < 0: none). */
size_t sp_api_part_size(const kernel_arg *x, long long n);
/* Bytes of workspace argument x in a workspace cut at the bounds or at the typical sizes. */
size_t sp_api_part_bytes(const kernel_arg *x, int at_bound);

#endif
