/* A problem instance on the GPU for one op: random inputs, the reference result, the kernel's
 * arguments, verification and the baseline. Each op with a harness registers an sp_case_ops. */
#ifndef SP_CASE_H
#define SP_CASE_H

#include "sp_bench.h"
#include "sp_rng.h"
#include "sp_launch.h"
#include "sp_template.h"
#include "sp_twell.h"
#include "sp_twell_dist.h"

#include <stdint.h>

typedef struct sp_case_ops {
    const char *op;
    const char *baseline_name;  /* "cuBLAS bf16 GEMM" */
    /* Allocates inputs (random, never zeros), computes the reference. */
    sptune_status (*create)(sp_bench *b, const sp_problem *p, void **state);
    /* The value of the kernel argument called `name` (a template's declared argument: gen/sp_args.h),
     * as cuLaunchKernel takes it (a pointer to the CUdeviceptr or number, valid while state lives);
     * NULL when the harness has none of that name (sp_case_arg_find). */
    void *(*arg)(void *state, const char *name);
    /* Overwrites every output with a poison pattern (NaN) so unwritten elements show. */
    sptune_status (*poison)(void *state, CUstream s);
    /* Compares the output with the reference after a run; *rel_err = ||out-ref|| / ||ref||. */
    sptune_status (*verify)(void *state, double *rel_err, char *detail, size_t detail_len);
    /* Optional: tells the state which configuration runs next (formats whose layout depends on
     * tuning parameters, like TwELL's tile width and slots). */
    sptune_status (*bind)(void *state, const sp_template *t, const sp_config *c);
    /* Optional: enqueued before every launch of a kernel (resetting an allocation counter). */
    sptune_status (*prepare)(void *state, CUstream s);
    /* One run of the baseline on stream s. */
    sptune_status (*baseline)(void *state, CUstream s);
    /* Floating-point operations of one run (for TFLOP/s in tables). */
    double (*flops)(const sp_problem *p);
    /* Optional: bytes the bound configuration must read and write at least (its weights as
     * encoded, inputs, outputs), for GB/s in tables; 0 when unknown. */
    double (*bytes)(void *state);
    void (*destroy)(void *state);
    double tolerance;           /* largest accepted rel_err */
} sp_case_ops;

typedef struct sp_case {
    const sp_case_ops *ops;
    sp_bench *bench;
    sp_problem problem;
    void *state;
    int nargv;                    /* set by sp_case_bind: the template's arguments, in order */
    void *argv[SP_MAX_ARGS];
} sp_case;

/* NULL when the op has no GPU harness yet. */
const sp_case_ops *sp_case_find(const char *op);

sptune_status sp_case_create(sp_bench *b, const char *op, const sp_problem *p, sp_case *c);
void sp_case_destroy(sp_case *c);
/* Poisons the output, launches k once, waits, verifies. SPTUNE_ERR_WRONG_RESULT when the error
 * exceeds the op's tolerance (rel_err still set), SPTUNE_ERR_CUDA when the launch or the kernel
 * failed (the context may then be unusable: a sticky error). */
sptune_status sp_case_check(sp_case *c, const sp_kernel *k, double *rel_err);
/* Before running configuration cfg of t: the argument vector from t's declared arguments (an
 * argument the harness lacks is SPTUNE_ERR_INVALID naming it), then the op's bind hook, if any. */
sptune_status sp_case_bind(sp_case *c, const sp_template *t, const sp_config *cfg);
/* For the harnesses' arg hooks: the value paired with name in a table of n pairs; NULL when
 * name is not among them. */
typedef struct sp_case_named {
    const char *name;
    void *value;
} sp_case_named;
void *sp_case_arg_find(const char *name, const sp_case_named *table, size_t n);
/* A positive integer dimension of a problem: 1 and *out set, or 0 when absent or not one. */
int sp_problem_int(const sp_problem *p, const char *name, int *out);
/* Compares a bf16 output (n elements, rows of ncols) with an fp32 reference (relu'd first when
 * relu_ref): *rel_err = ||out - ref|| / ||ref||; every element must also lie within bf16 rounding
 * (2^-7 |ref| + 1e-3 rms(ref)); NaN/Inf (the poison) never passes. Failures set *rel_err >= 1
 * and describe the first bad element in detail. */
void sp_compare_bf16(const uint16_t *out, const float *ref, size_t n, size_t ncols, int relu_ref,
                     double *rel_err, char *detail, size_t len);
/* The same for bf16 (f16 == 0) or fp16 outputs. */
void sp_compare_half(const uint16_t *out, int f16, const float *ref, size_t n, size_t ncols, int relu_ref,
                     double *rel_err, char *detail, size_t len);
/* The harnesses' shared steps. sp_poison_bf16: bf16 NaN over n elements at out (what a kernel
 * that skips an element leaves behind). sp_verify_bf16: the bf16 output (rows x cols, device)
 * copied into host and compared with ref as sp_compare_bf16 does. sp_fetch_f32: waits for s,
 * then copies n fp32 from the device (a reference computed there). sp_problem_flops: factor *
 * a * b * c of the problem's dimensions a, b, c (0 when one is missing). */
sptune_status sp_poison_bf16(CUdeviceptr out, size_t n, CUstream s);
sptune_status sp_verify_bf16(CUdeviceptr out, uint16_t *host, const float *ref, size_t rows, size_t cols,
                             double *rel_err, char *detail, size_t len);
/* sp_verify_bf16 with a further allowance per element (allow[i] >= 0, added to its bound; NULL: none):
 * an op whose contract lets it round an intermediate (twell-ffn stores its gates as bf16, and its hot
 * slice and dense path round h to bf16 as the dense bf16 layer does) states that rounding's error there. */
sptune_status sp_verify_bf16_allow(CUdeviceptr out, uint16_t *host, const float *ref, const float *allow, size_t rows,
                                   size_t cols, double *rel_err, char *detail, size_t len);
sptune_status sp_fetch_f32(CUstream s, CUdeviceptr dev, float *host, size_t n);
double sp_problem_flops(const sp_problem *p, double factor, const char *a, const char *b, const char *c);
/* Spot-checks an fp32 reference C (rows x cols) of C = A * op(B) against fp64 dot products at
 * `samples` spread-out entries: A is rows x k; B is cols x k (b_kmajor) or k x cols. */
sptune_status sp_check_reference(const float *ref, size_t rows, size_t cols, size_t k, const uint16_t *A,
                                 const uint16_t *B, int b_kmajor, int samples);
/* The same for bf16 (f16 == 0) or fp16 A and B. */
sptune_status sp_check_reference_half(const float *ref, size_t rows, size_t cols, size_t k, const uint16_t *A,
                                      const uint16_t *B, int b_kmajor, int samples, int f16);
sptune_status sp_case_time(sp_case *c, const sp_kernel *k, sp_timing *t);
sptune_status sp_case_time_baseline(sp_case *c, sp_timing *t);
double sp_case_flops(const sp_case *c);
double sp_case_bytes(const sp_case *c); /* 0 when the op does not say */

/* H (sh->rows x sh->cols bf16) packed by the reference packer (runtime/sp_twell.h), its pool sized
 * by a first pass, into device buffers allocated here (the pool at least one word); the consumers'
 * input. The host copies are not kept. */
sptune_status sp_twell_upload_packed(sp_bench *b, const sp_twell_shape *sh, const unsigned short *H,
                                     CUdeviceptr *packed, CUdeviceptr *pool);
/* The TwELL producer's output buffers (twell-d2t and twell-ffn): packed words for the worst case
 * of the producer's space (tile 64, 63 slots: one word per element), a pool of half the elements
 * (or pool_words when larger), and the pool's 64-bit allocation counter. */
typedef struct sp_twell_out {
    CUdeviceptr packed, pool, counter;
    unsigned long long capacity;   /* pool words (a kernel argument) */
    unsigned long long allocated;  /* pool words allocated */
    size_t packed_cap;             /* packed words allocated */
    int tile, slots;               /* of the configuration bound last */
} sp_twell_out;
sptune_status sp_twell_out_alloc(sp_bench *b, int M, int F, long long pool_words, sp_twell_out *o);
/* The pool capacity passed to the kernels: mode -1 the template's typical size for configuration c
 * (bound before), -2 exactly what gate G (M x F bf16) needs with its tile and slots from neuron
 * `first` on (twell-ffn's hot slice before it is not packed), n >= 0 n words; never more than allocated. */
sptune_status sp_twell_out_capacity(sp_twell_out *o, const unsigned short *G, int M, int F, int first, long long mode,
                                    const sp_template *t, const sp_config *c, const sp_problem *p);
void sp_twell_out_free(sp_twell_out *o);
/* Takes tile (bn) and slots from configuration c; refuses those that need more than allocated. */
sptune_status sp_twell_out_bind(sp_twell_out *o, const char *op, int M, int F, const sp_template *t,
                                const sp_config *c);
/* The counter to zero, before each run (the caller's duty, as for an application). */
sptune_status sp_twell_out_reset(const sp_twell_out *o, CUstream s);
/* Packed words and pool overwritten with a poison pattern. */
sptune_status sp_twell_out_poison(const sp_twell_out *o, CUstream s);
/* The pool words the last run took (*used); *fits = 0, with the numbers in detail, when the pool
 * was too small (the output is then incomplete). */
sptune_status sp_twell_out_used(const sp_twell_out *o, unsigned long long *used, int *fits, char *detail, size_t len);

extern const sp_case_ops sp_case_gemm;
extern const sp_case_ops sp_case_twell_d2t;
extern const sp_case_ops sp_case_twell_t2d;
extern const sp_case_ops sp_case_twell_gated;
extern const sp_case_ops sp_case_twell_ffn;
extern const sp_case_ops sp_case_slotfill_spmm;

#endif
